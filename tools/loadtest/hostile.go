package main

// The hostile mode (issue 30): mixed clients on /v1/recommend, /v1/offers, /history
// and the pages at 100k offers while a second process (`picker refresh` of a static
// price file the tool rewrites, as a cron job beside the daemon would) rewrites every
// price back to back. It reports, per route, the answers by status, the successful
// requests per second and p99, the refreshes that failed, and the daemon's peak RSS.
//
//	go build -o /tmp/picker ./cmd/picker
//	go run ./tools/loadtest -picker /tmp/picker -hostile -offers 100000 -clients 16 -duration 60s

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// hostileRoutes are what the hostile mode's clients ask, each with equal weight.
var hostileRoutes = []request{
	{class: "recommend", path: "/v1/recommend?model=llama-2-7b&task=lora&batch=4&top=5"},
	{class: "recommend", path: "/v1/recommend?model=mistral-7b&task=inference&purchase=any&top=3"},
	{class: "offers", path: "/v1/offers?gpu-model=H100&limit=50"},
	{class: "offers", path: "/v1/offers?purchase=spot&min-vram=40&sort=price-per-gpu&limit=100"},
	{class: "history", path: "/history?gpu-model=H100"},
	{class: "history", path: "/history?provider=static&instance-type=type-7"},
	{class: "page-ask", path: "/"},
	{class: "page-ask", path: "/?model=llama-2-7b&task=lora"},
	{class: "page-offers", path: "/offers?gpu-model=A100"},
	{class: "page-csv", path: "/offers.csv"},
	{class: "page-prov", path: "/providers"},
}

// writePriceCSV writes n offers (on-demand and spot rows alternate) as a static price
// file; version changes every price.
func writePriceCSV(path string, n, version int) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date")
	gpus := pricing.GPUs()
	counts := []float64{1, 2, 4, 8}
	day := time.Now().UTC().Format(time.DateOnly)
	for k := range (n + 1) / 2 { // a row is an on-demand and a spot offer
		g := gpus[k%len(gpus)]
		c := counts[(k/len(gpus))%len(counts)]
		od := 0.2 + float64((k*7919+version*104729)%100000)/1000*c
		fmt.Fprintf(w, "static,r%02d,,type-%d,%s,%g,%g,%g,%g,%.4f,%.4f,%s\n", (k/3)%25, k, g.Model, c, g.MemGB, 8*c, 64*c, od, od*0.4, day)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func runHostile(picker string, nOffers, clients int, duration time.Duration, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "picker-hostile-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	db, prices := filepath.Join(dir, "picker.db"), filepath.Join(dir, "prices.csv")
	refreshCfg := filepath.Join(dir, "refresh.toml")
	if err := os.WriteFile(refreshCfg, []byte(fmt.Sprintf("[providers.static]\nfiles = [%q]\n", prices)), 0o644); err != nil {
		return err
	}
	env := append(os.Environ(), "HF_ENDPOINT=http://127.0.0.1:1", "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	refresh := func(version int) error {
		if err := writePriceCSV(prices, nOffers, version); err != nil {
			return err
		}
		cmd := exec.Command(picker, "--config", refreshCfg, "--db", db, "--quiet", "refresh", "--provider", "static")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
		}
		return nil
	}
	t0 := time.Now()
	if err := refresh(0); err != nil {
		return fmt.Errorf("first refresh: %w", err)
	}
	fmt.Printf("database: %d offers by one refresh in %v\n", nOffers, time.Since(t0).Round(time.Millisecond))

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	cfg := filepath.Join(dir, "daemon.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[daemon]\nlisten = %q\n", addr)), 0o644); err != nil {
		return err
	}
	d, err := startDaemon(picker, cfg, db, addr, env)
	if err != nil {
		return err
	}
	defer d.kill()
	cmd, base := d.cmd, d.base

	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	// The rewriter: refresh after refresh, every price changed each time.
	var refreshes, failed atomic.Int64
	var failures []string
	var fmu sync.Mutex
	rdone := make(chan struct{})
	go func() {
		defer close(rdone)
		for v := 1; ctx.Err() == nil; v++ {
			err := refresh(v)
			refreshes.Add(1)
			if err != nil && ctx.Err() == nil {
				failed.Add(1)
				fmu.Lock()
				failures = append(failures, err.Error())
				fmu.Unlock()
			}
		}
	}()

	type sample struct {
		class  string
		status int
		d      time.Duration
	}
	var mu sync.Mutex
	var samples []sample
	hc := &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 30))
			for ctx.Err() == nil {
				r := hostileRoutes[rng.IntN(len(hostileRoutes))]
				req, _ := http.NewRequestWithContext(ctx, "GET", base+r.path, nil)
				t := time.Now()
				resp, err := hc.Do(req)
				s := sample{class: r.class}
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					s.status = resp.StatusCode
				} else if ctx.Err() != nil {
					return // cut by the end of the run, not an answer
				}
				s.d = time.Since(t)
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		}()
	}
	peak := sampleRSS(cmd.Process.Pid)
	wg.Wait()
	elapsed := time.Since(start)
	<-rdone
	peakKB := peak()

	sv := d.stop()
	alive, code, hwm, panics := sv.alive, sv.code, sv.hwmKB, sv.panics

	fmt.Printf("hostile load: %d clients for %v (%d CPUs, shared), %d offers; %d refreshes rewrote every price, %d failed\n",
		clients, elapsed.Round(time.Millisecond), runtime.NumCPU(), nOffers, refreshes.Load(), failed.Load())
	for _, f := range failures {
		fmt.Printf("  refresh failed: %.300s\n", f)
	}
	byClass := map[string][]sample{}
	for _, s := range samples {
		byClass[s.class] = append(byClass[s.class], s)
	}
	classes := make([]string, 0, len(byClass))
	for c := range byClass {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	for _, c := range classes {
		codes := map[int]int{}
		var ok []time.Duration
		for _, s := range byClass[c] {
			codes[s.status]++
			if s.status >= 200 && s.status < 300 {
				ok = append(ok, s.d)
			}
		}
		keys := make([]int, 0, len(codes))
		for k := range codes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			name := strconv.Itoa(k)
			if k == 0 {
				name = "transport-error"
			}
			parts = append(parts, fmt.Sprintf("%s:%d", name, codes[k]))
		}
		p := pct(ok)
		fmt.Printf("  %-12s %-28s ok %6.1f req/s  p50 %v  p99 %v\n", c, strings.Join(parts, " "), float64(len(ok))/elapsed.Seconds(), p(50), p(99))
	}
	fmt.Printf("daemon peak RSS: %.1f MiB (sampled %.1f MiB)\n", float64(hwm)/1024, float64(peakKB)/1024)
	fmt.Printf("survived: alive=%v healthz-after=%d panics-in-log=%d\n", alive, code, panics)
	if !alive || code != 200 || panics > 0 || failed.Load() > 0 {
		return fmt.Errorf("the daemon did not hold: alive=%v healthz=%d panics=%d failed refreshes=%d", alive, code, panics, failed.Load())
	}
	return nil
}
