package providertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pickergpu/picker/providers/httpx"
)

// Serve starts a test server for h (an adapter's fake API), closed when the test ends.
func Serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// Sleeps records the waits of a retry policy instead of sleeping, so retry tests cost
// no wall time and can check each wait. It is safe for concurrent use.
type Sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

// Sleep records d and returns at once (with ctx's error when ctx is done): it is an
// httpx.Policy Sleep.
func (s *Sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

// Waits returns the waits recorded so far.
func (s *Sleeps) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.d)
}

// DoublingBackoff is a deterministic backoff for tests: 1 s before the first retry,
// doubling after, so expected waits can be written down.
func DoublingBackoff(n int) time.Duration { return time.Second << (n - 1) }

// HTTPOptions are the httpx options an HTTP adapter's tests use against srv: srv's
// client, the clock pinned at now, waits recorded in sl (a fresh Sleeps when nil).
func HTTPOptions(srv *httptest.Server, now time.Time, sl *Sleeps) []httpx.Option {
	if sl == nil {
		sl = &Sleeps{}
	}
	return []httpx.Option{
		httpx.WithHTTPClient(srv.Client()),
		httpx.WithClock(func() time.Time { return now }),
		httpx.WithSleep(sl.Sleep),
	}
}
