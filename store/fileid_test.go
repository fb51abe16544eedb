package store

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestPingNoticesAFileChangedUnderIt: a database file overwritten in place (its header
// no longer picker's) or replaced by another file fails Ping at once, so /healthz stops
// saying "ok" before the next refresh's quick check (issue 30).
func TestPingNoticesAFileChangedUnderIt(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, path string)
		want   string
	}{
		{"overwritten", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt(make([]byte, 100), 0)
			f.Close()
		}, "overwritten while open"},
		{"replaced", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			os.WriteFile(path+".new", b, 0o644)
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		}, "replaced by another file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t)
			if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				t.Fatal(err)
			}
			if err := s.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			tt.change(t, s.Path())
			if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Ping after the file was %s: %v; want %q", tt.name, err, tt.want)
			}
		})
	}
}
