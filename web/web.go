// Package web serves picker's HTML pages: Ask (the job form and its recommendation),
// Compare (the offers table and its CSV), History (price charts) and Providers.
//
// Pages are rendered on the server with html/template and work without JavaScript;
// app.js only enhances them (sorting and paging without a reload, charts drawn with the
// vendored uPlot, a copy button). Every asset is embedded, so the pages work offline,
// and every response carries a strict Content-Security-Policy: scripts and styles only
// from this server, no inline code, no event-handler attributes.
//
// The package knows nothing of commands or wiring: it asks a Backend, which
// cmd/picker implements with the same run functions the CLI and the JSON API call, so
// a page and `picker recommend -o json` give the same answer for the same query.
package web

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/store"
)

// Backend answers the pages' questions. Parameters are named as the CLI flags of the
// command that answers them (`model`, `seq-len`, `gpu-model`, …) and hold what a user
// would type; binding and validating them is the backend's job, so the page, the CLI
// and the API can never disagree on what a parameter means. A pricing.Error whose Param
// names the parameter at fault makes the page mark that field.
type Backend interface {
	// Recommend is `picker recommend` with params as its flags. When nothing fits it
	// returns the recommendation with no offers and its NearestMiss, and no error.
	Recommend(ctx context.Context, params url.Values) (*recommend.Recommendation, error)
	// Offers is `picker offers` (and `export`) with params as its flags: every current
	// offer that matches, in the command's order.
	Offers(ctx context.Context, params url.Values) ([]pricing.Offer, error)
	// OffersPage is Offers read as one page of the store (pq: at most Limit offers
	// after the cursor After, of exactly GPUs GPUs when that is above 0), with the count
	// of every match and the next page's cursor: /offers.csv's answer, which must not
	// read the whole selection to write 10,000 rows of it.
	OffersPage(ctx context.Context, params url.Values, pq PageQuery) (store.Page, error)
	// History is `picker history`: every stored price interval of the matching offers.
	History(ctx context.Context, q store.HistoryQuery) ([]store.PricePoint, error)
	// Providers is `picker providers`.
	Providers(ctx context.Context) ([]Provider, error)
	// Models are the names the model field suggests: the built-in catalog and cached
	// Hugging Face models.
	Models(ctx context.Context) ([]string, error)
}

// Provider is one row of the Providers page (`picker providers`).
type Provider struct {
	Name        string
	Description string
	Adapter     bool // picker can refresh it live
	Enabled     bool
	Schedule    string
	// LastSuccess is the newest successful live refresh; nil when the prices are still
	// the embedded snapshot's, whose date is SnapshotDate.
	LastSuccess  *time.Time
	SnapshotDate *time.Time
	// LastAttempt is the newest live refresh whatever its outcome, LastAttemptStatus
	// "ok" or "failed"; nil when none was tried.
	LastAttempt       *time.Time
	LastAttemptStatus string
	// NewestObserved is when the newest current price was seen: the prices' age.
	NewestObserved      time.Time
	Offers              int
	Sources             []string
	LastError           string
	ConsecutiveFailures int
	// Quotas and Capacity are the launch data (providers.go): the account's quota read
	// and the capacity word; nil where the provider has none.
	Quotas   *QuotaRead
	Capacity *CapacityWord
}

// Options tune the handler.
type Options struct {
	// Now is the clock for ages; nil means time.Now.
	Now func() time.Time
	// APIBase, when set ("/v1"), makes pages link to the JSON API answering the same
	// query.
	APIBase string
	// Log receives server-side failures; nil discards them.
	Log *slog.Logger
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// ContentSecurityPolicy is sent with every response: nothing inline, nothing from
// elsewhere. uPlot sets element styles through the CSSOM, which style-src allows.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

type server struct {
	b     Backend
	o     Options
	pages map[string]*template.Template
	// assetVersion maps an asset path to a content hash for cache-busting URLs.
	assetVersion map[string]string
}

// Handler serves the pages at /, /offers, /offers.csv, /offers/{provider}/{instance},
// /history, /providers and the
// embedded assets under /assets/. Mount it at the root of a mux; it answers 404 for
// other paths.
func Handler(b Backend, o Options) http.Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &server{b: b, o: o, assetVersion: map[string]string{}}
	assets, err := fs.Sub(assetFS, "assets")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	if err := fs.WalkDir(assets, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(assets, path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		s.assetVersion[path] = hex.EncodeToString(sum[:6])
		return nil
	}); err != nil {
		panic(err)
	}
	s.pages = parsePages(s.funcs())

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.ask)
	mux.HandleFunc("GET /offers", s.compare)
	mux.HandleFunc("GET /offers.csv", s.compareCSV)
	mux.HandleFunc("GET /offers/{provider}/{instance}", s.instance)
	mux.HandleFunc("GET /history", s.history)
	mux.HandleFunc("GET /providers", s.providers)
	files := http.StripPrefix("/assets/", http.FileServerFS(assets))
	mux.Handle("GET /assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") { // no directory listings
			s.render(w, r, http.StatusNotFound, "error", "Not found", errorPage{Message: fmt.Sprintf("There is no page %s.", r.URL.Path)})
			return
		}
		if v := r.URL.Query().Get("v"); v != "" && v == s.assetVersion[r.URL.Path[len("/assets/"):]] {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		files.ServeHTTP(w, r)
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.render(w, r, http.StatusNotFound, "error", "Not found", errorPage{Message: fmt.Sprintf("There is no page %s.", r.URL.Path)})
	})
	return secure(mux)
}

// secure sets the headers every response carries.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// errorPage is the data of a page that could not be answered.
type errorPage struct{ Message string }

// layout is what the shared layout needs besides the page's own data.
type layout struct {
	Title  string
	Nav    string // the active nav entry
	Charts bool   // load uPlot
	Data   any
}

// statusOf maps a backend error to an HTTP status: the user's input (400), nothing
// there (404), the backend down (503), else 500.
func statusOf(err error) int {
	switch pricing.ErrorCode(err) {
	case pricing.Invalid:
		return http.StatusBadRequest
	case pricing.NotFound:
		return http.StatusNotFound
	case pricing.Unavailable:
		return http.StatusServiceUnavailable
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// paramOf returns the parameter an error is about, "" when it names none.
func paramOf(err error) string { return pricing.ErrorParam(err) }

// logFailure logs server-side failures (not the user's bad input).
func (s *server) logFailure(r *http.Request, status int, err error) {
	if status >= 500 {
		s.o.Log.Error("page failed", "path", r.URL.Path, "query", r.URL.RawQuery, "error", err)
	}
}

// pageURL is path with the query q (empty values dropped).
func pageURL(path string, q url.Values) string {
	clean := url.Values{}
	for k, vs := range q {
		for _, v := range vs {
			if v != "" {
				clean.Add(k, v)
			}
		}
	}
	if len(clean) == 0 {
		return path
	}
	return path + "?" + clean.Encode()
}
