//go:build linux

package store

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// smallDisk mounts a tmpfs of size (root only) and returns its path, or skips.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// fill writes a file until the filesystem of dir has no space left.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}

// TestReadsOnAFullDisk: with the database's disk 100% full, a closed database opens
// and its offers read (a write fails saying the disk is full) (issue 30: every command
// failed to open it, "disk I/O error", and the daemon refused to start).
func TestReadsOnAFullDisk(t *testing.T) {
	dir := smallDisk(t, "2m")
	path := filepath.Join(dir, "p.db")
	ctx := context.Background()
	oneOfferDB(t, path)
	for _, f := range []string{path + "-wal", path + "-shm"} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("%s left after close", f)
		}
	}
	fill(t, dir)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("open on a full disk: %v", err)
	}
	defer s.Close()
	offers, err := s.Offers(ctx, Query{})
	if err != nil || len(offers) != 1 {
		t.Fatalf("read on a full disk: %d offers, %v", len(offers), err)
	}
	_, err = s.WriteSnapshot(ctx, "lambda", WriteInput{Offers: observed(at(2), mk("lambda", "r", "b", pricing.OnDemand, 2))})
	if err == nil || pricing.ErrorCode(err) != pricing.Unavailable || !strings.Contains(err.Error(), "full") {
		t.Errorf("write on a full disk: %v; want an Unavailable error saying the disk is full", err)
	}
}

// TestFullTempDirNamed: SQLITE_FULL from a full temporary directory (where SQLite
// sorts) names that directory, not the database's disk, which has room (issue 30: "database
// or disk is full" on a disk with 76 GB free).
func TestFullTempDirNamed(t *testing.T) {
	tmp := smallDisk(t, "64k")
	fill(t, tmp)
	t.Setenv("SQLITE_TMPDIR", tmp)
	s := openTest(t)
	err := s.fullError("query offers", errFull)
	if err == nil || !strings.Contains(err.Error(), "temporary directory "+tmp+" is full") {
		t.Errorf("message %v; want the temporary directory named", err)
	}
}

var errFull = &fullErr{}

type fullErr struct{}

func (*fullErr) Error() string { return "database or disk is full (13)" }
