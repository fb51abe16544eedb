//go:build unix

package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// readOnlyProbe opens path, reads its current offers and tries a write; it reports
// "offers=N write=CODE" or the open error.
func readOnlyProbe(path string) string {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		return "open: " + err.Error()
	}
	defer s.Close()
	offers, err := s.Offers(ctx, Query{})
	if err != nil {
		return "read: " + err.Error()
	}
	// The shape read's snapshot (a read-only transaction, readtx.go) on this open.
	s.UseImage(false)
	all := func(cheapest []pricing.Offer, _ [][]pricing.Offer, _ []bool) ([]ShapeNeed, error) {
		needs := make([]ShapeNeed, len(cheapest))
		for i := range needs {
			needs[i].Limit = 1 << 20
		}
		return needs, nil
	}
	if shaped, err := s.ReadShapes(ctx, Query{}, all); err != nil || len(shaped) != len(offers) {
		return fmt.Sprintf("read shapes: %d offers, %v; Offers read %d", len(shaped), err, len(offers))
	}
	_, werr := s.WriteSnapshot(ctx, "lambda", WriteInput{Offers: observed(at(9), mk("lambda", "r", "b", pricing.OnDemand, 2))})
	return fmt.Sprintf("offers=%d write=%v", len(offers), pricing.ErrorCode(werr))
}

func TestReadOnlyHelper(t *testing.T) {
	if p := os.Getenv("PICKER_RO_DB"); p != "" {
		fmt.Print(readOnlyProbe(p))
	}
}

// Issue 18, case 11: a database this process cannot write (file 0444 in a 0555
// directory) is opened read-only: reads work, a write fails as Unavailable. It used to
// fail to open ("attempt to write a readonly database"). As root, permissions do not
// bind, so the probe runs as nobody in a child process.
func TestReadOnlyDatabaseIsReadable(t *testing.T) {
	dir, err := os.MkdirTemp("", "picker-ro-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { os.Chmod(dir, 0o755); os.RemoveAll(dir) }()
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "p.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteSnapshot(context.Background(), "lambda", WriteInput{Offers: observed(at(1), mk("lambda", "r", "a", pricing.OnDemand, 1))}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var got string
	if os.Getuid() == 0 {
		bin := filepath.Join(dir, "store.test")
		copyExe(t, os.Args[0], bin)
		os.Chmod(path, 0o444)
		os.Chmod(dir, 0o555)
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
		os.Chmod(dir, 0o555)
		got = readOnlyProbe(path)
	}
	if want := "offers=1 write=" + fmt.Sprint(pricing.Unavailable); got != want {
		t.Errorf("read-only database: %q; want %q", got, want)
	}
}

func copyExe(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	out.Close()
}
