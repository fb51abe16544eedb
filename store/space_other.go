//go:build !unix

package store

// freeBytes is not known here; messages then say only what SQLite said.
func freeBytes(string) (uint64, bool) { return 0, false }

// searchableDir is not known here; a directory is taken as SQLite would try it.
func searchableDir(string) bool { return true }
