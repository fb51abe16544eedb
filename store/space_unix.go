//go:build unix

package store

import sysunix "golang.org/x/sys/unix"

// freeBytes is the space an unprivileged process can still write under dir.
func freeBytes(dir string) (uint64, bool) {
	var st sysunix.Statfs_t
	if err := sysunix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}

// searchableDir reports whether this process can create files in dir (W_OK|X_OK), the
// test SQLite's unixTempFileDir makes of a temporary directory.
func searchableDir(dir string) bool {
	return sysunix.Access(dir, sysunix.W_OK|sysunix.X_OK) == nil
}
