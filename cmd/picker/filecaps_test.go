//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestModelPathSpecialFiles: estimate --model on a device or a FIFO is a usage error
// at once (issue 30: /dev/zero passed 3.3 GiB RSS in seconds; a FIFO blocked for ever,
// ignoring SIGINT and SIGTERM); so is PICKER_CONFIG=/dev/zero.
func TestModelPathSpecialFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "config.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "p.db")
	for _, tt := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"estimate", "--model", "/dev/zero"}, "not a regular file (a device)"},
		{nil, []string{"estimate", "--model", fifo}, "not a regular file (a named pipe)"},
		{map[string]string{"PICKER_CONFIG": "/dev/zero"}, []string{"offers"}, "not a regular file (a device)"},
	} {
		done := make(chan result, 1)
		go func() { done <- runCLIEnv(t, tt.env, append([]string{"--db", db}, tt.args...)...) }()
		select {
		case r := <-done:
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("%v %v: exit %d, %s; want exit 2 and %q", tt.env, tt.args, r.code, r.stderr, tt.want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%v %v did not return", tt.env, tt.args)
		}
	}
}
