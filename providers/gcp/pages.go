package gcp

import (
	"net/http"

	"github.com/pickergpu/picker/providers"
)

// pageGuard checks every list request's pageToken with a providers.PageGuard keyed by
// the API path: a token asked for twice (the server repeats or alternates tokens) or a
// list past providers.MaxPages ends the fetch with an error. It sits on the transport,
// not the iterator, because Google's iterator fetches pages with no items itself,
// inside Next, where a loop of empty pages would never reach the caller.
type pageGuard struct {
	next  http.RoundTripper
	guard providers.PageGuard
}

func (t *pageGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.guard.Next(r.URL.Path, r.URL.Query().Get("pageToken")); err != nil {
		return nil, err
	}
	return t.next.RoundTrip(r)
}
