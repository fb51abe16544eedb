// Package httpx is the one HTTP retry policy of picker's HTTP adapters (azure, lambda,
// runpod through Client.Do; gcp's SDK clients through Transport): 429 honouring Retry-After (seconds or HTTP date, capped), 5xx and transport
// failures (timeouts, refused or reset connections, bodies cut short) retried with
// exponential backoff and jitter, a bounded number of attempts, and an immediate stop
// once the context is done. It also reads bodies with a size cap and decodes JSON into
// errors that name the provider and the field where a malformed or truncated body broke.
//
// aws uses its SDK's retryer (the AWS SDK's standard retryer, configured in the adapter).
package httpx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/termsafe"
)

// Defaults of Policy's zero fields.
const (
	DefaultMaxAttempts   = 5
	DefaultBaseDelay     = time.Second
	DefaultMaxDelay      = 30 * time.Second
	DefaultMaxRetryAfter = 2 * time.Minute
	DefaultMaxBodyBytes  = 64 << 20
	// DefaultTimeout bounds one attempt (connect, headers and body) of the default
	// client; a timed-out attempt is retried.
	DefaultTimeout = 2 * time.Minute
)

// Policy is the retry policy. The zero value is usable: every zero field takes its
// default. Tests replace Sleep (and Backoff) so retries cost no wall time.
type Policy struct {
	// MaxAttempts bounds the attempts of one request, the first included.
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt; it doubles per attempt up to
	// MaxDelay.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter caps a server's Retry-After: a longer wait is shortened to it.
	MaxRetryAfter time.Duration
	// Backoff returns the wait before retry number n (1 for the first retry) when the
	// server named none. Default: exponential from BaseDelay, capped at MaxDelay, with
	// "equal jitter" (a uniformly random wait between half and all of the step).
	Backoff func(n int) time.Duration
	// Sleep waits d or until ctx is done, returning ctx's error in the latter case.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now reads the clock for Retry-After HTTP dates. Default time.Now.
	Now func() time.Time
}

func (p Policy) maxAttempts() int {
	if p.MaxAttempts > 0 {
		return p.MaxAttempts
	}
	return DefaultMaxAttempts
}

func (p Policy) maxRetryAfter() time.Duration {
	if p.MaxRetryAfter > 0 {
		return p.MaxRetryAfter
	}
	return DefaultMaxRetryAfter
}

func (p Policy) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// backoff is the wait before retry n when the server gave no Retry-After.
func (p Policy) backoff(n int) time.Duration {
	if p.Backoff != nil {
		return p.Backoff(n)
	}
	base, maxd := p.BaseDelay, p.MaxDelay
	if base <= 0 {
		base = DefaultBaseDelay
	}
	if maxd <= 0 {
		maxd = DefaultMaxDelay
	}
	d := base
	for i := 1; i < n && d < maxd; i++ {
		d *= 2
	}
	d = min(d, maxd)
	half := d / 2
	return half + rand.N(d-half+1)
}

func (p Policy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	return Sleep(ctx, d)
}

// Sleep waits d or until ctx is done, whichever comes first, and returns ctx.Err() in
// the latter case.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RetryAfter parses a Retry-After header value: delay-seconds or an HTTP date, read
// against now. ok is false when the value is absent or unparsable. A date in the past
// means no wait. The result is not capped; Client caps it with Policy.MaxRetryAfter.
func RetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(365*24*time.Hour/time.Second) {
			secs = int64(365 * 24 * time.Hour / time.Second) // guard the multiplication
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Settings collect what adapters let callers inject. Adapters expose them through their
// own New(cfg, opts ...Option).
type Settings struct {
	HTTPClient *http.Client
	Now        func() time.Time
	Policy     Policy
}

// Option changes Settings.
type Option func(*Settings)

// WithHTTPClient sends requests through c (a test server's client, a proxy-aware
// transport, a client with a different timeout).
func WithHTTPClient(c *http.Client) Option { return func(s *Settings) { s.HTTPClient = c } }

// WithClock sets the clock that stamps offers' ObservedAt (and reads Retry-After dates).
func WithClock(now func() time.Time) Option { return func(s *Settings) { s.Now = now } }

// WithSleep replaces the policy's sleep (tests pass one that returns at once and
// records the waits).
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(s *Settings) { s.Policy.Sleep = sleep }
}

// WithBackoff replaces the policy's backoff schedule.
func WithBackoff(backoff func(n int) time.Duration) Option {
	return func(s *Settings) { s.Policy.Backoff = backoff }
}

// Apply returns the settings opts produce, with defaults filled in.
func Apply(opts ...Option) Settings {
	var s Settings
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	s.HTTPClient = SafeClient(s.HTTPClient)
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Policy.Now == nil {
		s.Policy.Now = s.Now
	}
	return s
}

// Client sends one provider's requests under the retry policy.
type Client struct {
	// Provider, when set, starts every error message ("azure: GET ..."). Adapters that
	// add their own context ("azure: eastus: page 2: GET ...") leave it empty.
	Provider string
	HTTP     *http.Client
	Policy   Policy
	// MaxBodyBytes caps a response body; a longer body is an error. Default
	// MaxBodyBytes() ([refresh] max_answer_mib).
	MaxBodyBytes int64
	// UserAgent is sent when set.
	UserAgent string
}

// NewClient returns a client from adapter settings; provider may be "" (see Client).
func NewClient(provider string, s Settings) *Client {
	return &Client{Provider: provider, HTTP: s.HTTPClient, Policy: s.Policy, UserAgent: "picker (+https://github.com/pickergpu/picker)"}
}

func (c *Client) prefix() string {
	if c.Provider == "" {
		return ""
	}
	return c.Provider + ": "
}

// Request is one HTTP request, rebuilt for every attempt so a body can be resent.
type Request struct {
	Method string // default GET
	URL    string
	Header http.Header
	Body   []byte
}

// Response is a successful (2xx) answer with its body read in full.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// StatusError is a non-2xx answer: returned at once for statuses that are not retried
// (most 4xx), or after the last attempt for 429 and 5xx.
type StatusError struct {
	Provider string
	Method   string
	URL      string // without its query string
	Status   int
	// Body is the start of the response body (at most 512 bytes), for the message.
	Body []byte
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
	if e.Provider != "" {
		msg = e.Provider + ": " + msg
	}
	if b := strings.TrimSpace(string(e.Body)); b != "" {
		// The body is the server's text: escaped for the terminal it may be printed on.
		msg += ": " + termsafe.String(strings.Join(strings.Fields(b), " "))
	}
	return msg
}

// Retryable reports whether the status is one the policy retries: 429, 408 and 5xx
// other than 501 (not implemented) and 505 (HTTP version not supported).
func Retryable(status int) bool {
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout:
		return true
	case status == http.StatusNotImplemented, status == http.StatusHTTPVersionNotSupported:
		return false
	case status >= 500 && status <= 599:
		return true
	}
	return false
}

// Do sends r until it gets a 2xx answer, a status that is not retried, a transport
// error that is not transient, or the attempts run out; it returns at once with ctx's
// error (wrapped, coded Unavailable) when ctx is done. Errors name the provider, method
// and URL path (never the query, which may carry a key, nor headers).
func (c *Client) Do(ctx context.Context, r Request) (*Response, error) {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	where := redact(r.URL)
	attempts := c.Policy.maxAttempts()
	var last error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, c.ctxErr(method, where, err, last)
		}
		resp, wait, err := c.once(ctx, method, where, r)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, c.ctxErr(method, where, ctx.Err(), err)
		}
		var re *retryable
		if !errors.As(err, &re) {
			return nil, err
		}
		last = re.err
		if attempt >= attempts {
			return nil, pricing.Errorf(pricing.Unavailable, "%w (gave up after %d attempts)", last, attempt)
		}
		if wait < 0 {
			wait = c.Policy.backoff(attempt)
		}
		if dl, ok := ctx.Deadline(); ok && c.Policy.now().Add(wait).After(dl) {
			return nil, pricing.Errorf(pricing.Unavailable, "%w (a retry in %v would pass the deadline)", last, wait)
		}
		if err := c.Policy.sleep(ctx, wait); err != nil {
			return nil, c.ctxErr(method, where, err, last)
		}
	}
}

func (c *Client) ctxErr(method, where string, err, last error) error {
	if last != nil {
		return pricing.Errorf(pricing.Unavailable, "%s%s %s: %w (last error: %v)", c.prefix(), method, where, err, last)
	}
	return pricing.Errorf(pricing.Unavailable, "%s%s %s: %w", c.prefix(), method, where, err)
}

// retryable marks an attempt's error as worth another attempt.
type retryable struct{ err error }

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// once makes one attempt. wait >= 0 is the server's Retry-After (capped); -1 means
// "use the backoff".
func (c *Client) once(ctx context.Context, method, where string, r Request) (*Response, time.Duration, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, body)
	if err != nil {
		return nil, 0, pricing.Errorf(pricing.Invalid, "%s%s %s: %v", c.prefix(), method, where, stripURL(err))
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if c.UserAgent != "" && req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		err = stripURL(err)
		e := pricing.Errorf(pricing.Unavailable, "%s%s %s: %w", c.prefix(), method, where, err)
		if transient(err) {
			return nil, -1, &retryable{e}
		}
		return nil, 0, e
	}
	defer resp.Body.Close()
	maxBody := c.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = MaxBodyBytes()
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
		se := &StatusError{Provider: c.Provider, Method: method, URL: where, Status: resp.StatusCode, Body: snippet}
		e := pricing.Errorf(pricing.Unavailable, "%w", se)
		if !Retryable(resp.StatusCode) {
			return nil, 0, e
		}
		wait := time.Duration(-1)
		if d, ok := RetryAfter(resp.Header.Get("Retry-After"), c.Policy.now()); ok {
			wait = min(d, c.Policy.maxRetryAfter())
		}
		return nil, wait, &retryable{e}
	}
	b, err := ReadAll(resp.Body, maxBody)
	if err != nil {
		e := pricing.Errorf(pricing.Unavailable, "%s%s %s: reading body: %w", c.prefix(), method, where, stripURL(err))
		if !errors.Is(err, ErrTooLarge) && transient(err) {
			return nil, -1, &retryable{e}
		}
		return nil, 0, e
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, 0, nil
}

// ErrTooLarge is returned by ReadAll when a body exceeds its cap.
var ErrTooLarge = errors.New("body too large")

// ReadAll reads r to its end, failing with ErrTooLarge (wrapped, with the cap) beyond
// maxBytes.
func ReadAll(r io.Reader, maxBytes int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > maxBytes {
		return nil, tooLarge(maxBytes)
	}
	return b, nil
}

// transient reports whether a transport error is worth another attempt: timeouts,
// refused/reset/aborted connections, connections closed early, temporary DNS failures.
// TLS, certificate and malformed-URL errors are not.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// A per-attempt timeout of the http.Client reports DeadlineExceeded only
		// through net.Error below; a context's own end is handled by the caller.
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, target := range []error{io.EOF, io.ErrUnexpectedEOF, syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, target) {
			return true
		}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTemporary || dns.IsTimeout
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// stripURL unwraps *url.Error so messages carry our redacted URL, not the full one
// (whose query could hold a key).
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redact drops the query and user info of a URL for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(bad URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}
