package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs /metrics and parses it as Prometheus' text format.
func scrape(t *testing.T, url string, auth string) map[string]*dto.MetricFamily {
	t.Helper()
	req := mustReq(t, url+"/metrics")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	code, h, body := do(t, req)
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %q %.300s", code, h.Get("Content-Type"), body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v\n%.500s", err, body)
	}
	return fams
}

// metricValue is the value of name's sample whose labels include want (counter,
// gauge, or a histogram's count), and whether there is one.
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// Issue 25, item 2: /metrics after real refreshes (one provider answering from its
// fixtures, one failing) and a few requests counts exactly what happened, by route
// pattern, and nothing else.
func TestMetricsAfterRefreshAndRequests(t *testing.T) {
	_, lm, rp := fakeClouds(t, true) // Lambda answers 500
	cfg := fmt.Sprintf("[providers.lambda]\nenabled = true\nendpoint = %q\napi_key_env = \"PICKER_TEST_LAMBDA_KEY\"\n\n[providers.runpod]\nenabled = true\nendpoint = %q\n", lm.URL, rp.URL)
	a, _ := newTestApp(t, cfg, time.Now)
	a.m.Getenv = func(k string) string {
		if k == "PICKER_TEST_LAMBDA_KEY" {
			return "secret-lambda-key"
		}
		return ""
	}
	a.red = nil
	a.st.CacheOffers(offerCacheSize)
	a.recMemo = newRecommendMemo(recommendMemoSize)
	srv := httptest.NewServer(a.apiHandler())
	defer srv.Close()

	jobs, err := a.refreshJobs([]string{"runpod", "lambda"})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		err := a.refreshTask(a.st, j)(context.Background())
		if (err != nil) != (j.Name == "lambda") {
			t.Fatalf("refresh %s: %v", j.Name, err)
		}
	}
	for _, r := range []struct {
		path string
		want int
	}{
		{"/v1/providers", 200},
		{"/v1/providers", 200},
		{"/v1/recommend?model=llama-2-7b&task=qlora&batch=4&top=3", 200}, // computed
		{"/v1/recommend?model=llama-2-7b&task=qlora&batch=4&top=3", 200}, // from the memo
		{"/v1/offers?no-such-flag=1", 400},
		{"/v1/offers?provider=runpod&limit=2", 200},
		{"/v1/nothing-here/12345", 404},
		{"/healthz", 200},
	} {
		if code, body := get(t, srv.URL+r.path); code != r.want {
			t.Fatalf("%s: %d %.200s; want %d", r.path, code, body, r.want)
		}
	}
	fams := scrape(t, srv.URL, "")

	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"picker_http_requests_total", map[string]string{"route": "/v1/providers", "code": "200"}, 2},
		{"picker_http_requests_total", map[string]string{"route": "/v1/recommend", "code": "200"}, 2},
		{"picker_http_requests_total", map[string]string{"route": "/v1/offers", "code": "400"}, 1},
		{"picker_http_requests_total", map[string]string{"route": "/v1/offers", "code": "200"}, 1},
		{"picker_http_requests_total", map[string]string{"route": "/", "code": "404"}, 1},
		{"picker_http_requests_total", map[string]string{"route": "/healthz", "code": "200"}, 1},
		{"picker_http_request_duration_seconds", map[string]string{"route": "/v1/providers"}, 2},
		{"picker_http_request_duration_seconds", map[string]string{"route": "/v1/offers"}, 2},
		{"picker_refresh_runs_total", map[string]string{"provider": "runpod", "outcome": "ok"}, 1},
		{"picker_refresh_runs_total", map[string]string{"provider": "lambda", "outcome": "failed"}, 1},
		{"picker_refresh_duration_seconds", map[string]string{"provider": "runpod"}, 1},
		{"picker_refresh_duration_seconds", map[string]string{"provider": "lambda"}, 1},
		{"picker_provider_consecutive_failures", map[string]string{"provider": "lambda"}, 1},
		{"picker_provider_consecutive_failures", map[string]string{"provider": "runpod"}, 0},
		{"picker_recommend_memo_hits_total", nil, 1},
		{"picker_recommend_memo_misses_total", nil, 1},
		{"picker_http_busy_rejections_total", nil, 0},
	} {
		got, ok := metricValue(fams, c.name, c.labels)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v); want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	// The scrape itself is not yet counted in the scrape it answers.
	if _, ok := metricValue(fams, "picker_http_requests_total", map[string]string{"route": "/metrics"}); ok {
		t.Error("the scrape counted itself")
	}
	if n, ok := metricValue(fams, "picker_provider_offers", map[string]string{"provider": "runpod"}); !ok || n <= 0 {
		t.Errorf("picker_provider_offers{runpod} = %v (present %v); want the refreshed offers", n, ok)
	}
	if age, ok := metricValue(fams, "picker_provider_price_age_seconds", map[string]string{"provider": "runpod"}); !ok || age < 0 || age > 600 {
		t.Errorf("picker_provider_price_age_seconds{runpod} = %v (present %v); want the seconds since the refresh", age, ok)
	}
	// Bounded labels: routes are mux patterns, never the raw path asked.
	routes := map[string]bool{}
	for _, m := range fams["picker_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" {
				routes[l.GetValue()] = true
			}
		}
	}
	for r := range routes {
		if strings.Contains(r, "12345") || strings.Contains(r, "?") {
			t.Errorf("route label %q is a raw path", r)
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("no %s: the Go and process collectors are registered", name)
		}
	}
	// A second scrape sees the first.
	fams = scrape(t, srv.URL, "")
	if n, _ := metricValue(fams, "picker_http_requests_total", map[string]string{"route": "/metrics", "code": "200"}); n != 1 {
		t.Errorf("scrapes counted %v; want 1", n)
	}
}

// /metrics is behind the API's guard: the token when one is configured, the Host and
// Origin checks.
func TestMetricsGuarded(t *testing.T) {
	_, srv := newGuardedAPI(t, "[daemon]\ntoken_env = \"PICKER_API_TOKEN\"\n", map[string]string{"PICKER_API_TOKEN": "team-token-0123"})
	if code, _, _ := do(t, mustReq(t, srv.URL+"/metrics")); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d; want 401", code)
	}
	req := mustReq(t, srv.URL+"/metrics")
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer team-token-0123")
	if code, _, _ := do(t, req); code != http.StatusMisdirectedRequest {
		t.Errorf("/metrics for another Host: %d; want 421", code)
	}
	req = mustReq(t, srv.URL+"/metrics")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Authorization", "Bearer team-token-0123")
	if code, _, _ := do(t, req); code != http.StatusForbidden {
		t.Errorf("/metrics cross-origin: %d; want 403", code)
	}
	fams := scrape(t, srv.URL, "Bearer team-token-0123")
	if n, _ := metricValue(fams, "picker_http_requests_total", map[string]string{"route": "/metrics", "code": "401"}); n != 1 {
		t.Errorf("refused scrapes counted %v with 401; want 1", n)
	}
}

// The concurrency limit's 503s are counted.
func TestMetricsBusyRejections(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		http.NotFound(w, r)
	}))
	defer hub.Close()
	defer close(release)
	env := map[string]string{"HF_ENDPOINT": hub.URL, "XDG_CACHE_HOME": t.TempDir()}
	_, srv := newGuardedAPI(t, "[daemon]\nallow_hub = true\nmax_concurrent = 1\n", env)
	held := make(chan int, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/v1/estimate?model=someone/slow-model")
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	select {
	case <-entered:
	case <-time.After(raceSlowdown * 10 * time.Second):
		t.Fatal("the held request never reached the Hub")
	}
	if code, body := get(t, srv.URL+"/v1/providers"); code != http.StatusServiceUnavailable {
		t.Fatalf("second request with max_concurrent 1: %d %.200s; want 503", code, body)
	}
	release <- struct{}{}
	<-held
	fams := scrape(t, srv.URL, "")
	if n, _ := metricValue(fams, "picker_http_busy_rejections_total", nil); n != 1 {
		t.Errorf("picker_http_busy_rejections_total = %v; want 1", n)
	}
	if n, _ := metricValue(fams, "picker_http_requests_total", map[string]string{"route": "/v1/providers", "code": "503"}); n != 1 {
		t.Errorf("503s of /v1/providers counted %v; want 1", n)
	}
}
