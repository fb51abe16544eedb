package gcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryTransport is the explicit retry policy of the compute and billing REST list
// calls, which the client libraries would otherwise not retry (compute's gax defaults
// cover only 503/504, billing's none, and no library retries a truncated body).
//
// It retries, with exponential jittered backoff capped at maxBackoff (a Retry-After
// header is honoured up to that cap): transport errors, HTTP 429 and 5xx, and a 200
// whose body is cut short (fewer bytes than Content-Length, a read error, or JSON that
// does not parse). It reads each successful body whole, so the caller gets a complete
// page or an error. It stops at once when the request's context is done. Only
// idempotent, bodiless requests (the GET list calls) are retried.
//
// The apiv1 REST clients build their requests without a context (http.NewRequest), so
// an in-flight call would outlive a cancelled fetch: ctx, the fetch's context, is bound
// to every request that carries none.
type retryTransport struct {
	ctx         context.Context
	base        http.RoundTripper
	maxAttempts int
	maxBackoff  time.Duration
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.ctx != nil && req.Context().Done() == nil {
		req = req.WithContext(t.ctx)
	}
	ctx := req.Context()
	if req.Body != nil && req.Body != http.NoBody || (req.Method != http.MethodGet && req.Method != "") {
		return t.base.RoundTrip(req)
	}
	var lastErr error
	for attempt := 1; ; attempt++ {
		resp, err := t.base.RoundTrip(req)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, err
			}
			lastErr = err
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			if attempt >= t.maxAttempts {
				return resp, nil // the client library turns it into a googleapi.Error
			}
			wait = retryAfter(resp.Header.Get("Retry-After"))
			lastErr = fmt.Errorf("HTTP %d", resp.StatusCode)
		case resp.StatusCode == http.StatusOK:
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case rerr != nil:
				lastErr = fmt.Errorf("truncated body: %w", rerr)
			case resp.ContentLength >= 0 && int64(len(body)) != resp.ContentLength:
				lastErr = fmt.Errorf("truncated body: %d of %d bytes", len(body), resp.ContentLength)
			case strings.Contains(resp.Header.Get("Content-Type"), "json") && !json.Valid(body):
				lastErr = fmt.Errorf("truncated body: %d bytes of invalid JSON", len(body))
			default:
				resp.Body = io.NopCloser(bytes.NewReader(body))
				return resp, nil
			}
		default:
			return resp, nil
		}
		if attempt >= t.maxAttempts {
			return nil, fmt.Errorf("%s %s: giving up after %d attempts: %w", req.Method, req.URL.Path, attempt, lastErr)
		}
		backoff := t.backoff(attempt)
		if wait > 0 {
			backoff = min(wait, t.maxBackoff)
		}
		if err := sleep(ctx, backoff); err != nil {
			return nil, err
		}
	}
}

// backoff is full jitter over 100ms·2^(attempt-1), capped at maxBackoff.
func (t *retryTransport) backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt-1, 20)
	d = min(d, t.maxBackoff)
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

func retryAfter(h string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// apiKeyTransport sends the Cloud Billing API key the way Google's client libraries do
// (the X-Goog-Api-Key header), so it never appears in URLs or logs.
type apiKeyTransport struct {
	base http.RoundTripper
	key  string
}

func (t *apiKeyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("X-Goog-Api-Key", t.key)
	return t.base.RoundTrip(r)
}
