//go:build !unix

package store

// freeBytes is not known here; messages then say only what SQLite said.
func freeBytes(string) (uint64, bool) { return 0, false }
