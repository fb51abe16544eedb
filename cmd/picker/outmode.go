package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/pickergpu/picker/pricing"
)

// outFileMode is the mode an --out file gets: an existing file keeps its own, a new one
// gets what os.Create would give (0666 less the umask), not CreateTemp's 0600. A
// directory is refused by name.
func outFileMode(path string) (os.FileMode, error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return 0, pricing.ParamErrorf(pricing.Invalid, "out", "--out %s: is a directory; give a file name", path)
	case err == nil:
		return fi.Mode().Perm(), nil
	case !errors.Is(err, fs.ErrNotExist):
		return 0, fmt.Errorf("--out %s: %w", path, err)
	}
	um := syscall.Umask(0)
	syscall.Umask(um)
	return 0o666 &^ os.FileMode(um), nil
}
