//go:build unix

package static

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 18, case 7: a FIFO in files hung `picker refresh` past its timeout and four
// signals (opening a FIFO blocks until a writer comes). It is refused at once, naming
// the file.
func TestFetchRefusesFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "prices.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	p := New(Config{Files: []string{fifo}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := p.Fetch(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Fetch error %v, want the FIFO refused by name", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Fetch on a FIFO still blocked 3 s past its context's deadline")
	}
}

// A directory (or device) named in files is refused the same way.
func TestFetchRefusesDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := New(Config{Files: []string{dir}}).Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "a directory") {
		t.Errorf("Fetch error %v, want the directory refused", err)
	}
	_, err = New(Config{Files: []string{"/dev/zero"}}).Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "a device") {
		t.Errorf("Fetch of /dev/zero: %v, want the device refused", err)
	}
}

// Issue 18, case 6: a row with gpu_mem_gib = inf made every /v1/recommend a 500. It is
// dropped at Finalize with a warning naming the offer; the file's other rows land.
func TestInfiniteMemoryRowDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.toml")
	src := "[[offers]]\nregion = \"lab\"\ninstance_type = \"good-box\"\ngpu_model = \"A100-80GB\"\ngpu_count = 8\nprice_usd_hr = 12.5\n" +
		"[[offers]]\nregion = \"lab\"\ninstance_type = \"inf-box\"\ngpu_model = \"A100-80GB\"\ngpu_count = 8\ngpu_mem_gib = inf\nprice_usd_hr = 12.5\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := New(Config{Files: []string{path}}).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Offers) != 1 || snap.Offers[0].InstanceType != "good-box" {
		t.Errorf("offers %+v; want good-box only", snap.Offers)
	}
	if !strings.Contains(strings.Join(snap.Warnings, "\n"), "inf-box") {
		t.Errorf("warnings %q do not name inf-box", snap.Warnings)
	}
}
