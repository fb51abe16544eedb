package httpx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// maxBody is the process-wide cap on one provider answer, set once from
// [refresh] max_answer_mib (SetMaxBodyBytes); 0 means DefaultMaxBodyBytes. One knob
// covers every adapter: Client.Do, Transport (gcp's SDK clients) and LimitBody (aws's
// SDK client).
var maxBody atomic.Int64

// SetMaxBodyBytes sets the cap on every provider answer; n <= 0 restores the default.
func SetMaxBodyBytes(n int64) { maxBody.Store(max(n, 0)) }

// MaxBodyBytes is the cap on one provider answer.
func MaxBodyBytes() int64 {
	if n := maxBody.Load(); n > 0 {
		return n
	}
	return DefaultMaxBodyBytes
}

// tooLarge is the error of an answer over the cap: it names the cap and the key that
// raises it.
func tooLarge(limit int64) error {
	return fmt.Errorf("%w: more than %d bytes (the answer cap, set by [refresh] max_answer_mib)", ErrTooLarge, limit)
}

// LimitBody wraps base so that every response body errors with ErrTooLarge past
// MaxBodyBytes (read when the response arrives): for SDK clients (aws) that read bodies
// themselves. A Content-Length over the cap fails at once.
func LimitBody(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		limit := MaxBodyBytes()
		if resp.ContentLength > limit {
			resp.Body.Close()
			return nil, tooLarge(limit)
		}
		resp.Body = &capped{rc: resp.Body, left: limit, limit: limit}
		return resp, nil
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// capped fails a read once more than limit bytes have been read.
type capped struct {
	rc          io.ReadCloser
	left, limit int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, tooLarge(c.limit)
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, tooLarge(c.limit)
	}
	return n, err
}

func (c *capped) Close() error { return c.rc.Close() }

// ErrCrossHostRedirect is returned for a redirect to another host: credentials that a
// transport adds to every request (an API key parameter, an OAuth bearer, a SigV4
// signature) must never reach it.
var ErrCrossHostRedirect = errors.New("redirect to another host refused (credentials are never sent across hosts)")

// CheckRedirect is the redirect policy of every adapter's HTTP client: at most 5
// redirects, all to the first request's scheme and host.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("stopped after 5 redirects")
	}
	first := via[0].URL
	if req.URL.Host != first.Host || req.URL.Scheme != first.Scheme {
		return fmt.Errorf("%w: %s://%s to %s://%s", ErrCrossHostRedirect, first.Scheme, first.Host, req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// SafeClient returns c (a new default client when nil) with the adapters' redirect
// policy: a copy when c has its own CheckRedirect unset, so a caller's client is not
// changed.
func SafeClient(c *http.Client) *http.Client {
	if c == nil {
		return &http.Client{Timeout: DefaultTimeout, CheckRedirect: CheckRedirect}
	}
	if c.CheckRedirect != nil {
		return c
	}
	cc := *c
	cc.CheckRedirect = CheckRedirect
	return &cc
}

// Wait sleeps before retry n (1 for the first retry) as the policy would after a
// failed attempt: the backoff, or until ctx is done. For answers the adapter judges
// transient itself (a GraphQL error inside an HTTP 200).
func (p Policy) Wait(ctx context.Context, n int) error { return p.sleep(ctx, p.backoff(n)) }

// Attempts is the policy's bound on attempts, the first included.
func (p Policy) Attempts() int { return p.maxAttempts() }
