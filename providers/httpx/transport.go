package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Transport is Policy as an http.RoundTripper, for SDK clients that build their own
// requests (gcp's REST clients) and so cannot go through Client.Do. It retries what
// Client.Do retries, with the same backoff, attempts and Retry-After handling (seconds
// or HTTP date, capped by MaxRetryAfter), plus a 200 whose body is cut short (fewer
// bytes than Content-Length, a read error, or JSON that does not parse), since SDKs do
// not retry a truncated page. It reads each successful body whole, so the SDK gets a
// complete page or an error. Only bodiless GET requests are retried; the last
// retryable status answer is returned as is, for the SDK to turn into its own error.
type Transport struct {
	Base   http.RoundTripper // default http.DefaultTransport
	Policy Policy
	// Ctx, when set, is bound to requests that carry no context: some SDKs build
	// requests with http.NewRequest, which would let a call outlive a cancelled fetch.
	Ctx context.Context
}

// RoundTrip sends req under the policy.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Ctx != nil && req.Context().Done() == nil {
		req = req.WithContext(t.Ctx)
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	ctx := req.Context()
	if req.Body != nil && req.Body != http.NoBody || (req.Method != http.MethodGet && req.Method != "") {
		return base.RoundTrip(req)
	}
	attempts := t.Policy.maxAttempts()
	for attempt := 1; ; attempt++ {
		resp, wait, err := t.once(base, req)
		switch {
		case err == nil:
			return resp, nil
		case ctx.Err() != nil && resp != nil:
			return nil, ctx.Err()
		case ctx.Err() != nil || !isRetryable(err):
			return nil, err // cancelled, or a transport error that is not transient
		}
		if attempt >= attempts {
			if resp != nil {
				return resp, nil
			}
			return nil, fmt.Errorf("%s %s: giving up after %d attempts: %w", req.Method, req.URL.Path, attempt, errors.Unwrap(err))
		}
		if wait < 0 {
			wait = t.Policy.backoff(attempt)
		}
		// A wait that would pass the deadline is not slept: the answer says why now
		// (issue 30: a GCP 429 with a long Retry-After was recorded only as "context
		// deadline exceeded").
		if dl, ok := ctx.Deadline(); ok && t.Policy.now().Add(wait).After(dl) {
			return nil, fmt.Errorf("%s %s: %w%s; a retry in %v would pass the deadline", req.Method, req.URL.Path, errors.Unwrap(err), retryAfterNote(resp), wait)
		}
		if serr := t.Policy.sleep(ctx, wait); serr != nil {
			return nil, fmt.Errorf("%s %s: %w while waiting %v to retry after %v%s", req.Method, req.URL.Path, serr, wait, errors.Unwrap(err), retryAfterNote(resp))
		}
	}
}

// retryAfterNote quotes a retryable answer's Retry-After header, for a message.
func retryAfterNote(resp *http.Response) string {
	if resp == nil || resp.Header.Get("Retry-After") == "" {
		return ""
	}
	v := resp.Header.Get("Retry-After")
	if len(v) > 40 {
		v = v[:40]
	}
	return fmt.Sprintf(" (Retry-After: %q)", v)
}

func isRetryable(err error) bool {
	var re *retryable
	return errors.As(err, &re)
}

// once makes one attempt. A *retryable error means try again; resp is then the
// retryable status answer (body buffered), if there was one. wait is as in Client.once.
func (t *Transport) once(base http.RoundTripper, req *http.Request) (*http.Response, time.Duration, error) {
	resp, err := base.RoundTrip(req)
	if err != nil {
		if transient(err) {
			return nil, -1, &retryable{err}
		}
		return nil, 0, err
	}
	if Retryable(resp.StatusCode) {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		wait := time.Duration(-1)
		if d, ok := RetryAfter(resp.Header.Get("Retry-After"), t.Policy.now()); ok {
			wait = min(d, t.Policy.maxRetryAfter())
		}
		return resp, wait, &retryable{fmt.Errorf("HTTP %d", resp.StatusCode)}
	}
	if resp.StatusCode != http.StatusOK {
		if resp.ContentLength > MaxBodyBytes() {
			resp.Body.Close()
			return nil, 0, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, tooLarge(MaxBodyBytes()))
		}
		return resp, 0, nil
	}
	body, rerr := ReadAll(resp.Body, MaxBodyBytes())
	resp.Body.Close()
	switch {
	case errors.Is(rerr, ErrTooLarge):
		return nil, 0, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, rerr)
	case rerr != nil:
		return nil, -1, &retryable{fmt.Errorf("truncated body: %w", rerr)}
	case resp.ContentLength >= 0 && int64(len(body)) != resp.ContentLength:
		return nil, -1, &retryable{fmt.Errorf("truncated body: %d of %d bytes", len(body), resp.ContentLength)}
	case strings.Contains(resp.Header.Get("Content-Type"), "json") && !json.Valid(body):
		return nil, -1, &retryable{fmt.Errorf("truncated body: %d bytes of invalid JSON", len(body))}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, 0, nil
}
