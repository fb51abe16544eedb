package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/pickergpu/picker/modelref"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/web"
)

// The daemon's HTTP API. Every /v1 endpoint binds its query parameters with the same
// params and binder as the CLI command of the same name and calls the same run function,
// then writes the result as `picker <command> -o json` does, so a response body is byte
// for byte the CLI's JSON and a parameter means exactly what the flag means. Errors are
// JSON too: {"error": "...", "parameter": "name"}, the parameter taken from the error's
// pricing.Error.Param.

// Server timeouts: a slow or idle client cannot hold a connection or a goroutine.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	// requestTimeout bounds a handler's work (store queries, the recommender, a
	// Hugging Face config fetch); it is less than writeTimeout so the error reaches
	// the client.
	requestTimeout = 45 * time.Second
	maxHeaderBytes = 64 << 10
)

// apiRoutes are the endpoints. serve binds the checked query and runs the command; a
// non-nil result is the body even when err is set (nothing fits).
var apiRoutes = []struct {
	path  string
	serve func(a *app, ctx context.Context, q url.Values) (any, error)
}{
	{"/v1/offers", func(a *app, ctx context.Context, q url.Values) (any, error) {
		o := a.newOffersOptions()
		if err := bindQuery(q, o.params()); err != nil {
			return nil, err
		}
		if _, given := q["limit"]; !given {
			o.Limit = defaultAPILimit
		} else if o.Limit == 0 {
			return nil, pricing.ParamErrorf(pricing.Invalid, "limit", "parameter \"limit\" 0 (all offers): the API serves at most %d per request; follow the Link header's next page, or narrow the filters", maxAPILimit)
		}
		p, err := RunOffersPage(ctx, o)
		if err != nil {
			return nil, err
		}
		return apiOffersPage{p, q, o.Hint}, nil
	}},
	{"/v1/estimate", func(a *app, ctx context.Context, q url.Values) (any, error) {
		o := a.newEstimateOptions()
		o.Resolve = a.apiResolveModel
		if err := bindJobQuery(q, o.params(), &o.JobRequest); err != nil {
			return nil, err
		}
		res, err := RunEstimate(ctx, o)
		if err != nil {
			return nil, err
		}
		return newEstimateAnswer(res, o.HeadroomPct), nil
	}},
	{"/v1/recommend", func(a *app, ctx context.Context, q url.Values) (any, error) {
		o := a.newRecommendOptions()
		o.Resolve = a.apiResolveModel
		if err := bindJobQuery(q, o.params(), &o.JobRequest); err != nil {
			return nil, err
		}
		out, err := RunRecommend(ctx, o)
		if err != nil {
			return nil, err
		}
		return out, noFit(out)
	}},
	{"/v1/providers", func(a *app, ctx context.Context, q url.Values) (any, error) {
		if err := bindQuery(q, nil); err != nil {
			return nil, err
		}
		return a.providerRows(ctx)
	}},
	{"/v1/watches", func(a *app, ctx context.Context, q url.Values) (any, error) {
		if err := bindQuery(q, nil); err != nil {
			return nil, err
		}
		return a.watch.views(), nil
	}},
}

// bindQuery checks q against ps (unknown names, repeated scalars, the API's caps) and
// binds it.
func bindQuery(q url.Values, ps []param) error {
	if err := CheckValues(q, ps); err != nil {
		return err
	}
	if err := checkAPICaps(q, ps); err != nil {
		return err
	}
	return BindParams(ps, QueryLookup(q))
}

// bindJobQuery is bindQuery for a command with a job, refusing a model that names a
// file: the API never reads the daemon's files.
func bindJobQuery(q url.Values, ps []param, job *JobRequest) error {
	if err := bindQuery(q, ps); err != nil {
		return err
	}
	return checkModelRef(job.Model)
}

// checkModelRef refuses a model that names a file: the API never reads local paths.
func checkModelRef(model string) error {
	if model != "" && modelref.IsPath(model) {
		return pricing.ParamErrorf(pricing.Invalid, "model", "parameter \"model\" %q: the API does not read files; pass a catalog name or a Hugging Face id", model)
	}
	return nil
}

// apiHandler serves the API, and the web pages at /, over a's store, which must be open (runDaemon opens it
// before serving so that every request shares it), behind the guard built for
// [daemon] listen (runDaemon passes the address it listens on).
func (a *app) apiHandler() http.Handler { return a.apiHandlerFor(a.cfg.Daemon.Listen) }

func (a *app) apiHandlerFor(listen string) http.Handler {
	if a.hub == nil {
		a.hub = newHubGate(a.cfg.Daemon.AllowHub, a.now)
	}
	mux := http.NewServeMux()
	known := map[string]bool{"/healthz": true, "/metrics": true, openAPIPath: true}
	mux.HandleFunc("GET /healthz", a.handleHealth)
	mux.Handle("GET /metrics", a.mx().handler())
	for _, r := range apiRoutes {
		mux.Handle("GET "+r.path, a.commandHandler(r.serve))
		known[r.path] = true
	}
	// The web pages answer every other path, except under /v1/, which stays JSON.
	pages := web.Handler(webBackend{a}, web.Options{Now: a.now, APIBase: "/v1", Log: a.log})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if known[r.URL.Path] {
			w.Header().Set("Allow", "GET, HEAD")
			writeAPIError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; use GET", r.Method), "")
			return
		}
		if strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/v1" {
			writeAPIError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s; see /healthz, /metrics, /v1/openapi.json, /v1/offers, /v1/estimate, /v1/recommend, /v1/providers", r.URL.Path), "")
			return
		}
		pages.ServeHTTP(w, r)
	})
	g := a.newGuard(listen)
	// What a request to each route may say, checked before it waits for a slot.
	g.params = map[string][]param{
		"/v1/offers":    a.newOffersOptions().params(),
		"/v1/estimate":  a.newEstimateOptions().params(),
		"/v1/recommend": a.newRecommendOptions().params(),
		"/v1/providers": nil,
	}
	mux.Handle("GET "+openAPIPath, openAPIHandler(g.params)) // described from the params bound
	g.busy = a.mx().busy.Inc
	return a.mx().instrument(mux, a.accessLog(g.wrap(mux)))
}

// commandHandler runs serve for each request under requestTimeout and writes its result
// as the CLI's JSON, or the error with its status and parameter.
func (a *app) commandHandler(serve func(*app, context.Context, url.Values) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		q, err := parseQuery(r.URL.RawQuery)
		var res any
		if err == nil {
			res, err = serve(a, ctx, q)
		}
		if page, ok := res.(apiOffersPage); ok && err == nil {
			// Streamed: the answer's memory is the offers, not a second copy as JSON.
			page.setHeaders(w.Header())
			streamJSONArray(w, page.Offers)
			return
		}
		var body bytes.Buffer
		if res != nil {
			if jerr := writeJSON(&body, res); jerr != nil && err == nil {
				err = jerr
			}
		}
		if err == nil {
			writeJSONBody(w, http.StatusOK, body.Bytes())
			return
		}
		var nf noFitError
		status := http.StatusInternalServerError
		switch {
		case errors.As(err, &nf):
			// Like exit 3: the body is the command's JSON (estimate, empty offers,
			// ladder, nearest_miss) with the nearest miss as the error.
			writeJSONBody(w, http.StatusNotFound, withError(body.Bytes(), err.Error()))
			return
		case ctx.Err() != nil && r.Context().Err() == nil:
			status = http.StatusServiceUnavailable
			err = fmt.Errorf("request took longer than %v: %w", requestTimeout, err)
		default:
			switch pricing.ErrorCode(err) {
			case pricing.Invalid, pricing.NotFound:
				status = http.StatusBadRequest
			case pricing.Unavailable:
				status = http.StatusServiceUnavailable
			}
		}
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "5")
		}
		msg := a.redactor().String(err.Error())
		if status >= 500 {
			a.log.Error("request failed", "path", r.URL.Path, "query", a.redactor().String(r.URL.RawQuery), "error", msg)
		}
		writeAPIError(w, status, msg, pricing.ErrorParam(err))
	}
}

// streamJSONArray writes v as writeJSON would (the CLI's -o json, byte for byte), one
// element at a time.
func streamJSONArray[T any](w http.ResponseWriter, v []T) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if len(v) == 0 {
		io.WriteString(w, "[]\n")
		return
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	defer bw.Flush()
	bw.WriteString("[\n")
	for i := range v {
		b, err := json.MarshalIndent(v[i], "  ", "  ")
		if err != nil {
			// Too late for a status: cut the array short so the client sees bad JSON.
			return
		}
		bw.WriteString("  ")
		bw.Write(b)
		if i < len(v)-1 {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
	}
	bw.WriteString("]\n")
}

// withError adds "error" as the first field of the JSON object body (keeping the
// command's field order); a body that is not an object becomes {"error": ...}.
func withError(body []byte, msg string) []byte {
	e, _ := json.Marshal(msg)
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) < 2 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return append(append([]byte(`{"error": `), e...), "}\n"...)
	}
	rest := bytes.TrimSpace(trimmed[1:])
	var b bytes.Buffer
	b.WriteString("{\n  \"error\": ")
	b.Write(e)
	if rest[0] != '}' {
		b.WriteString(",\n  ")
	} else {
		b.WriteString("\n")
	}
	b.Write(rest)
	b.WriteByte('\n')
	return b.Bytes()
}

func writeJSONBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
}

type apiError struct {
	Error     string `json:"error"`
	Parameter string `json:"parameter,omitempty"`
}

func writeAPIError(w http.ResponseWriter, status int, msg, param string) {
	var b bytes.Buffer
	writeJSON(&b, apiError{msg, param})
	writeJSONBody(w, status, b.Bytes())
}

type health struct {
	Status    string `json:"status"`
	Store     string `json:"store"`
	Integrity string `json:"integrity,omitempty"`
	CheckedAt string `json:"integrity_checked_at,omitempty"`
	Schema    int    `json:"schema_version,omitempty"`
	Error     string `json:"error,omitempty"`
}

// handleHealth answers 200 when the database passed its last integrity probe (at start
// and after each refresh; run now if none ran yet) and answers a read now on its own
// connection, 503 otherwise. It skips the concurrency limit, so load never makes it lie.
func (a *app) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	h, status := health{Status: "ok", Store: "ok"}, http.StatusOK
	st, err := a.store(ctx)
	if err == nil {
		err = st.Ping(ctx)
	}
	if err == nil {
		if p := a.lastProbe.Load(); p == nil {
			// No probe yet (an API served without runDaemon): run one in the
			// background, not under this request's deadline; until it ends the
			// integrity is "pending", which is not a failure.
			h.Integrity = "pending"
			if a.probing.CompareAndSwap(false, true) {
				go a.probeIntegrity(context.WithoutCancel(ctx), st)
			}
		} else {
			h.Integrity, h.CheckedAt = "ok", p.at.UTC().Format(time.RFC3339)
			if p.err != nil {
				h.Integrity, err = "failed", p.err
			}
		}
	}
	if err == nil {
		h.Schema = a.schemaVersion(ctx, st)
	}
	if err != nil {
		h.Status, h.Store, h.Error, status = "unavailable", "error", a.redactor().String(err.Error()), http.StatusServiceUnavailable
	}
	var b bytes.Buffer
	writeJSON(&b, h)
	writeJSONBody(w, status, b.Bytes())
}

// probeResult is the outcome of the last integrity probe.
type probeResult struct {
	err error
	at  time.Time
}

// probeIntegrity runs the store's quick integrity check and keeps the result for
// /healthz.
func (a *app) probeIntegrity(ctx context.Context, st interface{ QuickCheck(context.Context) error }) *probeResult {
	p := &probeResult{err: st.QuickCheck(ctx), at: a.now()}
	if p.err != nil && ctx.Err() != nil {
		return p // a probe cut short says nothing about the file; keep the last result
	}
	a.lastProbe.Store(p)
	if p.err != nil {
		a.log.Error("database integrity probe failed", "error", p.err)
	}
	return p
}

// schemaVersion is read once: it changes only when a newer picker migrates the file.
func (a *app) schemaVersion(ctx context.Context, st interface {
	SchemaVersion(context.Context) (int, error)
}) int {
	if v := a.schema.Load(); v > 0 {
		return int(v)
	}
	v, err := st.SchemaVersion(ctx)
	if err == nil {
		a.schema.Store(int64(v))
	}
	return v
}

// statusWriter records the status a handler wrote, for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// accessLog logs each request (Info; Error for 5xx) and turns a handler panic into a
// logged 500 rather than a dropped connection.
func (a *app) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.log.Error("handler panic", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				writeAPIError(sw, http.StatusInternalServerError, "internal error", "")
			}
			level := slog.LevelInfo
			if sw.status >= 500 {
				level = slog.LevelError
			}
			a.log.Log(r.Context(), level, "request", "method", r.Method, "path", a.redactor().String(r.URL.Path), "query", a.redactor().String(r.URL.RawQuery),
				"status", sw.status, "duration", time.Since(start).Round(time.Microsecond), "remote", r.RemoteAddr)
		}()
		next.ServeHTTP(sw, r)
	})
}

// newHTTPServer returns the API server with its timeouts set; the server's own
// errors (TLS handshakes, bad requests) go to the log.
func (a *app) newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
}
