//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/refresh"
	"github.com/pickergpu/picker/store"
)

// TestHelperProcess is the child side of the tests that signal or kill a process:
// the test binary re-executed with PICKER_TEST_HELPER set. It does nothing in a
// normal test run.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv("PICKER_TEST_HELPER") {
	case "":
		return
	case "daemon":
		// main(), with the arguments from the environment; PICKER_TEST_STUCK makes every
		// provider's fetch block, ignoring cancellation, as a stuck adapter would.
		if os.Getenv("PICKER_TEST_STUCK") != "" {
			newProvider = func(providers.Descriptor, any) (providers.Provider, error) {
				return stuckProvider{}, nil
			}
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		args := strings.Split(os.Getenv("PICKER_TEST_ARGS"), "\x1f")
		code := Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Args: args, Getenv: os.Getenv}.Run(ctx)
		stop()
		os.Exit(code)
	case "write":
		// A refresh of a large snapshot; "begin" is printed when the fetch is done and
		// the store write starts, "done" when it has committed.
		n, _ := strconv.Atoi(os.Getenv("PICKER_TEST_N"))
		st, err := store.Open(context.Background(), os.Getenv("PICKER_TEST_DB"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		gen := &genProvider{n: n, now: time.Now, price: bulkPrice, fetched: func() { fmt.Println("begin") }}
		gen.version.Store(2)
		r := refresh.Run(context.Background(), st, refresh.Job{Name: "static", Provider: gen}, nil)
		if r.Err != nil {
			fmt.Fprintln(os.Stderr, r.Err)
			os.Exit(1)
		}
		fmt.Println("done")
		os.Exit(0)
	}
}

// bulkPrice changes every bulk price between versions, so a refresh rewrites all.
func bulkPrice(i int, v int64) float64 { return float64(v) + float64(i%997)/1000 }

func helper(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), append([]string{"PICKER_TEST_HELPER=" + mode}, env...)...)
	return cmd
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A refresh killed (SIGKILL) in the middle of its write leaves the database
// consistent and the previous snapshot current.
func TestRefreshKilledMidWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a large snapshot several times")
	}
	const n = 20000
	ctx := context.Background()
	dir := t.TempDir()
	base := filepath.Join(dir, "base.db")
	st, err := store.Open(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	gen := &genProvider{n: n, now: time.Now, price: bulkPrice}
	gen.version.Store(1)
	if r := refresh.Run(ctx, st, refresh.Job{Name: "static", Provider: gen}, nil); r.Err != nil {
		t.Fatal(r.Err)
	}
	st.Close() // checkpoints the WAL into base.db
	if _, err := os.Stat(base + "-wal"); err == nil {
		t.Fatal("base.db still has a WAL after Close")
	}

	// run starts a child writing version 2 over a copy of base. With killAt > 0 it is
	// killed as soon as the WAL holds killAt bytes (the write transaction's pages
	// spilled there, not yet committed; the write may commit first); it returns how long
	// the write ran, whether the child had said "done", and the WAL size at the kill.
	run := func(db string, killAt int64) (ran time.Duration, done bool, wal int64) {
		t.Helper()
		copyFile(t, base, db)
		cmd := helper(t, "write", "PICKER_TEST_DB="+db, "PICKER_TEST_N="+strconv.Itoa(n))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 2)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		if l := <-lines; l != "begin" {
			cmd.Wait()
			t.Fatalf("child said %q; want begin", l)
		}
		t0 := time.Now()
		if killAt > 0 {
			for time.Since(t0) < time.Minute {
				if fi, err := os.Stat(db + "-wal"); err == nil && fi.Size() >= killAt {
					wal = fi.Size()
					break
				}
				if cmd.ProcessState != nil {
					break
				}
				time.Sleep(200 * time.Microsecond)
			}
			cmd.Process.Signal(syscall.SIGKILL)
		}
		for l := range lines {
			done = done || l == "done"
		}
		err = cmd.Wait()
		ran = time.Since(t0)
		if killAt == 0 && (err != nil || !done) {
			t.Fatalf("calibration write failed: %v", err)
		}
		return ran, done, wal
	}
	full, _, _ := run(filepath.Join(dir, "calibrate.db"), 0)
	t.Logf("a full write of %d offers takes %v", n+2, full)

	// Kill points by WAL size: the first spilled page, then deeper into the write (a
	// 20k-offer rewrite leaves a few MiB of WAL). Opening writes nothing, so every WAL
	// byte at a kill is the interrupted transaction's.
	midWrite := 0
	for i, at := range []int64{1, 16 << 10, 128 << 10, 512 << 10, 1 << 20, 2 << 20} {
		db := filepath.Join(dir, fmt.Sprintf("kill%d.db", i))
		_, done, wal := run(db, at)
		st, err := store.Open(ctx, db)
		if err != nil {
			t.Fatalf("kill at WAL %d B: reopen: %v", at, err)
		}
		if err := st.IntegrityCheck(ctx); err != nil {
			t.Errorf("kill at WAL %d B: %v", at, err)
		}
		offers, err := st.Offers(ctx, store.Query{Providers: []string{"static"}, Regions: []string{"marker-a", "marker-z"}})
		if err != nil || len(offers) != 2 || offers[0].PriceUSDHr != offers[1].PriceUSDHr {
			t.Fatalf("kill at WAL %d B: markers %v, %v; want both, at one version", at, offers, err)
		}
		c, _ := st.Counts(ctx)
		st.Close()
		v := int64(offers[0].PriceUSDHr)
		switch {
		case v == 1 && !done:
			if wal > 0 { // the transaction's pages were in the WAL, uncommitted
				midWrite++
			}
			t.Logf("killed at WAL %d B (%d B): integrity ok, previous snapshot current, %d current offers", at, wal, c.CurrentOffers)
		case v == 2:
			t.Logf("kill at WAL %d B: the write had committed first (done=%v)", at, done)
		default:
			t.Errorf("kill at WAL %d B: version %d with done=%v", at, v, done)
		}
		if c.CurrentOffers != n+2 {
			t.Errorf("kill at WAL %d B: %d current offers; want %d", at, c.CurrentOffers, n+2)
		}
	}
	if midWrite < 3 {
		t.Errorf("only %d of 6 kills landed with uncommitted pages in the WAL; the test proves little", midWrite)
	}
}

// daemonChild runs `picker daemon` in a child process whose static provider reads a
// FIFO nobody writes: its refresh at start hangs in a read that ignores
// cancellation, as a stuck adapter would. It returns the child, its API URL, its
// logs and a channel that yields its exit code.
func daemonChild(t *testing.T, shutdownTimeout string) (*exec.Cmd, string, *syncBuffer, <-chan int) {
	t.Helper()
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.csv") // never read: the provider is stuckProvider
	cfg := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[providers.static]\nfiles = [%q]\n", prices)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--db", filepath.Join(dir, "picker.db"), "--config", cfg, "--log-format", "json",
		"daemon", "--listen", "127.0.0.1:0", "--shutdown-timeout", shutdownTimeout}
	cmd := helper(t, "daemon", "PICKER_TEST_ARGS="+strings.Join(args, "\x1f"), "XDG_CONFIG_HOME="+dir, "XDG_CACHE_HOME="+dir, "PICKER_TEST_STUCK=1")
	logs := &syncBuffer{}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var copied sync.WaitGroup
	copied.Add(1)
	go func() { defer copied.Done(); io.Copy(logs, stderr) }()
	exit := make(chan int, 1)
	exited := make(chan struct{})
	go func() {
		copied.Wait()
		cmd.Wait()
		exit <- cmd.ProcessState.ExitCode()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for loggedListen(logs.String()) == "" || !strings.Contains(logs.String(), `"task started"`) && !strings.Contains(logs.String(), `"refresh_now":true`) {
		if time.Now().After(deadline) {
			t.Fatalf("daemon child did not start:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cmd, "http://" + loggedListen(logs.String()), logs, exit
}

// stuckProvider's Fetch never returns: a stuck adapter that ignores its context. (A
// FIFO in static files used to play this part; static now refuses FIFOs.)
type stuckProvider struct{}

func (stuckProvider) Fetch(context.Context) (*providers.Snapshot, error) { select {} }

func waitExit(t *testing.T, exit <-chan int, within time.Duration, logs *syncBuffer) int {
	t.Helper()
	select {
	case code := <-exit:
		return code
	case <-time.After(within):
		t.Fatalf("the daemon did not exit within %v:\n%s", within, logs)
		return -1
	}
}

// SIGTERM: the API stops, the stuck refresh is waited for only up to
// --shutdown-timeout, and the daemon exits 0.
func TestDaemonSIGTERMIsBounded(t *testing.T) {
	cmd, url, logs, exit := daemonChild(t, "500ms")
	if code, _ := get(t, url+"/healthz"); code != 200 {
		t.Fatalf("/healthz = %d", code)
	}
	time.Sleep(100 * time.Millisecond) // let the refresh get stuck
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	code := waitExit(t, exit, 10*time.Second, logs)
	if code != 0 {
		t.Errorf("exit %d after SIGTERM; want 0\n%s", code, logs)
	}
	if d := time.Since(t0); d < 400*time.Millisecond || d > 5*time.Second {
		t.Errorf("shutdown took %v; want about the 500ms bound (a refresh was stuck)", d)
	}
	for _, want := range []string{`"signal received; shutting down`, `abandoned`, `"msg":"stopped"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
}

// A second signal exits at once, while the first one's shutdown still waits.
func TestDaemonSecondSignalExitsAtOnce(t *testing.T) {
	cmd, url, logs, exit := daemonChild(t, "1m")
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	// The shutdown waits (up to a minute) for the stuck refresh; the API is closed.
	select {
	case code := <-exit:
		t.Fatalf("exited %d on the first signal while a refresh was stuck; want it to wait\n%s", code, logs)
	case <-time.After(500 * time.Millisecond):
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("the API still accepts requests after the first signal")
	}
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	code := waitExit(t, exit, 5*time.Second, logs)
	if code != exitRuntime {
		t.Errorf("exit %d on the second signal; want %d", code, exitRuntime)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("the second signal took %v to exit; want at once", d)
	}
	if !strings.Contains(logs.String(), "second signal") {
		t.Errorf("logs lack the second-signal line:\n%s", logs)
	}
}
