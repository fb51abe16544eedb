//go:build unix

package fetchproc

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ownGroup starts cmd in a process group of its own and makes its cancellation stop the
// whole group: SIGTERM at once, SIGKILL after waitDelay, and then a read deadline on
// stdout. A picker-fetch behind a wrapper script that does not exec, or one that forks
// a helper, leaves a grandchild holding the pipe; signalling only the child left refresh
// blocked on the read past its timeout and the orphan alive past the daemon (issue 30).
// The deadline covers a grandchild that left the group (setsid).
func ownGroup(cmd *exec.Cmd, stdout *os.File) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		err := syscall.Kill(-pgid, syscall.SIGTERM)
		time.AfterFunc(waitDelay, func() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			_ = stdout.SetReadDeadline(time.Now())
		})
		return err
	}
}
