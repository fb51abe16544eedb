// Package regfile reads a small file that must be a regular file: a FIFO, a device, a
// socket or a directory is refused before it is opened (opening a FIFO blocks until a
// writer appears, past SIGINT and SIGTERM; /dev/zero never ends), and the read stops at
// a cap, so a path given by a user or an environment variable cannot hang picker or
// exhaust its memory (issue 30: PICKER_CONFIG=/dev/zero reached 24 GiB RSS; estimate
// --model on a FIFO blocked for ever).
package regfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is the error (wrapped) for a file past the cap.
var ErrTooLarge = errors.New("too large")

// Read returns the bytes of path, a regular file of at most max bytes. The error names
// the path and says what the file is when it is not regular; a missing file's error
// satisfies errors.Is(err, os.ErrNotExist).
func Read(path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, Kind(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() { // swapped between the checks
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, Kind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, larger than the %d KiB cap: %w", path, fi.Size(), max>>10, ErrTooLarge)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max { // grew while read
		return nil, fmt.Errorf("%s: larger than the %d KiB cap: %w", path, max>>10, ErrTooLarge)
	}
	return b, nil
}

// Kind names a file mode that is not a regular file, for a message.
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}
