package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// watchHook is a loopback webhook recording the alerts it is sent; failing answers 503.
type watchHook struct {
	mu      sync.Mutex
	got     []watchPayload
	tries   int
	failing bool
}

func (h *watchHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries++
	if h.failing {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	var p watchPayload
	b, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &p) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	h.got = append(h.got, p)
}

func (h *watchHook) alerts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got)
}

// watchFixture is a static price file with one H100 box whose price a test sets, a
// config with one watch on it, and the database's directory.
type watchFixture struct {
	t      *testing.T
	prices string
	cfg    string
	db     string
}

func newWatchFixture(t *testing.T, hookURL string) *watchFixture {
	dir := t.TempDir()
	f := &watchFixture{t: t, prices: filepath.Join(dir, "prices.csv"), db: filepath.Join(dir, "picker.db")}
	f.cfg = fmt.Sprintf(`[providers.static]
files = [%q]
schedule = "@every 1h"

[[watch]]
name = "cheap-h100"
job = "--model llama-2-7b --task inference --provider 'static'"
max_usd_hr = 2
webhook_url = %q
`, f.prices, hookURL)
	f.setPrice(3)
	return f
}

func (f *watchFixture) setPrice(p float64) {
	csv := "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date\n" +
		fmt.Sprintf("static,lab,,box1,H100,1,80,16,128,%v,,\n", p)
	if err := os.WriteFile(f.prices, []byte(csv), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// daemon is an app set up as the daemon is, with its watcher: refresh runs one
// scheduled refresh of the price file (which evaluates the watches).
func (f *watchFixture) daemon(clock *testClock) (a *app, logs *syncBuffer, refresh func()) {
	t := f.t
	cfgPath := filepath.Join(filepath.Dir(f.db), "config.toml")
	if err := os.WriteFile(cfgPath, []byte(f.cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logs = &syncBuffer{}
	a = &app{m: Main{Getenv: func(string) string { return "" }}, stdout: io.Discard, stderr: logs, now: clock.Now,
		cfgPath: cfgPath, dbPath: f.db, output: "table", logFormat: "text"}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.st.Close() })
	w, err := a.newWatcher()
	if err != nil {
		t.Fatal(err)
	}
	a.watch = w
	jobs, err := a.refreshJobs([]string{"static"})
	if err != nil {
		t.Fatal(err)
	}
	task := a.refreshTask(a.st, jobs[0])
	return a, logs, func() {
		t.Helper()
		clock.Add(time.Hour)
		if err := task(context.Background()); err != nil {
			t.Fatalf("refresh: %v", err)
		}
	}
}

func instantWebhookRetries(t *testing.T) {
	old := webhookPolicy
	webhookPolicy.Sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	t.Cleanup(func() { webhookPolicy = old })
}

func watchViews(t *testing.T, a *app) []WatchView {
	t.Helper()
	srv := httptest.NewServer(a.apiHandler())
	defer srv.Close()
	code, body := get(t, srv.URL+"/v1/watches")
	if code != 200 {
		t.Fatalf("/v1/watches: %d %s", code, body)
	}
	var vs []WatchView
	if err := json.Unmarshal(body, &vs); err != nil {
		t.Fatalf("/v1/watches: %v: %s", err, body)
	}
	return vs
}

// A watch fires once when the top offer's price falls to the threshold, not again on
// a second refresh that keeps it below, again after it goes back above (re-armed), and
// a restarted daemon neither repeats the alert nor forgets the state.
func TestWatchFiresOnceRearmsAndSurvivesRestart(t *testing.T) {
	instantWebhookRetries(t)
	hook := &watchHook{}
	hs := httptest.NewServer(hook)
	defer hs.Close()
	f := newWatchFixture(t, hs.URL+"/alert")
	clock := &testClock{t: fixedNow.Add(-24 * time.Hour)}
	a, logs, refresh := f.daemon(clock)

	if vs := watchViews(t, a); len(vs) != 1 || vs[0].State != watchUnknown || vs[0].Name != "cheap-h100" || !vs[0].Webhook {
		t.Fatalf("before any refresh: %+v", vs)
	}
	refresh() // $3/h: above
	if n := hook.alerts(); n != 0 {
		t.Fatalf("%d alerts at $3/h over a $2 threshold", n)
	}
	f.setPrice(1.5)
	refresh() // crossing
	refresh() // still below: no repeat
	if n := hook.alerts(); n != 1 {
		t.Fatalf("%d alerts after falling to $1.5/h and staying there; want 1", n)
	}
	p := hook.got[0]
	if p.Watch != "cheap-h100" || p.Threshold != "max_usd_hr" || p.Max != 2 || p.Value != 1.5 || p.Figure != "price_usd_hr" ||
		p.Offer == nil || p.Offer.InstanceType != "box1" || p.Offer.Provider != "static" || p.CrossedAt.IsZero() {
		t.Errorf("payload %+v", p)
	}
	vs := watchViews(t, a)
	if len(vs) != 1 || vs[0].State != watchBelow || vs[0].Value == nil || *vs[0].Value != 1.5 || vs[0].LastCrossing == nil ||
		vs[0].Offer == nil || vs[0].Offer.InstanceType != "box1" {
		t.Fatalf("/v1/watches after the crossing: %+v", vs)
	}
	if !strings.Contains(logs.String(), "watch crossed its threshold") {
		t.Errorf("crossing not logged:\n%s", logs)
	}
	first := *vs[0].LastCrossing
	srv := httptest.NewServer(a.apiHandler())
	code, page := get(t, srv.URL+"/providers")
	srv.Close()
	if code != 200 || !strings.Contains(string(page), `data-watch="cheap-h100"`) || !strings.Contains(string(page), "static lab box1") {
		t.Errorf("/providers: %d; want the watch's row with its offer:\n%s", code, page)
	}

	f.setPrice(2.5)
	refresh() // re-armed
	if vs := watchViews(t, a); vs[0].State != watchAbove {
		t.Fatalf("state at $2.5/h: %+v", vs[0])
	}
	f.setPrice(2) // at the threshold counts
	refresh()
	if n := hook.alerts(); n != 2 {
		t.Fatalf("%d alerts after re-arming and falling to $2/h; want 2", n)
	}
	if vs := watchViews(t, a); vs[0].LastCrossing == nil || !vs[0].LastCrossing.After(first) {
		t.Errorf("last crossing %v; want after %v", vs[0].LastCrossing, first)
	}

	// Restart: a new daemon on the same database and state file.
	a.st.Close()
	a2, _, refresh2 := f.daemon(clock)
	if vs := watchViews(t, a2); vs[0].State != watchBelow || vs[0].Value == nil || *vs[0].Value != 2 {
		t.Fatalf("state after restart: %+v", vs[0])
	}
	refresh2()
	if n := hook.alerts(); n != 2 {
		t.Fatalf("%d alerts after a restart below the threshold; want still 2", n)
	}
}

// A failing webhook is retried a bounded number of times; the error is recorded
// without the URL's credentials, and the crossing is not repeated.
func TestWatchWebhookFailureBoundedAndRedacted(t *testing.T) {
	instantWebhookRetries(t)
	hook := &watchHook{failing: true}
	hs := httptest.NewServer(hook)
	defer hs.Close()
	hookURL := strings.Replace(hs.URL, "http://", "http://alice:s3cretpassw0rd@", 1) + "/alert?token=querysecret123"
	f := newWatchFixture(t, hookURL)
	f.setPrice(1)
	clock := &testClock{t: fixedNow.Add(-24 * time.Hour)}
	a, logs, refresh := f.daemon(clock)
	refresh()
	if hook.tries != webhookAttempts {
		t.Errorf("webhook tried %d times; want %d", hook.tries, webhookAttempts)
	}
	vs := watchViews(t, a)
	if vs[0].State != watchBelow || !strings.Contains(vs[0].WebhookError, "503") {
		t.Fatalf("after a failing webhook: %+v", vs[0])
	}
	body, _ := json.Marshal(vs)
	state, _ := os.ReadFile(watchStatePath(f.db))
	for _, leak := range []string{"s3cretpassw0rd", "querysecret123", "alice"} {
		for what, s := range map[string]string{"logs": logs.String(), "/v1/watches": string(body), "state file": string(state)} {
			if strings.Contains(s, leak) {
				t.Errorf("%s shows %q:\n%s", what, leak, s)
			}
		}
	}
	refresh()
	if hook.tries != webhookAttempts {
		t.Errorf("webhook tried %d times after a second refresh below; want no new alert", hook.tries)
	}
}

// A bad job flag or threshold is a config error naming the file, line and key.
func TestWatchConfigErrors(t *testing.T) {
	cases := []struct{ watch, want string }{
		{"name = \"w\"\njob = \"--model llama-2-7b --tsak lora\"\nmax_usd_hr = 1\n", `config.toml:3:1: [[watch]] "w" job: unknown flag: --tsak`},
		{"name = \"w\"\njob = \"--model llama-2-7b --batch many\"\nmax_usd_hr = 1\n", `config.toml:3:1: [[watch]] "w" job: `},
		{"name = \"w\"\njob = \"--model 'llama-2-7b\"\nmax_usd_hr = 1\n", `config.toml:3:1: [[watch]] "w" job: unterminated ' quote`},
		{"name = \"w\"\njob = \"--model llama-2-7b\"\nmax_usd_job = 1\n", `config.toml:4:1: [[watch]] "w" max_usd_job: the job's dollars need`},
		{"name = \"w\"\njob = \"--model llama-2-7b --tokens 1e9\"\nmax_usd_per_unit = 1\n", `config.toml:4:1: [[watch]] "w" max_usd_per_unit: `},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		cfgPath := filepath.Join(dir, "config.toml")
		if err := os.WriteFile(cfgPath, []byte("[[watch]]\n"+tc.watch), 0o644); err != nil {
			t.Fatal(err)
		}
		a := &app{m: Main{Getenv: func(string) string { return "" }}, stdout: io.Discard, stderr: io.Discard, now: time.Now,
			cfgPath: cfgPath, dbPath: filepath.Join(dir, "picker.db"), output: "table", logFormat: "text"}
		if err := a.setup(); err != nil {
			t.Fatal(err)
		}
		_, err := a.newWatcher()
		if err == nil || !strings.Contains(err.Error(), tc.want) || pricing.ErrorCode(err) != pricing.Invalid {
			t.Errorf("%q:\n got %v\nwant %q", tc.watch, err, tc.want)
		}
	}
	// Through the CLI: picker daemon refuses to start, exit 2.
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.toml")
	os.WriteFile(cfgPath, []byte("[[watch]]\n"+cases[0].watch), 0o644)
	r := runCLI(t, filepath.Join(dir, "picker.db"), false, "--config", cfgPath, "daemon", "--listen", "127.0.0.1:0")
	if r.code != exitUsage || !strings.Contains(r.stderr, "[[watch]] \"w\" job: unknown flag: --tsak") {
		t.Errorf("picker daemon with a bad watch: exit %d: %s", r.code, r.stderr)
	}
}

func TestSplitShell(t *testing.T) {
	for in, want := range map[string][]string{
		`--model llama-2-7b  --task lora`:        {"--model", "llama-2-7b", "--task", "lora"},
		`--model 'a b' --x "c \"d\" $e" f\ g ''`: {"--model", "a b", "--x", `c "d" $e`, "f g", ""},
		`  `:                                     nil,
	} {
		got, err := splitShell(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitShell(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := splitShell(`"open`); err == nil {
		t.Error(`splitShell("open) gave no error`)
	}
}
