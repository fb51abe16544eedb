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
