package gcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPageTokenLoop: a SKU list whose nextPageToken repeats, or alternates between two
// values, on pages with or without items, ends the fetch with an error that says the
// pagination loops, after a handful of requests (issue 30: it was followed until the
// timeout while picker-fetch grew ~40 MiB/s).
func TestPageTokenLoop(t *testing.T) {
	sku := `{"name":"services/6F81-5844-456A/skus/X","skuId":"X","description":"Nvidia Tesla A100 GPU running in Americas","category":{"resourceFamily":"Compute","resourceGroup":"GPU","usageType":"OnDemand"},"serviceRegions":["us-central1"]}`
	for _, tt := range []struct {
		name   string
		tokens []string
		items  string
	}{
		{"repeat", []string{"again"}, sku},
		{"alternate", []string{"a", "b"}, sku},
		{"empty pages", []string{"again"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeGoogle(t)
			fake.fault = func(w http.ResponseWriter, path string, n int) bool {
				if path != skusPath {
					return false
				}
				io.WriteString(w, fmt.Sprintf(`{"skus":[%s],"nextPageToken":%q}`, tt.items, tt.tokens[n%len(tt.tokens)]))
				return true
			}
			p := newTestProvider(t, fake.serve(t), nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := p.Fetch(ctx)
			if err == nil || !strings.Contains(err.Error(), "pagination loops") || !strings.Contains(err.Error(), "gcp: list skus") {
				t.Fatalf("Fetch: %v; want the loop named", err)
			}
			if n := fake.count(skusPath); n > len(tt.tokens)+1 {
				t.Errorf("%d SKU requests; want at most %d", n, len(tt.tokens)+1)
			}
		})
	}
}

// TestLongRetryAfterReported: a 429 whose Retry-After would pass the fetch's deadline
// is reported as the 429 and its Retry-After at once, not slept into "context deadline
// exceeded" (issue 30).
func TestLongRetryAfterReported(t *testing.T) {
	fake := newFakeGoogle(t)
	fake.fault = func(w http.ResponseWriter, path string, n int) bool {
		if path != skusPath {
			return false
		}
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}`)
		return true
	}
	p := newTestProvider(t, fake.serve(t), nil, WithRetry(4, time.Hour))
	// Slept, the wait would end in the deadline's own error, which the message check
	// refuses; no timing is asserted.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := p.Fetch(ctx)
	if err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), `Retry-After: "3600"`) || !strings.Contains(err.Error(), "pass the deadline") {
		t.Errorf("Fetch: %v; want the 429 and its Retry-After", err)
	}
}
