package httpx

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Issue 18, case 3: the adapters' clients (azure, lambda, runpod through Apply) never
// follow a redirect to another host, so an Authorization header or key= parameter
// cannot reach it; a redirect on the same host still works.
func TestNoCrossHostRedirect(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.URL.Query().Get("key") != "" {
			leaked.Add(1)
		}
		w.Write([]byte(`{}`))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/steal?"+r.URL.RawQuery, http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/ok", http.StatusFound)
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()
	c := NewClient("test", Apply(WithHTTPClient(srv.Client())))
	h := http.Header{"Authorization": {"Bearer secret-token-123"}}
	_, err := c.Do(context.Background(), Request{URL: srv.URL + "/away?key=secret-key-456", Header: h})
	if !errors.Is(err, ErrCrossHostRedirect) {
		t.Errorf("cross-host redirect: error %v, want ErrCrossHostRedirect", err)
	}
	if err != nil && strings.Contains(err.Error(), "secret-key-456") {
		t.Errorf("error leaks the key: %v", err)
	}
	if leaked.Load() != 0 {
		t.Error("credentials reached the other host")
	}
	if r, err := c.Do(context.Background(), Request{URL: srv.URL + "/here", Header: h}); err != nil || !strings.Contains(string(r.Body), "ok") {
		t.Errorf("same-host redirect: %v", err)
	}
	// Apply without a client builds one with the policy too.
	if Apply().HTTPClient.CheckRedirect == nil {
		t.Error("the default client follows any redirect")
	}
}

func TestLimitBody(t *testing.T) {
	SetMaxBodyBytes(1000)
	defer SetMaxBodyBytes(0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cl" {
			w.Header().Set("Content-Length", "5000")
		}
		w.Write([]byte(strings.Repeat("x", 5000)))
	}))
	defer srv.Close()
	hc := &http.Client{Transport: LimitBody(nil)}
	resp, err := hc.Get(srv.URL + "/chunked")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, ErrTooLarge) || len(b) > 1001 {
		t.Errorf("read %d bytes, error %v; want ErrTooLarge after at most the cap", len(b), err)
	}
	if _, err := hc.Get(srv.URL + "/cl"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Content-Length over the cap: %v", err)
	}
}
