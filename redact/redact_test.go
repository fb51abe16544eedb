package redact

import (
	"errors"
	"strings"
	"testing"

	"github.com/pickergpu/picker/providers/httpx"
)

func TestRedact(t *testing.T) {
	r := New("AIzaSyD-known-gcp-key-123", "hf_abcdefghijklmnop", "", "abc")
	for _, tt := range []struct{ in, leak string }{
		{"gcp: list skus: googleapi: Error 400: API key not valid: AIzaSyD-known-gcp-key-123", "AIzaSyD-known-gcp-key-123"},
		{"upstream said: invalid token hf_abcdefghijklmnop for user", "hf_abcdefghijklmnop"},
		{"GET https://x/v1?key=SECRETVALUE42&currency=USD: 403", "SECRETVALUE42"},
		{"GET https://x/v1?key=abc&currency=USD: 403", "key=abc"}, // after "=": any value
		{"echo: Authorization: Bearer sk-live-9a8b7c6d", "sk-live-9a8b7c6d"},
		{`{"authorization":"Basic dXNlcjpwYXNz"}`, "dXNlcjpwYXNz"},
		{"bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "eyJhbGciOiJIUzI1NiJ9"},
		{"token=t0k3n-value&x=1", "t0k3n-value"},
		{`{"api_key": "lam-12345678"}`, "lam-12345678"},
		{`{"token": "plainwords"}`, "plainwords"}, // quoted: data, masked whatever it looks like
		{"X-Amz-Security-Token=FQoGZXIvYXdzEJr", "FQoGZXIvYXdzEJr"},
		{"X-Goog-Api-Key: AIzaSyAnotherKey0000", "AIzaSyAnotherKey0000"},
		{"upstream: invalid api key: secret_live_abcdefghijklmnopqrstuvwxyz", "secret_live_abcdefghijklmnopqrstuvwxyz"}, // long
		{"password: hunter2xyz", "hunter2xyz"},
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
	for _, s := range []string{"runpod: gpuTypes: HTTP 502 Bad Gateway", "lambda: abc region failed", "monkey business",
		`{"message": "Invalid token"}`, "token: expired", "key: Unauthorized"} {
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

// Issue 26: the patterns turned picker's own "no API key: environment variable
// LAMBDA_API_KEY is unset" into "no API key: [REDACTED] variable …". Messages that name
// where a secret is read from hold none, and come through whole. The first ones are
// made by the code that writes them; cmd/picker's TestRedactLeavesPickersMessages runs
// the daemon's and the config's.
func TestRedactLeavesPickersMessages(t *testing.T) {
	t.Setenv("LAMBDA_API_KEY", "")
	var msgs []string
	for _, c := range []struct{ provider, env string }{{"lambda", "LAMBDA_API_KEY"}, {"runpod", ""}} {
		_, err := httpx.APIKey(c.provider, c.env, true)
		if err == nil {
			t.Fatalf("APIKey(%q, %q) found a key", c.provider, c.env)
		}
		msgs = append(msgs, err.Error())
	}
	// Written with the same format strings as the adapters and the daemon (grep for
	// them: lambda.go, runpod.go, modelref.go, guard.go, daemon.go, refresh.go).
	msgs = append(msgs,
		"lambda: instance types: HTTP 401: Unauthorized: invalid credentials (the key is read from LAMBDA_API_KEY)",
		"lambda: instance types: the API refused the key read from LAMBDA_API_KEY: HTTP 403",
		"runpod: gpuTypes: the API refused the key read from RUNPOD_API_KEY: HTTP 401",
		"model meta-llama/Llama-2-7b-hf is gated on the Hugging Face Hub (HTTP 401): set HF_TOKEN to a token that has accepted the model's license, or pass --model path/to/config.json with the model's config.json",
		"missing or wrong bearer token (Authorization: Bearer <the value of [daemon] token_env>)",
		"daemon: [daemon] token_env names PICKER_TOKEN, which is empty or unset; export the token in it",
		`daemon: listening on 0.0.0.0:8080 reaches beyond this machine and needs a bearer token: set [daemon] token_env = "NAME" and export NAME=<token>, or listen on 127.0.0.1`,
		"config: c.toml:2:1: [daemon] token_env: want the NAME of an environment variable (A-Z, 0-9, _), not the token itself",
		`config: c.toml:3:1: unknown key "providers.lambda.api_key"`,
		`config: c.toml:3:1: key "providers.lambda.api_key_env": got a TOML integer; want a quoted string`,
	)
	r := New("s3cret-value-1234")
	for _, m := range msgs {
		if got := r.String(m); got != m {
			t.Errorf("String(%q)\n  = %q, want it unchanged", m, got)
		}
	}
}
