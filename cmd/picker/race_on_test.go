//go:build race

package main

// raceSlowdown scales time bounds in tests that do real work: the race detector makes
// the SQLite driver (pure Go) 10-20x slower, and a 2-core machine shares that with the
// test's readers.
const raceSlowdown = 10
