//go:build !unix

package store

import (
	"os"
	"path/filepath"
)

// writable reports whether the file and its directory can be written (SQLite needs the
// directory for its WAL and shared-memory files).
func writable(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	probe, err := os.CreateTemp(filepath.Dir(path), ".picker-probe-*")
	if err != nil {
		return false
	}
	probe.Close()
	os.Remove(probe.Name())
	return true
}
