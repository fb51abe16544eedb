package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkAPIRecommendDistinct is the daemon's /v1/recommend answering a different job
// on every request (no answer from its memo), as tools/bench-market.sh's load does, on
// the database PICKER_BENCH_DB names (copied first: a 100k-offer marketplace built by
// bench-market.sh, say); skipped without it. One request at a time, so ns/op is the CPU
// an answer costs the daemon, HTTP routing and JSON included, without the network.
func BenchmarkAPIRecommendDistinct(b *testing.B) {
	src := os.Getenv("PICKER_BENCH_DB")
	if src == "" {
		b.Skip("PICKER_BENCH_DB names no database")
	}
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	db := filepath.Join(b.TempDir(), "bench.db")
	if err := os.WriteFile(db, data, 0o644); err != nil {
		b.Fatal(err)
	}
	a := &app{m: Main{Getenv: func(string) string { return "" }}, stdout: io.Discard, stderr: io.Discard, now: time.Now,
		cfgPath: filepath.Join(b.TempDir(), "none.toml"), dbPath: db, output: "table", logFormat: "text"}
	if err := os.WriteFile(a.cfgPath, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := a.setup(); err != nil {
		b.Fatal(err)
	}
	if _, err := a.store(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer a.st.Close()
	a.log = slog.New(slog.DiscardHandler)
	a.st.CacheOffers(offerCacheSize) // as runDaemon does
	a.recMemo = newRecommendMemo(recommendMemoSize)
	h := a.apiHandler()
	urls := []string{ // bench-market.sh's four kinds of job
		"/v1/recommend?model=llama-2-7b&task=qlora&tokens=%d000000",
		"/v1/recommend?model=llama-2-13b&task=lora&batch=4&tokens=%d00000",
		"/v1/recommend?model=mistral-7b&task=inference&requests=%d&output-tokens=200",
		"/v1/recommend?model=llama-2-70b&task=inference&quant=int8&tokens=%d0000",
	}
	n := 0
	for b.Loop() {
		n++
		r := httptest.NewRequest(http.MethodGet, fmt.Sprintf(urls[n%len(urls)], n), nil)
		r.RemoteAddr, r.Host = "127.0.0.1:1", "127.0.0.1:8080"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d %.300s", r.URL, w.Code, w.Body.String())
		}
	}
}
