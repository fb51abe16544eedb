//go:build unix

package fetchproc

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// scriptProvider returns the aws provider whose picker-fetch is the script body.
func scriptProvider(t *testing.T, body string) *Provider {
	t.Helper()
	path := script(t, body)
	p, err := New("aws", fakeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Configure(Settings{Getenv: func(k string) string { return map[string]string{EnvPath: path}[k] }, Stderr: &safeBuffer{}}); err != nil {
		t.Fatal(err)
	}
	return p
}

// frames writes the frame stream fs to a file a script can cat.
func frames(t *testing.T, fs ...frame) string {
	t.Helper()
	var b bytes.Buffer
	fw := newFrameWriter(&b)
	for _, f := range fs {
		if err := fw.write(f); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "frames")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPartCountBounded: a part whose header claims more offers than its bytes can hold
// is refused before the decoder allocates (issue 30: a 10 MB frame claiming 10M offers
// cost 1.9 GiB), and so is one past the hard cap.
func TestPartCountBounded(t *testing.T) {
	payload := binary.AppendUvarint(nil, 1<<20)
	payload = append(payload, make([]byte, 4<<20)...) // 4 MiB: four bytes an "offer"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fr := newFrameReader(bytes.NewReader(append(binary.AppendUvarint([]byte{kindPart}, uint64(len(payload))), payload...)))
	_, err := fr.read()
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "offers in") {
		t.Errorf("error %v; want the count refused against the bytes", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("reading a lying 4 MiB frame allocated %d MiB", grew>>20)
	}

	defer func(old uint64) { maxPartOffers = old }(maxPartOffers)
	maxPartOffers = 10
	for n, ok := range map[int]bool{10: true, 11: false} {
		p := pricing.AppendOffers(nil, fakeOffers(0, n))
		fr := newFrameReader(bytes.NewReader(append(binary.AppendUvarint([]byte{kindPart}, uint64(len(p))), p...)))
		f, err := fr.read()
		if ok && (err != nil || len(f.Offers) != n) {
			t.Errorf("%d offers under a cap of 10: %d, %v", n, len(f.Offers), err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "over the cap of 10")) {
			t.Errorf("%d offers under a cap of 10: error %v", n, err)
		}
	}
}

// TestChildOffersRechecked: offers from picker-fetch pass the plausibility bounds again
// in picker; an Inf memory is dropped with a warning, the rest kept (issue 30: it was
// stored and recommend was a 500).
func TestChildOffersRechecked(t *testing.T) {
	offers := fakeOffers(0, 3)
	offers[1].GPUMemGiB = math.Inf(1)
	path := frames(t, frame{Offers: offers}, frame{Summary: &summary{Regions: []string{"r1"}}})
	p := scriptProvider(t, "cat >/dev/null; cat "+path)
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Offers) != 2 || snap.Offers[0].InstanceType != offers[0].InstanceType || snap.Offers[1].InstanceType != offers[2].InstanceType {
		t.Errorf("kept %d offers %+v; want the two finite ones", len(snap.Offers), snap.Offers)
	}
	if w := strings.Join(snap.Warnings, "\n"); !strings.Contains(w, offers[1].InstanceType) || !strings.Contains(w, "gpu memory") {
		t.Errorf("warnings %q do not name the dropped offer", w)
	}
}

// TestGrandchildHoldingStdout: a picker-fetch that leaves a grandchild holding its
// stdout (a wrapper that does not exec) cannot make the refresh outlive its timeout:
// the child runs in its own process group, the group is signalled, and the read has a
// deadline (issue 30: SIGTERM reached only the child and the read never ended).
func TestGrandchildHoldingStdout(t *testing.T) {
	for _, tt := range []struct {
		name, grandchild string
	}{
		// sh waits on sleep; SIGTERM kills sh, and sleep kept the pipe.
		{"no exec", "sleep 300 & echo $! >PIDFILE; wait"},
		// a helper that ignores SIGTERM: the group's SIGKILL after waitDelay.
		{"ignores term", "sh -c 'trap \"\" TERM; echo $$ >PIDFILE; sleep 300; :' & wait"},
		// a helper that left the group: only the read deadline ends the wait.
		{"own session", "setsid sh -c 'echo $$ >PIDFILE; exec sleep 300' & wait"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name != "no exec" && testing.Short() {
				t.Skip("waits waitDelay")
			}
			if tt.name == "own session" {
				if _, err := os.Stat("/usr/bin/setsid"); err != nil {
					t.Skip("no setsid")
				}
			}
			pidfile := filepath.Join(t.TempDir(), "pid")
			p := scriptProvider(t, "cat >/dev/null; "+strings.ReplaceAll(tt.grandchild, "PIDFILE", pidfile))
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := p.Fetch(ctx)
				done <- err
			}()
			var gpid int
			defer func() {
				if gpid > 0 {
					_ = syscall.Kill(gpid, syscall.SIGKILL)
				}
			}()
			waitFor(t, "the grandchild's pid", func() bool {
				b, err := os.ReadFile(pidfile)
				gpid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				return err == nil && gpid > 0
			})
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
					t.Errorf("error %v; want the timeout", err)
				}
			case <-time.After(2*waitDelay + 10*time.Second):
				t.Fatal("Fetch did not return after its timeout")
			}
			if tt.name != "own session" {
				waitFor(t, "the grandchild to be gone", func() bool {
					err := syscall.Kill(gpid, 0)
					return err != nil || zombie(gpid)
				})
			}
		})
	}
}

// zombie reports whether pid has exited and waits for its (init) parent to reap it.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}
