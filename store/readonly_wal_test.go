//go:build unix

package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// TestReadOnlyReaderSeesTheWAL: a reader that cannot write the database reads the
// commits a running writer holds in its WAL, not the stale main file (issue 30: it
// opened with immutable=1, ignored the WAL, read stale prices and, once the writer
// checkpointed, torn pages). As root, permissions do not bind, so the reader runs as
// nobody in a child process, as in TestReadOnlyDatabaseIsReadable.
func TestReadOnlyReaderSeesTheWAL(t *testing.T) {
	dir, err := os.MkdirTemp("", "picker-rowal-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { os.Chmod(dir, 0o755); os.RemoveAll(dir) }()
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "p.db")
	ctx := context.Background()
	oneOfferDB(t, path) // closed, so checkpointed: the main file holds one offer
	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.db.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
		t.Fatal(err)
	}
	// The writer, still open, commits two more offers: they sit in its WAL.
	if _, err := w.WriteSnapshot(ctx, "lambda", WriteInput{Offers: observed(at(2), mk("lambda", "r", "a", pricing.OnDemand, 1),
		mk("lambda", "r", "b", pricing.OnDemand, 2), mk("lambda", "r", "c", pricing.OnDemand, 3))}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "store.test")
	if os.Getuid() == 0 {
		copyExe(t, os.Args[0], bin)
	}
	os.Chmod(dir, 0o555)
	var got string
	if os.Getuid() == 0 {
		cmd := exec.Command(bin, "-test.run=^TestReadOnlyHelper$")
		cmd.Env = append(os.Environ(), "PICKER_RO_DB="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.Output()
		if err != nil {
			t.Skipf("cannot run as nobody: %v", err)
		}
		got = strings.TrimSuffix(strings.SplitN(string(out), "\n", 2)[0], "PASS")
	} else {
		os.Chmod(path, 0o444)
		got = readOnlyProbe(path)
	}
	if want := "offers=3 write=" + fmt.Sprint(pricing.Unavailable); got != want {
		t.Errorf("a read-only reader beside a writer: %q; want %q (the WAL's commits)", got, want)
	}
}

// oneOfferDB creates the database at path holding one lambda offer, and closes it.
func oneOfferDB(t *testing.T, path string) {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteSnapshot(context.Background(), "lambda", WriteInput{Offers: observed(at(1), mk("lambda", "r", "a", pricing.OnDemand, 1))}); err != nil {
		t.Fatal(err)
	}
	s.Close()
}
