package httpx

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

var clock = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"-3", 0, false},
		{"soon", 0, false},
		{"1.5", 0, false},
		{clock.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"Sat, 01 Aug 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Saturday, 01-Aug-26 12:01:00 GMT", time.Minute, true},  // RFC 850, which http.ParseTime also reads
		{clock.Add(-time.Hour).Format(http.TimeFormat), 0, true}, // in the past: no wait
		{"99999999999999", 365 * 24 * time.Hour, true},           // absurd: clamped before the cap applies
	}
	for _, tt := range tests {
		got, ok := RetryAfter(tt.in, clock)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestDefaultBackoff(t *testing.T) {
	p := Policy{BaseDelay: time.Second, MaxDelay: 10 * time.Second}
	// step n = 1s, 2s, 4s, 8s, 10s (capped), 10s; the wait is in [step/2, step].
	steps := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for n, step := range steps {
		for range 50 {
			d := p.backoff(n + 1)
			if d < step/2 || d > step {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n+1, d, step/2, step)
			}
		}
	}
	if d := (Policy{}).backoff(1); d < DefaultBaseDelay/2 || d > DefaultBaseDelay {
		t.Errorf("zero policy backoff(1) = %v, want within [%v, %v]", d, DefaultBaseDelay/2, DefaultBaseDelay)
	}
}

func TestSleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep = %v, want context.Canceled", err)
	}
	if time.Since(start) > time.Second {
		t.Error("Sleep with a done context waited")
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep(1ms) = %v", err)
	}
}

type recorder struct {
	mu sync.Mutex
	d  []time.Duration
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.d = append(r.d, d)
	r.mu.Unlock()
	return ctx.Err()
}

func testPolicy(r *recorder) Policy {
	return Policy{Sleep: r.sleep, Backoff: func(n int) time.Duration { return time.Duration(n) * 100 * time.Millisecond }, Now: func() time.Time { return clock }}
}

// script answers attempt n (1-based) with steps[n-1], or the last step for later ones.
type step func(w http.ResponseWriter, r *http.Request)

func status(code int, header ...string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, http.StatusText(code))
	}
}

func ok(body string) step {
	return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }
}

// hangup closes the connection without an answer.
func hangup(w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// short promises 100 bytes and sends 10.
func short(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "100")
	io.WriteString(w, `{"data": [`)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

func TestDo(t *testing.T) {
	tests := []struct {
		name       string
		steps      []step
		wantBody   string // on success
		wantErr    string // substring; "" means success
		wantStatus int    // StatusError.Status reachable from the error, 0 for none
		wantReq    int32
		wantSleeps []time.Duration
	}{
		{name: "200 at once", steps: []step{ok(`{"a":1}`)}, wantBody: `{"a":1}`, wantReq: 1},
		{name: "429 with Retry-After seconds", steps: []step{status(429, "Retry-After", "3"), ok("x")}, wantBody: "x", wantReq: 2,
			wantSleeps: []time.Duration{3 * time.Second}},
		{name: "429 with Retry-After date", steps: []step{status(429, "Retry-After", clock.Add(45*time.Second).Format(http.TimeFormat)), ok("x")},
			wantBody: "x", wantReq: 2, wantSleeps: []time.Duration{45 * time.Second}},
		{name: "429 Retry-After capped", steps: []step{status(429, "Retry-After", "86400"), ok("x")}, wantBody: "x", wantReq: 2,
			wantSleeps: []time.Duration{DefaultMaxRetryAfter}},
		{name: "429 without Retry-After uses the backoff", steps: []step{status(429), status(429), ok("x")}, wantBody: "x", wantReq: 3,
			wantSleeps: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{name: "503 honours its Retry-After too", steps: []step{status(503, "Retry-After", "1"), ok("x")}, wantBody: "x", wantReq: 2,
			wantSleeps: []time.Duration{time.Second}},
		{name: "500s until the bound", steps: []step{status(500)}, wantErr: "/p: HTTP 500 Internal Server Error: Internal Server Error (gave up after 5 attempts)",
			wantStatus: 500, wantReq: 5, wantSleeps: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 400 * time.Millisecond}},
		{name: "404 is not retried", steps: []step{status(404)}, wantErr: "HTTP 404 Not Found", wantStatus: 404, wantReq: 1},
		{name: "501 is not retried", steps: []step{status(501)}, wantErr: "HTTP 501", wantStatus: 501, wantReq: 1},
		{name: "connection closed, then success", steps: []step{hangup, ok("x")}, wantBody: "x", wantReq: 2,
			wantSleeps: []time.Duration{100 * time.Millisecond}},
		{name: "body cut short, then success", steps: []step{short, ok("x")}, wantBody: "x", wantReq: 2,
			wantSleeps: []time.Duration{100 * time.Millisecond}},
		{name: "body over the cap is not retried", steps: []step{ok(strings.Repeat("x", 2000))}, wantErr: "reading body: body too large: more than 1024 bytes", wantReq: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				tt.steps[min(i, len(tt.steps)-1)](w, r)
			}))
			defer srv.Close()
			rec := &recorder{}
			c := &Client{Provider: "test", HTTP: srv.Client(), Policy: testPolicy(rec), MaxBodyBytes: 1024}
			resp, err := c.Do(context.Background(), Request{URL: srv.URL + "/p?api_key=SECRET"})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Do: %v", err)
				}
				if string(resp.Body) != tt.wantBody {
					t.Errorf("body %q, want %q", resp.Body, tt.wantBody)
				}
			} else {
				if err == nil {
					t.Fatal("Do succeeded; want an error")
				}
				if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "test: ") {
					t.Errorf("error %q\nwant it to start with the provider and contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "SECRET") {
					t.Errorf("error %q shows the query string", err)
				}
				var se *StatusError
				if got := errors.As(err, &se); got != (tt.wantStatus != 0) || (got && se.Status != tt.wantStatus) {
					t.Errorf("StatusError in chain = %v (%+v), want status %d", got, se, tt.wantStatus)
				}
				if c := pricing.ErrorCode(err); c != pricing.Unavailable {
					t.Errorf("code %q, want unavailable", c)
				}
			}
			if got := n.Load(); got != tt.wantReq {
				t.Errorf("requests = %d, want %d", got, tt.wantReq)
			}
			if !reflect.DeepEqual(rec.d, tt.wantSleeps) && (len(rec.d) != 0 || len(tt.wantSleeps) != 0) {
				t.Errorf("sleeps = %v, want %v", rec.d, tt.wantSleeps)
			}
		})
	}
}

func TestDoConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	rec := &recorder{}
	c := &Client{Provider: "test", Policy: testPolicy(rec)}
	c.Policy.MaxAttempts = 3
	_, err := c.Do(context.Background(), Request{URL: url})
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Fatalf("Do = %v, want a refused connection given up after 3 attempts", err)
	}
	if len(rec.d) != 2 {
		t.Errorf("sleeps = %v, want 2", rec.d)
	}
}

func TestDoResendsBody(t *testing.T) {
	var bodies []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.Method+" "+string(b)+" "+r.Header.Get("X-Test"))
		n := len(bodies)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	c := &Client{HTTP: srv.Client(), Policy: testPolicy(&recorder{})}
	if _, err := c.Do(context.Background(), Request{Method: "POST", URL: srv.URL, Body: []byte(`{"query":"q"}`), Header: http.Header{"X-Test": {"1"}}}); err != nil {
		t.Fatal(err)
	}
	want := []string{`POST {"query":"q"} 1`, `POST {"query":"q"} 1`}
	if !reflect.DeepEqual(bodies, want) {
		t.Errorf("requests = %q, want %q", bodies, want)
	}
}

// TestDoStopsWhenContextDone: cancellation during a wait returns at once with
// context.Canceled, and a Retry-After beyond the deadline is not waited out at all.
func TestDoStopsWhenContextDone(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()

	t.Run("cancelled while waiting", func(t *testing.T) {
		n.Store(0)
		ctx, cancel := context.WithCancel(context.Background())
		c := &Client{Provider: "test", HTTP: srv.Client(), Policy: Policy{}} // the real Sleep
		go func() {
			for n.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		start := time.Now()
		_, err := c.Do(ctx, Request{URL: srv.URL})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Do = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Do took %v after cancellation", d)
		}
		if !strings.Contains(err.Error(), "HTTP 429") {
			t.Errorf("error %q should mention the last failure", err)
		}
		if got := n.Load(); got != 1 {
			t.Errorf("requests = %d, want 1", got)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		n.Store(0)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := (&Client{HTTP: srv.Client()}).Do(ctx, Request{URL: srv.URL})
		if !errors.Is(err, context.Canceled) || n.Load() != 0 {
			t.Fatalf("Do = %v after %d requests, want context.Canceled and none", err, n.Load())
		}
	})
	t.Run("deadline before the Retry-After", func(t *testing.T) {
		n.Store(0)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec := &recorder{}
		c := &Client{HTTP: srv.Client(), Policy: Policy{Sleep: rec.sleep}}
		_, err := c.Do(ctx, Request{URL: srv.URL})
		if err == nil || !strings.Contains(err.Error(), "a retry in 1m0s would pass the deadline") {
			t.Fatalf("Do = %v, want it to give up before the deadline", err)
		}
		if len(rec.d) != 0 || n.Load() != 1 {
			t.Errorf("slept %v after %d requests; want no sleep after 1", rec.d, n.Load())
		}
	})
}

func TestDecodeJSON(t *testing.T) {
	type row struct {
		Name  string  `json:"name"`
		Price float64 `json:"price"`
	}
	type doc struct {
		Items []row `json:"Items"`
		Next  string
	}
	full := `{"Items": [{"name": "a", "price": 1.5}, {"name": "b", "price": 2.25}], "Next": "x"}`
	tests := []struct {
		name, body, want string
	}{
		{"valid", full, ""},
		{"cut in a number", full[:strings.Index(full, "2.25")+2], "p: page 2: truncated JSON body: ends inside Items[1].price"},
		{"cut after a key", full[:strings.Index(full, `"price": 2.25`)+len(`"price"`)], "ends inside Items[1].price"},
		{"cut between elements", full[:strings.Index(full, `, {"name": "b"`)+1], "ends inside Items"},
		{"cut in a string", full[:strings.Index(full, `"b"`)+2], "ends inside Items[1].name"},
		{"cut at the top", `{"Ite`, "ends inside (top level)"},
		{"wrong type", strings.Replace(full, "2.25", `"2.25"`, 1), "p: page 2: malformed JSON at Items.price: want float64, got string"},
		{"syntax error in the middle", strings.Replace(full, `"price": 2.25`, `"price": 2..25`, 1), "p: page 2: malformed JSON at Items[1].price (byte"},
		{"empty", "  ", "p: page 2: empty body where JSON was expected"},
		{"HTML instead of JSON", "<html>busy</html>", "p: page 2: malformed JSON at (top level) (byte 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d doc
			err := DecodeJSON("p", "page 2", []byte(tt.body), &d)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("DecodeJSON: %v", err)
				}
				if len(d.Items) != 2 || d.Items[1].Price != 2.25 {
					t.Errorf("decoded %+v", d)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DecodeJSON error = %v, want it to contain %q", err, tt.want)
			}
			if c := pricing.ErrorCode(err); c != pricing.Unavailable {
				t.Errorf("code %q, want unavailable", c)
			}
		})
	}
}

func TestPathAt(t *testing.T) {
	body := `{"data": {"gpuTypes": [{"id": "a", "lp": {"bid": 1}}, {"id": "b", "lp": null}]}, "x": [[1, 2], [3]]}`
	tests := []struct{ at, want string }{
		{`"data"`, ""},
		{`"gpuTypes"`, "data"},
		{`"a"`, "data.gpuTypes[0].id"},
		{`1}}`, "data.gpuTypes[0].lp.bid"},
		{`"b"`, "data.gpuTypes[1].id"},
		{`null`, "data.gpuTypes[1].lp"},
		{`3]`, "x[1][0]"},
	}
	for _, tt := range tests {
		off := strings.Index(body, tt.at) + 1
		if got := PathAt([]byte(body), int64(off)); got != tt.want {
			t.Errorf("PathAt(at %q) = %q, want %q", tt.at, got, tt.want)
		}
	}
}

func TestBaseURL(t *testing.T) {
	tests := []struct{ endpoint, want, err string }{
		{"", "https://example.test", ""},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080", ""},
		{"https://proxy.internal/lambda//", "https://proxy.internal/lambda", ""},
		{"localhost:8080", "", "want an absolute http:// or https:// URL"},
		{"ftp://x", "", "want an absolute"},
		{"http://x/?a=1", "", "takes no query"},
	}
	for _, tt := range tests {
		u, err := BaseURL("p", tt.endpoint, "https://example.test")
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || pricing.ErrorCode(err) != pricing.Invalid {
				t.Errorf("BaseURL(%q) error = %v, want invalid %q", tt.endpoint, err, tt.err)
			}
			continue
		}
		if err != nil || u.String() != tt.want {
			t.Errorf("BaseURL(%q) = %v, %v; want %q", tt.endpoint, u, err, tt.want)
		}
	}
}

func TestAPIKey(t *testing.T) {
	t.Setenv("PICKER_TEST_KEY", " k3y ")
	t.Setenv("PICKER_TEST_EMPTY", "")
	if k, err := APIKey("p", "PICKER_TEST_KEY", true); err != nil || k != "k3y" {
		t.Errorf("APIKey = %q, %v", k, err)
	}
	if k, err := APIKey("p", "PICKER_TEST_EMPTY", false); err != nil || k != "" {
		t.Errorf("optional empty key = %q, %v", k, err)
	}
	_, err := APIKey("lambda", "PICKER_TEST_EMPTY", true)
	if err == nil || !strings.Contains(err.Error(), "PICKER_TEST_EMPTY") || pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("required empty key: %v, want an invalid error naming the variable", err)
	}
	if _, err := APIKey("lambda", "", true); err == nil || !strings.Contains(err.Error(), "api_key_env") {
		t.Errorf("no variable named: %v", err)
	}
}
