package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/pickergpu/picker/pricing"
)

// checkOutPath lets --out name a regular file or a new path only. The atomic write
// renames a temporary file over the path, which would replace a device node (as root,
// /dev/full became a regular file), a named pipe a reader waits on, or a symlink (the
// link, not its target, would be replaced); those are refused by name instead.
func checkOutPath(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %s: %w", path, err)
	case fi.Mode().IsRegular():
		return nil
	}
	kind := "a special file"
	switch m := fi.Mode(); {
	case m.IsDir():
		kind = "a directory"
	case m&os.ModeSymlink != 0:
		kind = "a symbolic link"
	case m&os.ModeNamedPipe != 0:
		kind = "a named pipe"
	case m&os.ModeDevice != 0:
		kind = "a device"
	case m&os.ModeSocket != 0:
		kind = "a socket"
	}
	return pricing.ParamErrorf(pricing.Invalid, "out", "--out %s: is %s; write to a regular file or a new path", path, kind)
}
