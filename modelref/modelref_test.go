package modelref

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

const tinyLlamaConfig = `{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,
"num_key_value_heads":2,"intermediate_size":128,"vocab_size":1000,"max_position_embeddings":512}`

// hub is a fake Hugging Face Hub: /acme/tiny serves a config, /acme/gated needs a token.
func hub(t *testing.T, hits *atomic.Int32, gotAuth *atomic.Value) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		gotAuth.Store(r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/acme/tiny/resolve/main/config.json":
			w.Write([]byte(tinyLlamaConfig))
		case "/acme/gated/resolve/main/config.json":
			if r.Header.Get("Authorization") != "Bearer good" {
				http.Error(w, "gated", http.StatusUnauthorized)
				return
			}
			w.Write([]byte(tinyLlamaConfig))
		case "/acme/broken/resolve/main/config.json":
			w.Write([]byte(`{"model_type":"llama","hidden_size":64}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestResolveHubFetchAndCache(t *testing.T) {
	var hits atomic.Int32
	var auth atomic.Value
	srv := hub(t, &hits, &auth)
	cache := t.TempDir()
	opt := Options{Endpoint: srv.URL, Token: "tok", CacheDir: cache, Client: srv.Client()}

	m, err := Resolve(context.Background(), "acme/tiny", "", opt)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != "hub" || m.HFID != "acme/tiny" || m.Architecture != "llama" {
		t.Errorf("model = %+v", m)
	}
	if got := auth.Load(); got != "Bearer tok" {
		t.Errorf("Authorization = %q, want Bearer tok", got)
	}
	if !strings.Contains(strings.Join(m.Notes, " "), "fetched from "+srv.URL) {
		t.Errorf("notes %q do not say it was fetched", m.Notes)
	}
	if _, err := os.Stat(filepath.Join(cache, "acme", "tiny", "config.json")); err != nil {
		t.Errorf("not cached: %v", err)
	}

	// Second resolution: from the cache, no request.
	before := hits.Load()
	m2, err := Resolve(context.Background(), "acme/tiny", "", opt)
	if err != nil {
		t.Fatal(err)
	}
	if hits.Load() != before {
		t.Errorf("cache hit still requested the Hub")
	}
	if m2.Source != "hub-cache" || !strings.Contains(strings.Join(m2.Notes, " "), "cache") {
		t.Errorf("second resolution source %q notes %q", m2.Source, m2.Notes)
	}
	if m2.Params() != m.Params() {
		t.Errorf("cached params %d != fetched %d", m2.Params(), m.Params())
	}
	// The estimate carries the note.
	res, err := fit.Estimate(m2, fit.Job{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.Assumptions, " "), "not in the catalog") {
		t.Errorf("assumptions %q lack the Hub note", res.Assumptions)
	}
}

func TestResolveHubErrors(t *testing.T) {
	var hits atomic.Int32
	var auth atomic.Value
	srv := hub(t, &hits, &auth)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close() // connection refused from now on

	tests := []struct {
		name, ref string
		opt       Options
		code      pricing.Code
		want      []string
	}{
		{"gated without token", "acme/gated", Options{Endpoint: srv.URL}, pricing.Invalid,
			[]string{"gated", "HTTP 401", "HF_TOKEN", "--model path/to/config.json"}},
		{"gated wrong token", "acme/gated", Options{Endpoint: srv.URL, Token: "bad"}, pricing.Invalid,
			[]string{"gated", "--model path/to/config.json"}},
		{"server down", "acme/tiny", Options{Endpoint: downURL}, pricing.Invalid,
			[]string{"could not be reached", "--model path/to/config.json"}},
		{"not on the hub", "acme/nothing", Options{Endpoint: srv.URL}, pricing.NotFound,
			[]string{"HTTP 404", "closest catalog names"}},
		{"malformed config", "acme/broken", Options{Endpoint: srv.URL}, pricing.Invalid,
			[]string{`"num_hidden_layers"`}},
		{"unknown name", "lama-2-7b", Options{Endpoint: downURL}, pricing.NotFound,
			[]string{`unknown model "lama-2-7b"`, "llama-2-7b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(context.Background(), tt.ref, "", tt.opt)
			if err == nil {
				t.Fatal("no error")
			}
			if c := pricing.ErrorCode(err); c != tt.code {
				t.Errorf("code %s, want %s (%v)", c, tt.code, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// With the right token the gated model resolves.
	if _, err := Resolve(context.Background(), "acme/gated", "", Options{Endpoint: srv.URL, Token: "good"}); err != nil {
		t.Errorf("gated with token: %v", err)
	}
}

func TestResolveLocalAndParams(t *testing.T) {
	offline := Options{Endpoint: "http://127.0.0.1:1"}
	dir := t.TempDir()
	path := filepath.Join(dir, "my-model", "config.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(tinyLlamaConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref, source, name string
		params            int64
	}{
		{path, "file", "my-model", 0},
		{filepath.Dir(path), "file", "my-model", 0},
		{"Meta-Llama/LLAMA-2-7B-HF", "catalog", "llama-2-7b", 6738415616},
		{"LLAMA-2-7B", "catalog", "llama-2-7b", 6738415616},
		{"7b", "params", "7b", 7_000_000_000},
		{"6.74e9", "params", "6.74e9", 6_740_000_000},
	}
	for _, tt := range tests {
		m, err := Resolve(context.Background(), tt.ref, "", offline)
		if err != nil {
			t.Errorf("%s: %v", tt.ref, err)
			continue
		}
		if m.Source != tt.source || m.Name != tt.name || (tt.params != 0 && m.Params() != tt.params) {
			t.Errorf("%s: source %s name %s params %d", tt.ref, m.Source, m.Name, m.Params())
		}
	}
	if m, err := Resolve(context.Background(), "", "13b", Options{}); err != nil || m.Params() != 13e9 {
		t.Errorf("--params 13b: %v", err)
	}
	for _, bad := range []string{"", "/nonexistent/config.json"} {
		if _, err := Resolve(context.Background(), bad, "", offline); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := model.ParseParamCount("seven"); err == nil {
		t.Error("ParseParamCount(seven): no error")
	}
}

// IsPath is the one "is this a file" test: the CLI reads such a --model, the API refuses it.
func TestIsPath(t *testing.T) {
	dir := t.TempDir()
	withCfg := filepath.Join(dir, "with")
	if err := os.MkdirAll(withCfg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withCfg, "config.json"), []byte(tinyLlamaConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ref  string
		want bool
	}{
		{"llama-2-7b", false}, {"meta-llama/Llama-2-7b-hf", false}, {"7b", false},
		{"config.json", true}, {"./x", true}, {"../config.json", true}, {"/etc/passwd", true}, {"~/m", true}, {`C:\m\config.json`, true},
		{withCfg, true}, {dir, true}, // absolute paths
	} {
		if got := IsPath(tt.ref); got != tt.want {
			t.Errorf("IsPath(%q) = %v, want %v", tt.ref, got, tt.want)
		}
	}
}

// Every resolver error names the parameter it is about, so the API never parses messages.
func TestResolveErrorsNameTheParameter(t *testing.T) {
	offline := Options{Endpoint: "http://127.0.0.1:1"}
	for _, tt := range []struct{ ref, params, want string }{
		{"lama-2-7b", "", "model"},
		{"/nonexistent/config.json", "", "model"},
		{"", "", "model"}, // neither given: pass --model
		{"", "seven", "params"},
	} {
		_, err := Resolve(context.Background(), tt.ref, tt.params, offline)
		if got := pricing.ErrorParam(err); got != tt.want {
			t.Errorf("Resolve(%q, %q): param %q (%v), want %q", tt.ref, tt.params, got, err, tt.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var hits atomic.Int32
	var auth atomic.Value
	srv := hub(t, &hits, &auth)
	if _, err := Resolve(ctx, "acme/tiny", "", Options{Endpoint: srv.URL}); !errors.Is(err, context.Canceled) || pricing.ErrorParam(err) != "" {
		t.Errorf("cancelled fetch: %v; want context.Canceled, no parameter", err)
	}
}
