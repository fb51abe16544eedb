package redact

import (
	"errors"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	r := New("AIzaSyD-known-gcp-key-123", "hf_abcdefghijklmnop", "", "abc")
	for _, tt := range []struct{ in, leak string }{
		{"gcp: list skus: googleapi: Error 400: API key not valid: AIzaSyD-known-gcp-key-123", "AIzaSyD-known-gcp-key-123"},
		{"upstream said: invalid token hf_abcdefghijklmnop for user", "hf_abcdefghijklmnop"},
		{"GET https://x/v1?key=SECRETVALUE42&currency=USD: 403", "SECRETVALUE42"},
		{"echo: Authorization: Bearer sk-live-9a8b7c6d", "sk-live-9a8b7c6d"},
		{`{"authorization":"Basic dXNlcjpwYXNz"}`, "dXNlcjpwYXNz"},
		{"bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "eyJhbGciOiJIUzI1NiJ9"},
		{"token=t0k3n-value&x=1", "t0k3n-value"},
		{`{"api_key": "lam-12345678"}`, "lam-12345678"},
		{"X-Amz-Security-Token=FQoGZXIvYXdzEJr", "FQoGZXIvYXdzEJr"},
	} {
		got := r.String(tt.in)
		if strings.Contains(got, tt.leak) {
			t.Errorf("String(%q) = %q: leaks %q", tt.in, got, tt.leak)
		}
		if !strings.Contains(got, Mask) {
			t.Errorf("String(%q) = %q: no mask", tt.in, got)
		}
	}
	// Ordinary text passes unchanged; short "secrets" are not masked by value.
	for _, s := range []string{"runpod: gpuTypes: HTTP 502 Bad Gateway", "lambda: abc region failed", "monkey business"} {
		if got := r.String(s); got != s {
			t.Errorf("String(%q) = %q, want it unchanged", s, got)
		}
	}
	base := errors.New("boom")
	err := r.Error(errors.Join(base, errors.New("key=SECRETVALUE42")))
	if strings.Contains(err.Error(), "SECRETVALUE42") || !errors.Is(err, base) {
		t.Errorf("Error: %v (Is base: %v)", err, errors.Is(err, base))
	}
	if r.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}
