//go:build !unix

package store

import "time"

// processCPU: not measured here (see cputime_unix_test.go).
func processCPU() (time.Duration, bool) { return 0, false }
