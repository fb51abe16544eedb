package gcp

import "net/http"

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
