//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 18, case 10: export --out renamed over device nodes, pipes and symlinks. Each
// is refused naming what it is and left as it was; a regular file or a new path works.
func TestExportOutRefusesSpecialFiles(t *testing.T) {
	db := tempDB(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "target.csv")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tt := range []struct{ path, kind string }{
		{link, "symbolic link"},
		{fifo, "named pipe"},
		{dir, "directory"},
		{"/dev/null", "device"},
	} {
		before, _ := os.Lstat(tt.path)
		r := runCLI(t, db, false, "export", "--gpu-model", "H100", "--out", tt.path)
		if r.code != 2 || !strings.Contains(r.stderr, tt.kind) || !strings.Contains(r.stderr, tt.path) {
			t.Errorf("--out %s: exit %d %q; want 2 naming a %s", tt.path, r.code, r.stderr, tt.kind)
		}
		after, err := os.Lstat(tt.path)
		if err != nil || after.Mode() != before.Mode() {
			t.Errorf("--out %s: changed from %v to %v", tt.path, before.Mode(), after.Mode())
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	for _, p := range []string{target, filepath.Join(dir, "new.csv")} {
		if r := runCLI(t, db, false, "export", "--gpu-model", "H100", "--out", p); r.code != 0 {
			t.Errorf("--out %s: exit %d %s", p, r.code, r.stderr)
		}
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() || fi.Size() < 100 {
			t.Errorf("--out %s: %v %v", p, fi, err)
		}
	}
}
