package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/web"
)

// The daemon's HTTP API. Every /v1 endpoint runs the CLI command of the same name
// with the query parameters set as its flags and the output forced to JSON, so a
// response body is byte for byte what `picker <command> -o json` prints, and a
// parameter means exactly what the flag means. Errors are JSON too:
// {"error": "...", "parameter": "name"}.

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

// apiRoutes are the endpoints, each a CLI command run with its query parameters as
// flags.
var apiRoutes = []struct {
	path  string
	build func(*app) *cobra.Command
}{
	{"/v1/offers", (*app).offersCmd},
	{"/v1/estimate", (*app).estimateCmd},
	{"/v1/recommend", (*app).recommendCmd},
	{"/v1/providers", (*app).providersCmd},
}

// apiHandler serves the API, and the web pages at /, over a's store, which must be
// open (runDaemon opens it before serving so that every request shares it).
func (a *app) apiHandler() http.Handler {
	mux := http.NewServeMux()
	known := map[string]bool{"/healthz": true}
	mux.HandleFunc("GET /healthz", a.handleHealth)
	for _, r := range apiRoutes {
		mux.Handle("GET "+r.path, a.commandHandler(r.build))
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
			writeAPIError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s; see /healthz, /v1/offers, /v1/estimate, /v1/recommend, /v1/providers", r.URL.Path), "")
			return
		}
		pages.ServeHTTP(w, r)
	})
	return a.accessLog(mux)
}

// flagError is a request parameter that could not be set as its flag, or a required
// flag left out; Param names the parameter ("" when none is at fault).
type flagError struct {
	param string
	err   error
}

func (e flagError) Error() string { return e.err.Error() }
func (e flagError) Unwrap() error { return e.err }
func (e flagError) Param() string { return e.param }

// runJSON runs the command build returns on a copy of the app that writes JSON into a
// buffer, with the query parameters q set as its flags: what the API and the web pages
// answer with. A parameter that cannot be set is a flagError, before anything runs.
func (a *app) runJSON(ctx context.Context, build func(*app) *cobra.Command, q map[string][]string) (out []byte, fs *pflag.FlagSet, err error) {
	var buf bytes.Buffer
	c := *a
	c.stdout, c.stderr = &buf, io.Discard
	c.output, c.tty = "json", false
	cmd := build(&c)
	cmd.SetContext(ctx)
	fs = cmd.Flags()
	if name, err := setFlags(fs, q); err != nil {
		return nil, fs, flagError{name, err}
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return nil, fs, flagError{"", err}
	}
	err = cmd.RunE(cmd, nil)
	return buf.Bytes(), fs, err
}

// commandHandler answers a request with the command build returns, run by runJSON.
func (a *app) commandHandler(build func(*app) *cobra.Command) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		out, fs, err := a.runJSON(ctx, build, r.URL.Query())
		if err == nil {
			writeJSONBody(w, http.StatusOK, out)
			return
		}
		var fe flagError
		if errors.As(err, &fe) {
			writeAPIError(w, http.StatusBadRequest, err.Error(), fe.param)
			return
		}
		var nf noFitError
		var ue usageError
		status := http.StatusInternalServerError
		switch {
		case errors.As(err, &nf):
			// Like exit 3: the body is the command's JSON (estimate, empty offers,
			// ladder, nearest_miss) with the nearest miss as the error.
			writeJSONBody(w, http.StatusNotFound, withError(out, err.Error()))
			return
		case errors.As(err, &ue):
			status = http.StatusBadRequest
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
		if status >= 500 {
			a.log.Error("request failed", "path", r.URL.Path, "query", r.URL.RawQuery, "error", err)
		}
		writeAPIError(w, status, err.Error(), paramNamed(fs, err.Error()))
	}
}

// setFlags sets each query parameter as the flag of the same name. It returns the
// offending parameter with the error: an unknown parameter, a bad value, a scalar
// given twice, or a model path (the API never reads the daemon's files).
func setFlags(fs *pflag.FlagSet, q map[string][]string) (string, error) {
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		vals := q[name]
		f := fs.Lookup(name)
		if f == nil || f.Hidden {
			var known []string
			fs.VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					known = append(known, f.Name)
				}
			})
			return name, fmt.Errorf("unknown parameter %q; this endpoint takes: %s", name, strings.Join(known, ", "))
		}
		list := strings.HasSuffix(f.Value.Type(), "Slice") || strings.HasSuffix(f.Value.Type(), "Array")
		if len(vals) > 1 && !list {
			return name, fmt.Errorf("parameter %q given %d times; it takes one value", name, len(vals))
		}
		for _, v := range vals {
			if v == "" && f.NoOptDefVal != "" {
				v = f.NoOptDefVal // ?grad-ckpt is --grad-ckpt
			}
			if name == "model" && modelIsPath(v) {
				return name, fmt.Errorf("parameter \"model\" %q: the API does not read files; pass a catalog name or a Hugging Face id", v)
			}
			if err := fs.Set(name, v); err != nil {
				return name, fmt.Errorf("parameter %q: invalid value %q: %v", name, v, unwrapFlagError(err))
			}
		}
	}
	return "", nil
}

// modelIsPath mirrors fit's test for a --model that names a config.json on disk.
func modelIsPath(v string) bool {
	if strings.HasSuffix(strings.ToLower(v), ".json") || strings.HasPrefix(v, ".") || strings.HasPrefix(v, "/") ||
		strings.HasPrefix(v, "~") || strings.Contains(v, `\`) {
		return true
	}
	_, err := os.Stat(v)
	return err == nil
}

// unwrapFlagError drops pflag's `invalid argument "x" for "--f" flag:` prefix, which
// repeats what the API error already says.
func unwrapFlagError(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// paramNamed returns the request parameter an error message is about: of the flags
// the request set, the one the message names first, as --name or by its quoted
// value; "" when none is. Flags the request did not set are only hints in a message
// ("or pass --params") and never the culprit.
func paramNamed(fs *pflag.FlagSet, msg string) string {
	best, at := "", len(msg)
	fs.Visit(func(f *pflag.Flag) {
		for _, needle := range []string{"--" + f.Name, strconv.Quote(f.Value.String())} {
			if needle == `""` {
				continue
			}
			if i := strings.Index(msg, needle); i >= 0 && i < at {
				best, at = f.Name, i
			}
		}
	})
	return best
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
	Status string `json:"status"`
	Store  string `json:"store"`
	Schema int    `json:"schema_version,omitempty"`
	Error  string `json:"error,omitempty"`
}

// handleHealth answers 200 when the store answers a query, 503 otherwise.
func (a *app) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	h, status := health{Status: "ok", Store: "ok"}, http.StatusOK
	st, err := a.store(ctx)
	if err == nil {
		h.Schema, err = st.SchemaVersion(ctx)
	}
	if err != nil {
		h, status = health{Status: "unavailable", Store: "error", Error: err.Error()}, http.StatusServiceUnavailable
	}
	var b bytes.Buffer
	writeJSON(&b, h)
	writeJSONBody(w, status, b.Bytes())
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
			a.log.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path, "query", r.URL.RawQuery,
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
