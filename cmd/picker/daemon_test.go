package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/refresh"
)

// syncBuffer is a bytes.Buffer safe for the daemon's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testClock is a settable clock for refresh times and price ages.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newTestApp returns an app set up as Main.Run would for a command, with cfgText as
// its config file and its (seeded) store open, logging into the returned buffer.
func newTestApp(t testing.TB, cfgText string, now func() time.Time) (*app, *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	a := &app{m: Main{Getenv: func(string) string { return "" }}, stdout: io.Discard, stderr: logs, now: now,
		cfgPath: cfgPath, dbPath: filepath.Join(dir, "picker.db"), output: "table", logFormat: "text"}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.st.Close() })
	return a, logs
}

func get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, b
}

// genProvider is a live provider whose offers a test generates: n bulk offers and two
// markers, in regions marker-a and marker-z, whose price is the snapshot's version.
// A refresh writes them in one transaction, so a reader that sees the two markers at
// different versions has seen half a snapshot.
type genProvider struct {
	n       int
	version atomic.Int64
	// price returns the bulk offer i's price at version v.
	price func(i int, v int64) float64
	now   func() time.Time
	// fetched, when set, is called when Fetch returns: the write starts next.
	fetched func()
}

func (g *genProvider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	v := g.version.Load()
	at := g.now().UTC()
	mk := func(region, it string, gpu string, price float64) pricing.Offer {
		return pricing.Offer{Provider: "static", Region: region, InstanceType: it, GPUModel: gpu, GPUCount: 1, GPUMemGiB: 80,
			VCPUs: 8, RAMGiB: 64, Purchase: pricing.OnDemand, PriceUSDHr: price, Currency: "USD", ObservedAt: at, Source: "file"}
	}
	offers := make([]pricing.Offer, 0, g.n+2)
	offers = append(offers, mk("marker-a", "m", "A100-80GB", float64(v)))
	for i := range g.n {
		offers = append(offers, mk(fmt.Sprintf("r-%02d", i%40), fmt.Sprintf("box-%06d", i), "A100-80GB", g.price(i, v)))
	}
	offers = append(offers, mk("marker-z", "m", "A100-80GB", float64(v)))
	if g.fetched != nil {
		g.fetched()
	}
	return &providers.Snapshot{Offers: offers}, nil
}

// markerVersion reads the two markers through the API and returns their version,
// failing when either is missing or they differ.
func markerVersion(url string) (int64, error) {
	resp, err := http.Get(url + "/v1/offers?provider=static&region=marker-a,marker-z")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var offers []pricing.Offer
	if err := json.Unmarshal(b, &offers); err != nil {
		return 0, err
	}
	if len(offers) != 2 {
		return 0, fmt.Errorf("%d marker offers; want 2 (a snapshot is missing offers)", len(offers))
	}
	if offers[0].PriceUSDHr != offers[1].PriceUSDHr {
		return 0, fmt.Errorf("markers at prices %v and %v: half of a snapshot", offers[0].PriceUSDHr, offers[1].PriceUSDHr)
	}
	return int64(offers[0].PriceUSDHr), nil
}

// Readers are never blocked or failed by a refresh: 20 clients read during refreshes
// of a provider with many offers, and each sees the old snapshot or the new one.
func TestConcurrentReadsDuringRefresh(t *testing.T) {
	n := 5000
	if testing.Short() {
		n = 2000
	}
	clock := &testClock{t: fixedNow}
	// Room for every reader: this test is about consistency, not the concurrency limit.
	a, _ := newTestApp(t, "[daemon]\nmax_concurrent = 64\n", clock.Now)
	a.st.CacheOffers(offerCacheSize) // as runDaemon does: a refresh must invalidate it
	a.recMemo = newRecommendMemo(recommendMemoSize)
	srv := httptest.NewServer(a.apiHandler())
	defer srv.Close()
	gen := &genProvider{n: n, now: clock.Now, price: func(i int, v int64) float64 { return 1 + float64(i%1000)/1000 + float64(v) }}
	task := a.refreshTask(a.st, refresh.Job{Name: "static", Provider: gen, Timeout: raceSlowdown * time.Minute})
	gen.version.Store(1)
	if err := task(context.Background()); err != nil {
		t.Fatal(err)
	}

	// committed is the newest version whose write returned; writing is the version
	// being written (== committed between writes). A reader that starts after
	// committed=c and ends before writing>w must see a version in [c, w].
	var committed, writing, during atomic.Int64
	committed.Store(1)
	writing.Store(1)
	stop := make(chan struct{})
	var reqs atomic.Int64
	errs := make(chan error, 20)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				lo := committed.Load()
				mid := writing.Load() != lo
				v, err := markerVersion(srv.URL)
				hi := writing.Load()
				reqs.Add(1)
				if err == nil && (v < lo || v > hi) {
					err = fmt.Errorf("saw version %d while versions %d..%d were current", v, lo, hi)
				}
				if err != nil {
					errs <- err
					return
				}
				if mid && writing.Load() != committed.Load() {
					during.Add(1)
				}
				time.Sleep(time.Millisecond) // leave the writer some CPU on small machines
			}
		}()
	}
	var writeTime time.Duration
	for v := int64(2); v <= 4; v++ {
		gen.version.Store(v)
		clock.Add(time.Hour)
		writing.Store(v)
		t0 := time.Now()
		if err := task(context.Background()); err != nil {
			t.Fatal(err)
		}
		writeTime += time.Since(t0)
		committed.Store(v)
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d requests, %d of them entirely during one of 3 refreshes of %d offers (%v writing)", reqs.Load(), during.Load(), n+2, writeTime)
	if during.Load() == 0 {
		t.Error("no request ran during a refresh; the test proves nothing")
	}
	if v, err := markerVersion(srv.URL); err != nil || v != 4 {
		t.Errorf("after the refreshes: version %d, %v; want 4", v, err)
	}
}

// A provider that keeps failing keeps its last good prices; the API and `picker
// providers` show its last error, the age of its prices and the failures in a row.
func TestFailingProviderKeepsLastGoodPrices(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.csv")
	good := "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date\n" +
		"static,lab,,box1,H100,1,80,16,128,0.5,,\nstatic,lab,,box8,H100,8,80,128,1024,4,,\n"
	if err := os.WriteFile(prices, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	refreshed := fixedNow.Add(-5 * time.Hour)
	if err := os.Chtimes(prices, refreshed, refreshed); err != nil {
		t.Fatal(err)
	}
	cfgText := fmt.Sprintf("[providers.static]\nfiles = [%q]\nschedule = \"@every 1h\"\n", prices)
	clock := &testClock{t: refreshed}
	a, _ := newTestApp(t, cfgText, clock.Now)
	srv := httptest.NewServer(a.apiHandler())
	defer srv.Close()
	jobs, err := a.refreshJobs([]string{"static"})
	if err != nil {
		t.Fatal(err)
	}
	task := a.refreshTask(a.st, jobs[0])
	if err := task(context.Background()); err != nil {
		t.Fatalf("first refresh: %v", err)
	}
	// The file breaks; three scheduled runs fail.
	if err := os.WriteFile(prices, []byte("provider,region\nstatic,lab\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		clock.Add(time.Hour)
		if err := task(context.Background()); err == nil || !strings.Contains(err.Error(), "last good prices kept") {
			t.Fatalf("refresh of a broken file: %v; want a failure saying the last good prices are kept", err)
		}
	}
	clock.Add(2 * time.Hour) // now = fixedNow

	code, body := get(t, srv.URL+"/v1/providers")
	if code != 200 {
		t.Fatalf("/v1/providers: %d %s", code, body)
	}
	var rows []providerRow
	if err := json.Unmarshal(body, &rows); err != nil {
		t.Fatal(err)
	}
	var st *providerRow
	for i := range rows {
		if rows[i].Name == "static" {
			st = &rows[i]
		}
	}
	if st == nil {
		t.Fatalf("no static row in %s", body)
	}
	if st.ConsecutiveFailures != 3 || !strings.Contains(st.LastError, "prices.csv") || st.Offers != 2 || st.Age != "5 h" ||
		st.LastSuccess == nil || !st.LastSuccess.Equal(refreshed) || !st.Enabled || st.Schedule != "@every 1h" {
		t.Errorf("static provider = %+v; want 3 failures, the file's error, 2 offers aged 5 h, last success %v", *st, refreshed)
	}
	code, body = get(t, srv.URL+"/v1/offers?provider=static")
	var offers []pricing.Offer
	if err := json.Unmarshal(body, &offers); code != 200 || err != nil || len(offers) != 2 || offers[0].PriceUSDHr != 0.5 || offers[1].PriceUSDHr != 4 {
		t.Errorf("static offers after 3 failures: %d %s; want the last good 0.5 and 4", code, body)
	}

	// The CLI shows the same (its clock is fixedNow too).
	cfgPath := a.cfgPath
	r := runCLI(t, a.st.Path(), false, "--config", cfgPath, "providers")
	if r.code != 0 {
		t.Fatalf("picker providers: exit %d: %s", r.code, r.stderr)
	}
	var line string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "static\t") {
			line = l
		}
	}
	cells := strings.Split(line, "\t")
	if len(cells) != 10 || cells[1] != "yes" || cells[2] != "files" || !strings.HasSuffix(cells[4], " failed") || cells[5] != "5 h" || cells[6] != "2" || cells[8] != "3" || !strings.Contains(cells[9], "prices.csv") {
		t.Errorf("picker providers row for static = %q; want enabled, a failed last attempt, age 5 h, 2 offers, 3 failures and the error", line)
	}
}

// History: 50 refreshes with 1 % of prices changing leave the database no larger than
// 1.5x one refresh, and the nightly job prunes intervals older than keep_history.
func TestHistoryGrowthAndNightlyPrune(t *testing.T) {
	const n, perRefresh, refreshes = 2000, 20, 50
	t0 := fixedNow.Add(-refreshes * time.Hour)
	clock := &testClock{t: t0}
	a, logs := newTestApp(t, "[store]\nkeep_history = \"20h\"\n", clock.Now)
	ctx := context.Background()
	// Refresh k (k = 2..50, at t0 + (k-1)h) raises the prices of offers
	// [(k-1)*20, k*20): 1 % of the offers per refresh, each offer once.
	gen := &genProvider{n: n, now: clock.Now}
	task := a.refreshTask(a.st, refresh.Job{Name: "static", Provider: gen, Timeout: raceSlowdown * time.Minute})
	size := func() int64 {
		s, err := a.st.SizeBytes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	seeded := size()
	var one int64
	for k := int64(1); k <= refreshes; k++ {
		gen.version.Store(1) // markers stay put; only the bulk changes
		gen.price = func(i int, _ int64) float64 {
			changed := i >= perRefresh && i < int(k)*perRefresh // offers 0..19 never change
			if changed {
				return 3 + float64(i)/1e4
			}
			return 2 + float64(i)/1e4
		}
		if err := task(ctx); err != nil {
			t.Fatal(err)
		}
		if k == 1 {
			one = size() - seeded
		}
		if k < refreshes {
			clock.Add(time.Hour)
		}
	}
	grown := size() - seeded
	t.Logf("seeded %d B; one refresh of %d offers adds %d B; after %d refreshes %d B (%.2fx)", seeded, n+2, one, refreshes, grown, float64(grown)/float64(one))
	if float64(grown) > 1.5*float64(one) {
		t.Errorf("%d refreshes with 1%% of prices changing grew the database by %d B, more than 1.5x one refresh (%d B)", refreshes, grown, one)
	}

	before, err := a.st.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Refresh k closed the old intervals of its 20 changed offers at t0+(k-1)h. With
	// keep_history 20h at t0+49h the cutoff is t0+29h: refreshes 2..29 (valid_to <
	// cutoff) lose their closed intervals: 28 x 20.
	if err := a.nightly(ctx, a.st); err != nil {
		t.Fatal(err)
	}
	after, err := a.st.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := before.Prices-after.Prices, int64(28*perRefresh); got != want {
		t.Errorf("nightly prune deleted %d price intervals; want %d", got, want)
	}
	if after.CurrentOffers != before.CurrentOffers {
		t.Errorf("prune changed the current offers: %d -> %d", before.CurrentOffers, after.CurrentOffers)
	}
	if !strings.Contains(logs.String(), "pruned price history") {
		t.Errorf("no prune log line:\n%s", logs)
	}
	if err := a.st.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
	// keep_history unset: the nightly job prunes nothing (and still optimizes).
	a.cfg.Store.KeepHistory.Duration = 0
	if err := a.nightly(ctx, a.st); err != nil {
		t.Fatal(err)
	}
	if c, _ := a.st.Counts(ctx); c.Prices != after.Prices {
		t.Errorf("nightly without keep_history pruned %d intervals", after.Prices-c.Prices)
	}
}

// startDaemon runs `picker daemon` in process on an ephemeral port and returns its
// base URL, its logs, and a stop function that cancels it (as the first signal
// does) and returns its exit code.
func startDaemon(t *testing.T, db, cfgPath string) (string, *syncBuffer, func() int) {
	t.Helper()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	env := map[string]string{}
	m := Main{Stdout: io.Discard, Stderr: logs, Args: []string{"--db", db, "--config", cfgPath, "--log-format", "json", "daemon", "--listen", "127.0.0.1:0"},
		Getenv: func(k string) string { return env[k] }}
	done := make(chan int, 1)
	go func() { done <- m.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if addr := loggedListen(logs.String()); addr != "" {
			return "http://" + addr, logs, func() int {
				cancel()
				select {
				case code := <-done:
					return code
				case <-time.After(10 * time.Second):
					t.Fatal("the daemon did not stop within 10s of its context being cancelled")
					return -1
				}
			}
		}
		select {
		case code := <-done:
			t.Fatalf("daemon exited %d before listening:\n%s", code, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not start:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loggedListen returns the address of the "daemon started" JSON log line, "" if none.
func loggedListen(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var rec struct{ Msg, Listen string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "daemon started" {
			return rec.Listen
		}
	}
	return ""
}

// logRecords returns the JSON log lines whose msg is msg.
func logRecords(t *testing.T, logs, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("log line is not JSON: %q", l)
			continue
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// The daemon refreshes a never-refreshed provider at start, serves the result, stops
// cleanly, and on its next start does not refresh a provider that is still fresh.
func TestDaemonRefreshesAtStartAndStops(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "mine.toml")
	if err := os.WriteFile(prices, []byte("[[offers]]\nregion = \"lab\"\ninstance_type = \"box\"\ngpu_model = \"H100\"\ngpu_count = 1\nprice_usd_hr = 0.25\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("[providers.static]\nfiles = [%q]\nschedule = \"@every 1h\"\n", prices)), 0o644); err != nil {
		t.Fatal(err)
	}
	db := tempDB(t)
	url, logs, stop := startDaemon(t, db, cfgPath)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := get(t, url+"/v1/offers?provider=static")
		var offers []pricing.Offer
		json.Unmarshal(body, &offers)
		if len(offers) == 1 && offers[0].PriceUSDHr == 0.25 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the static provider was not refreshed at start; offers %s\nlogs:\n%s", body, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := get(t, url+"/healthz"); code != 200 || !strings.Contains(string(body), `"status": "ok"`) {
		t.Errorf("/healthz = %d %s", code, body)
	}
	if code := stop(); code != 0 {
		t.Errorf("daemon exit %d after cancel; want 0\n%s", code, logs)
	}
	sched := logRecords(t, logs.String(), "provider scheduled")
	if len(sched) != 1 || sched[0]["provider"] != "static" || sched[0]["refresh_now"] != true || sched[0]["schedule"] != "@every 1h" {
		t.Errorf("provider scheduled logs = %v; want static, refresh_now", sched)
	}
	if len(logRecords(t, logs.String(), "refreshed")) != 1 || len(logRecords(t, logs.String(), "stopped")) != 1 {
		t.Errorf("want one refreshed and one stopped log line:\n%s", logs)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("the API still answers after the daemon stopped")
	}

	// Started again within the hour: static is fresh and waits for its schedule.
	_, logs, stop = startDaemon(t, db, cfgPath)
	if code := stop(); code != 0 {
		t.Errorf("second run exit %d\n%s", code, logs)
	}
	sched = logRecords(t, logs.String(), "provider scheduled")
	if len(sched) != 1 || sched[0]["refresh_now"] != false || sched[0]["last_success"] == nil {
		t.Errorf("second start: provider scheduled = %v; want refresh_now false with last_success", sched)
	}
}

func TestDaemonBadListenAndFlags(t *testing.T) {
	db := tempDB(t)
	ln := httptest.NewServer(http.NotFoundHandler())
	defer ln.Close()
	busy := strings.TrimPrefix(ln.URL, "http://")
	if r := runCLI(t, db, false, "daemon", "--listen", busy); r.code != 1 || !strings.Contains(r.stderr, busy) {
		t.Errorf("daemon on a busy address: exit %d %q; want 1 naming the address", r.code, r.stderr)
	}
	if r := runCLI(t, db, false, "--log-format", "xml", "daemon"); r.code != 2 || !strings.Contains(r.stderr, "--log-format") {
		t.Errorf("--log-format xml: exit %d %q; want 2", r.code, r.stderr)
	}
	if r := runCLI(t, db, false, "daemon", "--shutdown-timeout", "0s"); r.code != 2 {
		t.Errorf("--shutdown-timeout 0s: exit %d %q; want 2", r.code, r.stderr)
	}
}

// A bad cron spec stops the daemon before it starts, naming the provider and the key;
// descriptors such as "@every 30m" are accepted.
func TestDaemonScheduleConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	os.WriteFile(cfg, []byte("[refresh]\nschedule = \"@every 30m\"\n\n[providers.static]\nfiles = [\"x.csv\"]\nschedule = \"every hour\"\n"), 0o644)
	r := runCLI(t, tempDB(t), false, "--config", cfg, "daemon", "--listen", "127.0.0.1:0")
	if r.code != 2 || !strings.Contains(r.stderr, "[providers.static] schedule") || !strings.Contains(r.stderr, "c.toml:6") {
		t.Errorf("bad spec: exit %d %q; want 2 naming the file, line, provider and key", r.code, r.stderr)
	}
}
