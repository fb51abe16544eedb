// Command loadtest runs the daemon's load and abuse test (issue 18): it builds a
// database of synthetic offers (100k by default), starts `picker daemon` on loopback
// against it, and sends N concurrent clients × M requests that mix valid, hostile and
// huge requests. It prints the responses by status and class, latency percentiles, the
// daemon's peak RSS, and whether it survived (no crash, no panic in its log, /healthz ok
// at the end). Bounded in count (clients × requests) and time (-duration).
//
//	go build -o /tmp/picker ./cmd/picker
//	go run ./tools/loadtest -picker /tmp/picker -offers 100000 -clients 64 -requests 100
//
// With -hostile it runs issue 30's test instead (hostile.go).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

type request struct {
	class, path string
	header      map[string]string
}

// mix is what the clients send, each chosen with equal weight: valid questions, a few
// huge but legal ones, and hostile ones the daemon must refuse cheaply.
var mix = []request{
	{class: "valid", path: "/v1/offers?gpu-model=H100&limit=20"},
	{class: "valid", path: "/v1/offers?purchase=spot&min-vram=40&sort=price-per-gpu&limit=50"},
	{class: "valid", path: "/v1/recommend?model=llama-2-7b&task=lora&batch=4&top=10"},
	{class: "valid", path: "/v1/recommend?model=mistral-7b&task=qlora&purchase=any&top=5"},
	{class: "valid", path: "/v1/estimate?model=llama-2-70b&task=inference"},
	{class: "valid", path: "/v1/providers"},
	{class: "health", path: "/healthz"},
	{class: "huge", path: "/v1/offers"},
	{class: "huge", path: "/v1/offers?limit=10000"},
	{class: "huge", path: "/v1/recommend?model=llama-2-7b&task=lora&top=100&purchase=any"},
	{class: "hostile", path: "/v1/recommend?model=llama-2-7b&top=1000000000"},
	{class: "hostile", path: "/v1/offers?gpu-model=H100;A100"},
	{class: "hostile", path: "/v1/offers?limit=0"},
	{class: "hostile", path: "/v1/estimate?model=/etc/passwd"},
	{class: "hostile", path: "/v1/estimate?model=someone/not-in-the-catalog"},
	{class: "hostile", path: "/v1/estimate?model=" + strings.Repeat("x", 60_000)},
	{class: "hostile", path: "/v1/offers?gpu-model=" + strings.TrimSuffix(strings.Repeat("H100,", 40), ",")},
	{class: "hostile", path: "/v1/offers?db=/tmp/other.db"},
	{class: "hostile", path: "/v1/offers?limit=%zz"},
	{class: "hostile", path: "/v1/offers?limit=1", header: map[string]string{"Host": "rebind.evil.example"}},
	{class: "hostile", path: "/v1/offers?limit=1", header: map[string]string{"Origin": "http://evil.example"}},
}

func main() {
	picker := flag.String("picker", "", "picker binary (required; go build -o /tmp/picker ./cmd/picker)")
	nOffers := flag.Int("offers", 100_000, "offers in the database")
	clients := flag.Int("clients", 64, "concurrent clients")
	perClient := flag.Int("requests", 100, "requests per client")
	maxConc := flag.Int("max-concurrent", 0, "[daemon] max_concurrent (0: the daemon's default)")
	duration := flag.Duration("duration", 3*time.Minute, "stop sending after this long")
	dir := flag.String("dir", "", "work directory (default: a temporary one, removed at the end)")
	hostile := flag.Bool("hostile", false, "issue 30's test (hostile.go): routes and pages for -duration while `picker refresh` rewrites every price")
	flag.Parse()
	if *picker == "" {
		fmt.Fprintln(os.Stderr, "loadtest: -picker is required")
		os.Exit(2)
	}
	if *hostile {
		if err := runHostile(*picker, *nOffers, *clients, *duration, *dir); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*picker, *nOffers, *clients, *perClient, *maxConc, *duration, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(picker string, nOffers, clients, perClient, maxConc int, duration time.Duration, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "picker-loadtest-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	db := filepath.Join(dir, "picker.db")
	t0 := time.Now()
	if err := buildDB(db, nOffers); err != nil {
		return fmt.Errorf("build database: %w", err)
	}
	fmt.Printf("database: %d offers in %v\n", nOffers, time.Since(t0).Round(time.Millisecond))

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	cfg := filepath.Join(dir, "config.toml")
	cfgText := fmt.Sprintf("[daemon]\nlisten = %q\n", addr)
	if maxConc > 0 {
		cfgText += fmt.Sprintf("max_concurrent = %d\n", maxConc)
	}
	if err := os.WriteFile(cfg, []byte(cfgText), 0o644); err != nil {
		return err
	}
	d, err := startDaemon(picker, cfg, db, addr, append(os.Environ(), "HF_ENDPOINT=http://127.0.0.1:1", "XDG_CACHE_HOME="+filepath.Join(dir, "cache")))
	if err != nil {
		return err
	}
	defer d.kill()
	cmd, base := d.cmd, d.base

	peakRSS := sampleRSS(cmd.Process.Pid)

	type sample struct {
		class  string
		status int // 0: transport error
		d      time.Duration
	}
	results := make(chan sample, clients*perClient)
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	hc := &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 18))
			for range perClient {
				if ctx.Err() != nil {
					return
				}
				r := mix[rng.IntN(len(mix))]
				req, _ := http.NewRequestWithContext(ctx, "GET", base+r.path, nil)
				for k, v := range r.header {
					if k == "Host" {
						req.Host = v
					} else {
						req.Header.Set(k, v)
					}
				}
				t := time.Now()
				resp, err := hc.Do(req)
				s := sample{class: r.class, d: time.Since(t)}
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					s.status, s.d = resp.StatusCode, time.Since(t)
				}
				results <- s
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(results)
	peakKB := peakRSS()

	byStatus := map[string]map[int]int{}
	lat := map[string][]time.Duration{}
	var all []time.Duration
	n := 0
	for s := range results {
		n++
		if byStatus[s.class] == nil {
			byStatus[s.class] = map[int]int{}
		}
		byStatus[s.class][s.status]++
		lat[s.class] = append(lat[s.class], s.d)
		all = append(all, s.d)
	}
	// Survival: still running, /healthz ok, no panic in its log.
	sv := d.stop()
	alive, code, hwm, panics := sv.alive, sv.code, sv.hwmKB, sv.panics

	conc := "default"
	if maxConc > 0 {
		conc = strconv.Itoa(maxConc)
	}
	fmt.Printf("load: %d clients x %d requests (max_concurrent %s, %d CPUs): %d sent in %v (%.0f req/s)\n",
		clients, perClient, conc, runtime.NumCPU(), n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
	classes := make([]string, 0, len(byStatus))
	for c := range byStatus {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		codes := make([]int, 0, len(byStatus[c]))
		for code := range byStatus[c] {
			codes = append(codes, code)
		}
		slices.Sort(codes)
		var parts []string
		for _, code := range codes {
			name := strconv.Itoa(code)
			if code == 0 {
				name = "transport-error"
			}
			parts = append(parts, fmt.Sprintf("%s:%d", name, byStatus[c][code]))
		}
		p := pct(lat[c])
		fmt.Printf("  %-8s %-50s p50 %v  p99 %v  max %v\n", c, strings.Join(parts, " "), p(50), p(99), p(100))
	}
	p := pct(all)
	fmt.Printf("  all      p50 %v  p99 %v  max %v\n", p(50), p(99), p(100))
	fmt.Printf("daemon peak RSS: %.1f MiB (sampled %.1f MiB)\n", float64(hwm)/1024, float64(peakKB)/1024)
	fmt.Printf("survived: alive=%v healthz-after=%d panics-in-log=%d\n", alive, code, panics)
	if !alive || code != 200 || panics > 0 {
		return fmt.Errorf("the daemon did not survive the load")
	}
	return nil
}

func pct(ds []time.Duration) func(float64) time.Duration {
	slices.Sort(ds)
	return func(p float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		i := int(float64(len(ds)-1) * p / 100)
		return ds[i].Round(time.Microsecond)
	}
}

// buildDB writes n synthetic offers in providers of at most 10k offers each.
func buildDB(path string, n int) error {
	ctx := context.Background()
	st, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	gpus := pricing.GPUs()
	counts := []float64{0.5, 1, 2, 4, 8}
	now := time.Now().UTC()
	const per = 10_000
	for p := 0; p*per < n; p++ {
		name := fmt.Sprintf("synth%02d", p)
		m := min(per, n-p*per)
		offers := make([]pricing.Offer, m)
		for i := range offers {
			k := p*per + i
			g := gpus[k%len(gpus)]
			c := counts[(k/len(gpus))%len(counts)]
			purchase := pricing.OnDemand
			if k%5 < 2 {
				purchase = pricing.Spot
			}
			offers[i] = pricing.Offer{
				Provider: name, Region: fmt.Sprintf("r%02d", (k/3)%25), InstanceType: fmt.Sprintf("type-%d", k),
				GPUModel: g.Model, GPUCount: c, GPUMemGiB: g.MemGB, VCPUs: 8 * c, RAMGiB: 64 * c,
				Purchase: purchase, PriceUSDHr: 0.1 + float64((k*7919)%100000)/1000*c, Currency: "USD",
				Source: pricing.SourceAPI, ObservedAt: now,
			}
		}
		if _, err := st.WriteSnapshot(ctx, name, store.WriteInput{Offers: offers, Finished: now}); err != nil {
			return err
		}
	}
	return nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitHealthy(base string, within time.Duration, exited <-chan error) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited: %v", err)
		default:
		}
		if code, _ := getStatus(base + "/healthz"); code == 200 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no healthy /healthz within %v", within)
}

func getStatus(url string) (int, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// rssKB reads a memory figure (VmRSS, VmHWM) of a process from /proc, in KiB; 0 where
// /proc is not there.
// sampleRSS polls pid's resident set every 20 ms (a run's peak between the start and
// the daemon's stop, beside the kernel's VmHWM) until the returned func is called, which
// stops it and gives the largest seen, in KiB.
func sampleRSS(pid int) func() int64 {
	var peak atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if kb := rssKB(pid, "VmRSS"); kb > peak.Load() {
					peak.Store(kb)
				}
			}
		}
	}()
	var once sync.Once
	return func() int64 {
		once.Do(func() { close(stop); <-done })
		return peak.Load()
	}
}

func rssKB(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// survival is how a daemon came out of a load run: running when the run ended, /healthz
// after it, its peak RSS and the panics in its log.
type survival struct {
	alive  bool
	code   int
	hwmKB  int64
	panics int
}

// daemon is a picker daemon a load test started, with its log and exit.
type daemon struct {
	cmd    *exec.Cmd
	base   string
	logs   *bytes.Buffer
	exited chan error
}

// startDaemon starts picker's daemon on addr and waits until /healthz answers.
func startDaemon(picker, cfg, db, addr string, env []string) (*daemon, error) {
	d := &daemon{base: "http://" + addr, logs: &bytes.Buffer{}, exited: make(chan error, 1)}
	d.cmd = exec.Command(picker, "--config", cfg, "--db", db, "--quiet", "daemon")
	d.cmd.Stderr = &syncWriter{w: d.logs}
	d.cmd.Env = env
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { d.exited <- d.cmd.Wait() }()
	if err := waitHealthy(d.base, 60*time.Second, d.exited); err != nil {
		d.kill()
		return nil, fmt.Errorf("daemon did not start: %w\n%s", err, d.logs.String())
	}
	return d, nil
}

// kill ends a daemon that stop did not (a run that returned early).
func (d *daemon) kill() {
	if d.cmd.ProcessState == nil {
		d.cmd.Process.Kill()
	}
}

// stop reads the daemon's survival, then stops it (SIGTERM, SIGKILL after 40 s); both
// load tests end this way.
func (d *daemon) stop() survival {
	cmd, exited := d.cmd, d.exited
	s := survival{alive: true}
	select {
	case err := <-exited:
		s.alive = false
		fmt.Printf("DAEMON EXITED: %v\n", err)
	default:
	}
	s.code, _ = getStatus(d.base + "/healthz")
	s.hwmKB = rssKB(cmd.Process.Pid, "VmHWM")
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(40 * time.Second):
		cmd.Process.Kill()
	}
	s.panics = strings.Count(d.logs.String(), "panic")
	return s
}
