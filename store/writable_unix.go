//go:build unix

package store

import (
	"path/filepath"

	sysunix "golang.org/x/sys/unix"
)

// writable reports whether the file and its directory can be written (SQLite needs the
// directory for its WAL and shared-memory files), as this process's effective user:
// faccessat(2) with AT_EACCESS also reports a read-only mount (EROFS). It is asked on
// every open, so it creates nothing (the portable probe, writable_other.go, creates and
// removes a file).
func writable(path string) bool {
	ok := func(p string) bool {
		return sysunix.Faccessat(sysunix.AT_FDCWD, p, sysunix.W_OK, sysunix.AT_EACCESS) == nil
	}
	return ok(path) && ok(filepath.Dir(path))
}
