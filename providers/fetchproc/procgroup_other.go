//go:build !unix

package fetchproc

import (
	"os"
	"os/exec"
	"time"
)

// ownGroup, where there are no process groups, stops the child and sets a read
// deadline on its stdout after waitDelay, so a grandchild holding the pipe cannot
// block the refresh past its timeout.
func ownGroup(cmd *exec.Cmd, stdout *os.File) {
	cmd.Cancel = func() error {
		time.AfterFunc(waitDelay, func() { _ = stdout.SetReadDeadline(time.Now()) })
		return cmd.Process.Kill()
	}
}
