package providertest

import (
	"io"
	"net/http"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// Routes is a fake REST price API for an adapter's tests: each route ("GET /v1/flavors")
// answers its fixture file, or the body a test put in its place, as application/json;
// a request without the credentials Auth wants gets a 401 with Denied's file; Hook may
// answer any request itself (a 429, a 500, a hang-up). It counts the requests and keeps
// each route's last request, so tests can check what the adapter sent. An unknown route
// is a 404 that names it.
type Routes struct {
	// Files maps "METHOD /path" to a fixture file.
	Files map[string]string
	// Auth, when set, says whether a request carries the right credentials.
	Auth func(r *http.Request) bool
	// Denied is the file answered with 401 when Auth refuses ("" for an empty body).
	Denied string
	// Hook answers a request itself when it returns true; n counts from 1.
	Hook func(w http.ResponseWriter, r *http.Request, n int) bool

	mu       sync.Mutex
	bodies   map[string]string // route -> body replacing its file
	last     map[string]*Seen
	requests atomic.Int32
}

// Seen is a request as the fake received it.
type Seen struct {
	Header http.Header
	Query  map[string][]string
	Body   []byte
}

// SetBody makes route answer body instead of its file.
func (s *Routes) SetBody(route, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bodies == nil {
		s.bodies = map[string]string{}
	}
	s.bodies[route] = body
}

// Requests is how many requests arrived, refused and unknown ones included.
func (s *Routes) Requests() int { return int(s.requests.Load()) }

// Last is route's last request, nil when none arrived.
func (s *Routes) Last(route string) *Seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[route]
}

// ServeHTTP answers like the provider's API.
func (s *Routes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.requests.Add(1))
	route := r.Method + " " + r.URL.Path
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	if s.last == nil {
		s.last = map[string]*Seen{}
	}
	s.last[route] = &Seen{Header: r.Header.Clone(), Query: r.URL.Query(), Body: body}
	override, overridden := s.bodies[route]
	s.mu.Unlock()
	file, ok := s.Files[route]
	if !ok && !overridden {
		http.Error(w, "unexpected "+route, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if s.Auth != nil && !s.Auth(r) {
		w.WriteHeader(http.StatusUnauthorized)
		if s.Denied != "" {
			b, _ := os.ReadFile(s.Denied)
			w.Write(b)
		}
		return
	}
	if s.Hook != nil && s.Hook(w, r, n) {
		return
	}
	if overridden {
		io.WriteString(w, override)
		return
	}
	b, err := os.ReadFile(file)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(b)
}

// DiffOffers reports each offer where got and want differ, by position.
func DiffOffers(t testing.TB, got, want []pricing.Offer) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	for i := range max(len(got), len(want)) {
		var g, w any = "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("offer %d:\n got  %+v\n want %+v", i, g, w)
		}
	}
}
