//go:build unix

package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDaemonSIGHUPIgnored: SIGHUP neither kills the daemon nor stops it; it logs that
// the config is not reloaded, the API keeps answering, and SIGTERM still shuts it down
// gracefully (issue 30: SIGHUP killed it at once, with no log line).
func TestDaemonSIGHUPIgnored(t *testing.T) {
	cmd, url, logs, exit := daemonChild(t, "500ms")
	cmd.Process.Signal(syscall.SIGHUP)
	select {
	case code := <-exit:
		t.Fatalf("exited %d on SIGHUP\n%s", code, logs)
	case <-time.After(500 * time.Millisecond):
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "SIGHUP received and ignored") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line for SIGHUP:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := get(t, url+"/healthz"); code != 200 {
		t.Errorf("/healthz = %d after SIGHUP", code)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, exit, 10*time.Second, logs); code != 0 {
		t.Errorf("exit %d after SIGTERM; want 0\n%s", code, logs)
	}
}
