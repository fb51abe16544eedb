package main

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// Who may ask, and how much. The API is meant to be left running for a team, so every
// request is bounded before it reaches a command: its Host (DNS rebinding) and origin
// (cross-site pages), its token when one is configured, how many run at once, and the
// size of each parameter.

// Caps on what one API request may ask for; a request over a cap is a 400 naming the
// parameter and the cap.
const (
	maxQueryBytes = 4 << 10 // the whole query string
	maxValueBytes = 256     // one parameter value (a model id is at most 96 characters on the Hub)
	maxListItems  = 32      // items of a list parameter (gpu-model, provider, region)
	maxAPITop     = 100     // recommend's top: the recommender keeps top+1 candidates
	// maxAPILimit caps /v1/offers' limit, and defaultAPILimit is the limit of a request
	// that names none: an unfiltered /v1/offers is a page, not the whole database.
	maxAPILimit     = 10_000
	defaultAPILimit = 1_000
)

// intCaps are the integer parameters with an API maximum.
var intCaps = map[string]int{"top": maxAPITop, "limit": maxAPILimit}

// checkAPICaps bounds q before it is bound: value sizes, list lengths and the integer
// caps. ps says which parameters are lists.
func checkAPICaps(q url.Values, ps []param) error {
	for _, p := range ps {
		vs, ok := q[p.name]
		if !ok {
			continue
		}
		items := 0
		for _, v := range vs {
			if len(v) > maxValueBytes {
				return pricing.ParamErrorf(pricing.Invalid, p.name, "parameter %q: value of %d bytes; the API takes at most %d", p.name, len(v), maxValueBytes)
			}
			items += strings.Count(v, ",") + 1
		}
		if p.kind == kindList && items > maxListItems {
			return pricing.ParamErrorf(pricing.Invalid, p.name, "parameter %q: %d values; the API takes at most %d", p.name, items, maxListItems)
		}
		if hi, capped := intCaps[p.name]; capped && len(vs) == 1 {
			if n, err := strconv.Atoi(strings.TrimSpace(vs[0])); err == nil && n > hi {
				return pricing.ParamErrorf(pricing.Invalid, p.name, "parameter %q: %d is over the API's cap of %d", p.name, n, hi)
			}
		}
	}
	return nil
}

// parseQuery parses a raw query strictly: url.Values.Query drops a pair it cannot
// parse (gpu-model=H100;A100, a bad %-escape) without a word, which would silently
// widen the request to every GPU.
func parseQuery(raw string) (url.Values, error) {
	if len(raw) > maxQueryBytes {
		return nil, pricing.Errorf(pricing.Invalid, "query string of %d bytes; the API takes at most %d", len(raw), maxQueryBytes)
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, pricing.Errorf(pricing.Invalid, "malformed query string: %v (separate parameters with &, list values with commas)", err)
	}
	return q, nil
}

// guard is the API's front door; see the file comment. /healthz skips the token
// and the concurrency limit (a probe must not be refused by load).
type guard struct {
	hosts map[string]bool // names allowed besides IP literals and localhost
	token string          // "" = no token required
	slots chan struct{}   // one per request in progress
	// params are each route's parameters: a request naming an unknown one, or a value
	// over a cap, is refused before it waits for a slot.
	params map[string][]param
	// busy, when set, is called for each request the concurrency limit refuses.
	busy func()
}

// newGuard builds the guard from [daemon]: the listen host and hosts, token_env's value,
// max_concurrent.
func (a *app) newGuard(listen string) *guard {
	g := &guard{hosts: map[string]bool{}, slots: make(chan struct{}, max(a.cfg.Daemon.MaxConcurrent, 1))}
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" {
		g.hosts[strings.ToLower(h)] = true
	}
	for _, h := range a.cfg.Daemon.Hosts {
		g.hosts[strings.ToLower(strings.TrimSpace(h))] = true
	}
	if e := a.cfg.Daemon.TokenEnv; e != "" {
		g.token = a.m.Getenv(e)
	}
	return g
}

// allowedHost: an IP literal (a rebinding attack needs a name), localhost, or a
// configured name.
func (g *guard) allowedHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	return g.hosts[host]
}

func isHealthPath(p string) bool { return p == "/healthz" }

// pageNavigation reports a browser's top-level navigation to a web page: a shared
// link clicked on another site. It reads and changes nothing and carries no
// credentials, so it is let in; another site's fetches, frames, images and scripts are
// not, and neither is any navigation to the JSON API.
func pageNavigation(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && !isHealthPath(r.URL.Path) &&
		r.URL.Path != "/v1" && !strings.HasPrefix(r.URL.Path, "/v1/") &&
		r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document"
}

// isAssetPath is the web pages' embedded files: served from memory, they take no slot.
func isAssetPath(p string) bool { return strings.HasPrefix(p, "/assets/") }

func (g *guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// No page of another site may frame an answer (clickjacking); a page served
		// here sets its own fuller policy.
		w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
		w.Header().Set("Referrer-Policy", "no-referrer")
		if !g.allowedHost(r.Host) {
			writeAPIError(w, http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not one this API answers to; add it to [daemon] hosts", r.Host), "")
			return
		}
		if !g.sameOrigin(r) {
			writeAPIError(w, http.StatusForbidden, "cross-origin requests are refused (the API sends no CORS headers)", "")
			return
		}
		if isHealthPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if g.token != "" && !g.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="picker"`)
			writeAPIError(w, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer <the value of [daemon] token_env>)", "")
			return
		}
		// A malformed or oversized query is refused before it waits for a slot: it
		// costs nothing to answer and must not crowd out real questions.
		if err := g.precheck(r); err != nil {
			writeAPIError(w, http.StatusBadRequest, err.Error(), pricing.ErrorParam(err))
			return
		}
		if isAssetPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if !g.acquire(r) {
			if g.busy != nil {
				g.busy()
			}
			w.Header().Set("Retry-After", "1")
			writeAPIError(w, http.StatusServiceUnavailable, fmt.Sprintf("busy: %d requests in progress ([daemon] max_concurrent); retry shortly", cap(g.slots)), "")
			return
		}
		defer func() { <-g.slots }()
		next.ServeHTTP(w, r)
	})
}

// precheck runs the checks that need no store and no model: the query parses, names
// only the route's parameters, keeps to the caps, and names no file as the model. The
// handler repeats them (they are cheap) as part of binding.
func (g *guard) precheck(r *http.Request) error {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	ps, ok := g.params[r.URL.Path]
	if !ok {
		return nil
	}
	if err := CheckValues(q, ps); err != nil {
		return err
	}
	if err := checkAPICaps(q, ps); err != nil {
		return err
	}
	return checkModelRef(q.Get("model"))
}

// queueWait is how long a request waits for a slot before the 503: long enough to
// ride out a burst, short enough that a client is told to back off at once under
// sustained overload.
const queueWait = 250 * time.Millisecond

func (g *guard) acquire(r *http.Request) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(queueWait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-r.Context().Done():
	}
	return false
}

// sameOrigin refuses requests a browser sends on behalf of another site: an Origin
// whose host is not one this API answers to, or Sec-Fetch-Site: cross-site, except a
// person following a link from another site to a web page (pageNavigation).
func (g *guard) sameOrigin(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return pageNavigation(r)
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false // "null" (sandboxed pages, file://) and garbage
	}
	return strings.EqualFold(u.Host, r.Host) || g.hosts[strings.ToLower(u.Hostname())]
}

func (g *guard) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(g.token)) == 1
}
