package main

import (
	"io"
	"log/slog"
	"runtime/debug"
	"testing"
)

// The daemon raises GOGC and sets a soft memory limit unless the environment set them.
func TestDaemonTunesGC(t *testing.T) {
	prevGC := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(prevGC); debug.SetMemoryLimit(prevLimit) })
	for _, tc := range []struct {
		name      string
		env       map[string]string
		wantGC    int
		wantLimit int64
	}{
		{"unset", nil, daemonGOGC, daemonMemLimit},
		{"GOGC set", map[string]string{"GOGC": "100"}, 100, daemonMemLimit},
		{"both set", map[string]string{"GOGC": "100", "GOMEMLIMIT": "512MiB"}, 100, 512 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(512 << 20) // as the runtime would have read GOMEMLIMIT
			a := &app{m: Main{Getenv: func(k string) string { return tc.env[k] }}}
			a.tuneDaemonGC(slog.New(slog.NewTextHandler(io.Discard, nil)))
			if got := debug.SetGCPercent(100); got != tc.wantGC {
				t.Errorf("GOGC %d, want %d", got, tc.wantGC)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
				t.Errorf("memory limit %d, want %d", got, tc.wantLimit)
			}
		})
	}
}
