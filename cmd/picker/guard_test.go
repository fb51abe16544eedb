package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// newGuardedAPI is newTestAPI with a config and an environment.
func newGuardedAPI(t *testing.T, cfg string, env map[string]string) (*app, *httptest.Server) {
	t.Helper()
	a, _ := newTestApp(t, cfg, func() time.Time { return fixedNow })
	a.m.Getenv = func(k string) string { return env[k] }
	a.red = nil // rebuilt from this environment
	a.st.CacheOffers(offerCacheSize)
	srv := httptest.NewServer(a.apiHandler())
	t.Cleanup(srv.Close)
	return a, srv
}

func do(t *testing.T, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// Issue 18, cases 1 and 11: every request is bounded before it runs, and a malformed or
// oversized value is a 400 naming the parameter, never silently ignored.
func TestAPIBoundsEveryRequest(t *testing.T) {
	_, srv := newTestAPI(t)
	long := strings.Repeat("x", 300)
	many := strings.TrimSuffix(strings.Repeat("H100,", 33), ",")
	for _, tt := range []struct {
		path, param, mention string
	}{
		// top=1000000000 ran the daemon out of memory; any top over the cap is refused.
		{"/v1/recommend?model=llama-2-7b&top=1000000000", "top", "cap of 100"},
		{"/v1/recommend?model=llama-2-7b&top=101", "top", "cap of 100"},
		{"/v1/offers?limit=10001", "limit", "cap of 10000"},
		{"/v1/offers?limit=0", "limit", "at most 10000"},
		{"/v1/offers?gpu-model=" + many, "gpu-model", "at most 32"},
		{"/v1/offers?region=" + long, "region", "at most 256"},
		{"/v1/estimate?model=" + long, "model", "at most 256"},
		// ';' is not a separator: url.Values.Query dropped the pair and answered every GPU.
		{"/v1/offers?gpu-model=H100;A100", "", "malformed query"},
		{"/v1/offers?gpu-model=%zz", "", "malformed query"},
		{"/v1/offers?" + strings.Repeat("a", 5000), "", "at most 4096"},
	} {
		t.Run(tt.path[:min(len(tt.path), 60)], func(t *testing.T) {
			code, body := get(t, srv.URL+tt.path)
			var e apiError
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("body is not a JSON error: %.300s", body)
			}
			if code != http.StatusBadRequest || e.Parameter != tt.param || !strings.Contains(e.Error, tt.mention) {
				t.Errorf("got %d %+v; want 400 naming %q and mentioning %q", code, e, tt.param, tt.mention)
			}
		})
	}
	// The cap itself is served.
	if code, body := get(t, srv.URL+"/v1/recommend?model=llama-2-7b&top=100"); code != http.StatusOK {
		t.Errorf("top=100: %d %.300s", code, body)
	}
}

// An unfiltered /v1/offers is one page (defaultAPILimit), streamed; a bigger page is
// asked for with limit.
func TestAPIOffersPaged(t *testing.T) {
	_, srv := newTestAPI(t)
	var all, two []pricing.Offer
	_, body := get(t, srv.URL+"/v1/offers?purchase=any")
	if err := json.Unmarshal(body, &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != defaultAPILimit {
		t.Errorf("unfiltered /v1/offers gave %d offers; want the page of %d (the embedded snapshot has more)", len(all), defaultAPILimit)
	}
	_, body = get(t, srv.URL+"/v1/offers?limit=2")
	if err := json.Unmarshal(body, &two); err != nil || len(two) != 2 || two[0] != all[0] {
		t.Errorf("limit=2: %d offers, err %v", len(two), err)
	}
	if code, body := get(t, srv.URL+"/v1/offers?gpu-model=H100&max-price=0.0001"); code != 200 || string(body) != "[]\n" {
		t.Errorf("empty answer: %d %q", code, body)
	}
}

// Issue 18, case 1: who may ask. A foreign Host (DNS rebinding) and a cross-site page
// are refused; no CORS header is ever sent.
func TestAPIHostAndOrigin(t *testing.T) {
	_, srv := newGuardedAPI(t, "[daemon]\nhosts = [\"picker.internal\"]\n", nil)
	for _, tt := range []struct {
		host, origin, site string
		want               int
	}{
		{"", "", "", 200},
		{"localhost:8080", "", "", 200},
		{"picker.internal", "", "", 200},
		{"PICKER.INTERNAL.", "", "", 200},
		{"evil.example", "", "", http.StatusMisdirectedRequest},
		{"127.0.0.1.evil.example", "", "", http.StatusMisdirectedRequest},
		{"", "http://evil.example", "", http.StatusForbidden},
		{"", "null", "", http.StatusForbidden},
		{"", "", "cross-site", http.StatusForbidden},
		{"picker.internal", "http://picker.internal", "same-origin", 200},
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/offers?limit=1", nil)
		if tt.host != "" {
			req.Host = tt.host
		}
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		if tt.site != "" {
			req.Header.Set("Sec-Fetch-Site", tt.site)
		}
		code, h, body := do(t, req)
		if code != tt.want {
			t.Errorf("Host %q Origin %q Sec-Fetch-Site %q: %d %.200s; want %d", tt.host, tt.origin, tt.site, code, body, tt.want)
		}
		if h.Get("Content-Security-Policy") != "frame-ancestors 'none'" {
			t.Errorf("Content-Security-Policy %q", h.Get("Content-Security-Policy"))
		}
		if h.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("CORS header sent: %q", h.Get("Access-Control-Allow-Origin"))
		}
	}
}

// Issue 18, case 1: with [daemon] token_env every request but /healthz needs the token.
func TestAPIBearerToken(t *testing.T) {
	_, srv := newGuardedAPI(t, "[daemon]\ntoken_env = \"PICKER_API_TOKEN\"\n", map[string]string{"PICKER_API_TOKEN": "team-token-0123"})
	for _, tt := range []struct {
		path, auth string
		want       int
	}{
		{"/v1/offers?limit=1", "", http.StatusUnauthorized},
		{"/v1/offers?limit=1", "Bearer wrong", http.StatusUnauthorized},
		{"/v1/offers?limit=1", "team-token-0123", http.StatusUnauthorized},
		{"/v1/offers?limit=1", "Bearer team-token-0123", 200},
		{"/v1/providers", "Bearer team-token-0123", 200},
		{"/healthz", "", 200},
	} {
		req, _ := http.NewRequest("GET", srv.URL+tt.path, nil)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		code, h, body := do(t, req)
		if code != tt.want {
			t.Errorf("%s with %q: %d %.200s; want %d", tt.path, tt.auth, code, body, tt.want)
		}
		if code == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
			t.Error("401 without WWW-Authenticate")
		}
	}
}

// Issue 18, case 1: the daemon refuses to listen beyond loopback without a token, and
// a token_env naming an empty variable.
func TestDaemonRefusesExposureWithoutToken(t *testing.T) {
	db := tempDB(t)
	r := runCLI(t, db, false, "daemon", "--listen", "0.0.0.0:0")
	if r.code != 2 || !strings.Contains(r.stderr, "token_env") {
		t.Errorf("daemon on 0.0.0.0 without a token: exit %d %q; want 2 naming token_env", r.code, r.stderr)
	}
	a, _ := newTestApp(t, "[daemon]\ntoken_env = \"PICKER_API_TOKEN\"\n", time.Now)
	if err := a.checkExposure(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}); err == nil || !strings.Contains(err.Error(), "PICKER_API_TOKEN") {
		t.Errorf("empty token variable: %v", err)
	}
	a.m.Getenv = func(string) string { return "t0ken-value" }
	if err := a.checkExposure(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 1}); err != nil {
		t.Errorf("non-loopback with a token: %v", err)
	}
}

// Issue 18, case 1: past max_concurrent requests the API answers 503 with Retry-After
// at once instead of queueing without bound; /healthz is never refused for load.
func TestAPIConcurrencyLimit(t *testing.T) {
	g := &guard{hosts: map[string]bool{}, slots: make(chan struct{}, 2)}
	release := make(chan struct{})
	var running atomic.Int32
	h := g.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			running.Add(1)
			<-release
		}
		w.WriteHeader(200)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	done := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := http.Get(srv.URL + "/v1/offers")
			if err == nil {
				resp.Body.Close()
				done <- resp.StatusCode
			} else {
				done <- 0
			}
		}()
	}
	for running.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	code, hdr, body := do(t, mustReq(t, srv.URL+"/v1/offers"))
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(string(body), "max_concurrent") {
		t.Errorf("third request: %d Retry-After %q %s; want 503 with Retry-After", code, hdr.Get("Retry-After"), body)
	}
	if code, _, _ := do(t, mustReq(t, srv.URL+"/healthz")); code != 200 {
		t.Errorf("/healthz under load: %d", code)
	}
	close(release)
	for range 2 {
		if c := <-done; c != 200 {
			t.Errorf("held request: %d", c)
		}
	}
}

func mustReq(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// Issue 18, case 5: the API does not spend HF_TOKEN unless allow_hub; then fetches are
// rate-limited and a failed id is answered from memory.
func TestAPIHubGate(t *testing.T) {
	var hits atomic.Int32
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	defer hub.Close()
	env := map[string]string{"HF_ENDPOINT": hub.URL, "HF_TOKEN": "hf_operator_token", "XDG_CACHE_HOME": t.TempDir()}

	_, off := newGuardedAPI(t, "", env)
	code, body := get(t, off.URL+"/v1/estimate?model=someone/not-a-model")
	if code != http.StatusBadRequest || !strings.Contains(string(body), "allow_hub") || hits.Load() != 0 {
		t.Errorf("allow_hub off: %d %s, %d Hub requests; want 400 naming allow_hub and none", code, body, hits.Load())
	}
	// Catalog names still work.
	if code, body := get(t, off.URL+"/v1/estimate?model=llama-2-7b"); code != 200 {
		t.Errorf("catalog model with allow_hub off: %d %.200s", code, body)
	}

	_, on := newGuardedAPI(t, "[daemon]\nallow_hub = true\n", env)
	for range 3 {
		get(t, on.URL+"/v1/estimate?model=someone/missing")
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the same missing id asked 3 times reached the Hub %d times; want 1 (negative cache)", n)
	}
	var last int
	for i := range hubBurst + 1 {
		last, _ = get(t, on.URL+"/v1/estimate?model=someone/missing-"+string(rune('a'+i)))
	}
	if last != http.StatusServiceUnavailable {
		t.Errorf("fetch %d in a burst: %d; want 503 (rate-limited)", hubBurst+1, last)
	}
	if n := hits.Load(); n > hubBurst {
		t.Errorf("%d Hub requests; want at most %d", n, hubBurst)
	}
}

// Issue 18, case 4: a key stored in refresh_runs.error (by an older version, or echoed
// in an upstream body) is not served by /v1/providers; nor is a secret in API errors.
func TestAPIProvidersRedacted(t *testing.T) {
	const key = "lambda-secret-key-0123456789"
	a, srv := newGuardedAPI(t, "[providers.lambda]\napi_key_env = \"LAMBDA_KEY\"\n", map[string]string{"LAMBDA_KEY": key})
	msg := errors.New("lambda: HTTP 401: invalid key " + key + "; GET https://x/?api_key=other-secret-9876")
	if err := a.st.RecordFailure(context.Background(), "lambda", fixedNow, fixedNow, msg); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, srv.URL+"/v1/providers")
	if code != 200 || strings.Contains(string(body), key) || strings.Contains(string(body), "other-secret-9876") || !strings.Contains(string(body), "[REDACTED]") {
		t.Errorf("/v1/providers = %d, leaks a secret or redacts nothing:\n%.2000s", code, body)
	}
}

// Issue 18, case 11: /healthz says 503 on a database with a corrupt page (it said ok:
// it only read the schema version).
func TestHealthzSeesCorruptPage(t *testing.T) {
	a, _ := newTestApp(t, "", func() time.Time { return fixedNow })
	path := a.st.Path()
	a.st.Close()
	corruptMiddlePage(t, path)
	b, _ := newTestAppAt(t, path)
	srv := httptest.NewServer(b.apiHandler())
	defer srv.Close()
	// The first /healthz starts the probe; it answers "pending" until the probe ends.
	var code int
	var body []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if code, body = get(t, srv.URL+"/healthz"); !strings.Contains(string(body), "pending") {
			break
		}
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "integrity") {
		t.Errorf("/healthz on a corrupt database = %d %s; want 503 naming the integrity check", code, body)
	}
}

// corruptMiddlePage overwrites a page in the middle of the file (a b-tree page of the
// offers, well past the schema in page 1) with garbage.
func corruptMiddlePage(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	const page = 4096
	n := fi.Size() / page
	if n < 8 {
		t.Fatalf("database of %d pages; too small to corrupt a middle one", n)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xde\xad\xbe\xef", page/4)), (n/2)*page); err != nil {
		t.Fatal(err)
	}
}

// newTestAppAt is newTestApp on an existing database file.
func newTestAppAt(t *testing.T, dbPath string) (*app, error) {
	t.Helper()
	a := &app{m: Main{Getenv: func(string) string { return "" }}, stdout: io.Discard, stderr: io.Discard, now: func() time.Time { return fixedNow },
		cfgPath: "", dbPath: dbPath, output: "table", logFormat: "text"}
	a.m.Getenv = func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return t.TempDir()
		}
		return ""
	}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	_, err := a.store(context.Background())
	if a.st != nil {
		t.Cleanup(func() { a.st.Close() })
	}
	return a, err
}
