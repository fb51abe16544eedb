// Package redact is the one step that scrubs secrets from error text before it is
// stored (refresh_runs.error), served (/v1/providers, API errors) or logged: the known
// secret values (the values of the environment variables the config names in *_env
// keys, HF_TOKEN, the daemon's token, AWS's secret variables) and the shapes secrets
// take in messages (Authorization headers, bearer tokens, key=, token=, signature=
// query or form parameters), wherever they came from.
package redact

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mask replaces every redacted secret.
const Mask = "[REDACTED]"

// minSecretLen: shorter known values are not scrubbed by value (a 1-3 character
// "secret" would mask ordinary words); the patterns still catch them in context.
const minSecretLen = 6

// patterns catch secrets by shape. Each keeps its first group (the name) and masks the
// rest.
// Compiled on first use, not in package init, which every picker command runs.
var patterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		// Authorization: Bearer xyz / Authorization: Basic xyz / "authorization":"xyz"
		regexp.MustCompile(`(?i)(\bauthorization["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token)\s+)?[^\s"',;]+`),
		// a bearer token anywhere
		regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{4,}`),
		// key=..., api_key=..., access_token=..., X-Amz-Signature=... in URLs, forms, JSON
		regexp.MustCompile(`(?i)(\b(?:api[_-]?key|apikey|key|token|access[_-]?token|refresh[_-]?token|id[_-]?token|secret|client[_-]?secret|password|passwd|signature|sig|x-amz-signature|x-amz-security-token|x-amz-credential|x-goog-api-key)["']?\s*[=:]\s*["']?)[^\s&"',;)}]+`),
	}
})

// Redactor scrubs a fixed set of known secret values plus the patterns.
type Redactor struct {
	values []string // longest first, so a secret containing another is masked whole
}

// New returns a redactor for the given secret values (blank and short ones dropped).
func New(values ...string) *Redactor {
	r := &Redactor{}
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) >= minSecretLen && !slices.Contains(r.values, v) {
			r.values = append(r.values, v)
		}
	}
	slices.SortFunc(r.values, func(a, b string) int { return len(b) - len(a) })
	return r
}

// String returns s with every known secret and every secret-shaped substring masked.
// A nil Redactor still applies the patterns.
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, v := range r.values {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	for _, p := range patterns() {
		s = p.ReplaceAllString(s, "${1}"+Mask)
	}
	return s
}

// Error returns err with its message redacted; errors.Is and errors.As still see the
// original chain. nil stays nil.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := r.String(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redacted{msg: msg, err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
