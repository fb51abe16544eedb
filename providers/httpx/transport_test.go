package httpx

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestTransport: the RoundTripper form of the policy retries what Client.Do retries,
// only for bodiless GETs, and hands the SDK the last status answer when attempts run out.
func TestTransport(t *testing.T) {
	tests := []struct {
		name         string
		method       string
		codes        []int // per attempt; the last repeats
		wantStatus   int
		wantAttempts int32
	}{
		{"503 then 200", http.MethodGet, []int{503, 200}, 200, 2},
		{"429 every time", http.MethodGet, []int{429}, 429, 3},
		{"404 is final", http.MethodGet, []int{404, 200}, 404, 1},
		{"POST is not retried", http.MethodPost, []int{503, 200}, 503, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				w.WriteHeader(tt.codes[min(i, len(tt.codes)-1)])
				io.WriteString(w, "{}")
			}))
			defer srv.Close()
			rec := &recorder{}
			p := testPolicy(rec)
			p.MaxAttempts = 3
			hc := &http.Client{Transport: &Transport{Base: srv.Client().Transport, Policy: p}}
			var body io.Reader
			if tt.method == http.MethodPost {
				body = strings.NewReader("x")
			}
			req, _ := http.NewRequest(tt.method, srv.URL, body)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || n.Load() != tt.wantAttempts {
				t.Errorf("status %d after %d attempts, want %d after %d", resp.StatusCode, n.Load(), tt.wantStatus, tt.wantAttempts)
			}
			if int32(len(rec.d)) != tt.wantAttempts-1 {
				t.Errorf("waits %v, want one per retry", rec.d)
			}
		})
	}
}
