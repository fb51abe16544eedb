//go:build !race

package main

// raceSlowdown scales time bounds in tests that do real work (race_on_test.go).
const raceSlowdown = 1
