// Package redact is the one step that scrubs secrets from error text before it is
// stored (refresh_runs.error), served (/v1/providers, API errors) or logged: the known
// secret values (the values of the environment variables the config names in *_env
// keys, HF_TOKEN, the daemon's token, AWS's secret variables) and the shapes secrets
// take in messages (Authorization headers, bearer tokens, key=, token=, signature=
// query or form parameters), wherever they came from.
//
// The shapes must leave picker's own messages alone: "no API key: environment variable
// LAMBDA_API_KEY is unset" names a variable and holds no secret. So a value after a
// secret's name is masked when it sits in machine syntax (after "=", or in quotes, as in
// a URL, a form or JSON) or when it looks like a credential (digits or inner capitals,
// or long), never when it is an ordinary word or an environment variable's name.
package redact

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Mask replaces every redacted secret.
const Mask = "[REDACTED]"

// minSecretLen: shorter known values are not scrubbed by value (a 1-3 character
// "secret" would mask ordinary words); the patterns still catch them in context.
const minSecretLen = 6

// pattern catches a secret by shape: the name it follows (kept), then the value, which
// is masked when it follows "=" or a quote, or looks like a credential.
type pattern struct {
	re *regexp.Regexp // groups: 1 the kept prefix, 2 "=" or ":" (may be empty), 3 the opening quote, 4 the value
}

// patterns are compiled on first use, not in package init, which every picker command
// runs.
var patterns = sync.OnceValue(func() []pattern {
	return []pattern{
		// Authorization: Bearer xyz / Authorization: Basic xyz / "authorization":"xyz"
		{re: regexp.MustCompile(`(?i)(\bauthorization["']?\s*([:=])\s*(["']?)(?:(?:bearer|basic|token)\s+)?)([^\s"',;]+)`)},
		// a bearer token anywhere
		{re: regexp.MustCompile(`(?i)(\bbearer()()\s+)([A-Za-z0-9._~+/=-]{4,})`)},
		// key=..., api_key=..., access_token=..., X-Amz-Signature=... in URLs, forms, JSON
		{re: regexp.MustCompile(`(?i)(\b(?:api[_-]?key|apikey|key|token|access[_-]?token|refresh[_-]?token|id[_-]?token|secret|client[_-]?secret|password|passwd|signature|sig|x-amz-signature|x-amz-security-token|x-amz-credential|x-goog-api-key)["']?\s*([=:])\s*(["']?))([^\s&"',;)}]+)`)},
	}
})

// masks reports whether the value v, found after a secret's name with separator sep
// and opening quote quote, is to be masked.
func (p pattern) masks(sep, quote, v string) bool {
	if sep == "=" || quote != "" {
		return true
	}
	return credentialShaped(v)
}

// credentialShaped: a token of eight characters or more with a digit or a capital
// after its first letter (sk-live-9a8b7c6d, AIzaSy…, dXNlcjpwYXNz, eyJhbGci…), or of
// 24 or more; not an environment variable's name (LAMBDA_API_KEY), which is how
// picker's messages say where a key is read from.
func credentialShaped(v string) bool {
	v = strings.TrimRight(v, ".:")
	if len(v) < 8 || envName(v) {
		return false
	}
	if len(v) >= 24 {
		return true
	}
	for i, r := range v {
		if unicode.IsDigit(r) || i > 0 && unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

// CredentialShaped reports whether v looks like a credential rather than a word or an
// environment variable's name (credentialShaped's rule): config uses it to mask a key
// pasted where a variable's name belongs even when the key happens to be a valid name
// (hf_AbC123…, sk_live_…).
func CredentialShaped(v string) bool { return credentialShaped(v) }

// envName: upper-case words joined by underscores (HF_TOKEN, LAMBDA_API_KEY).
func envName(v string) bool {
	if !strings.Contains(v, "_") {
		return false
	}
	for _, r := range v {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// Redactor scrubs a fixed set of known secret values plus the patterns.
type Redactor struct {
	values []string // longest first, so a secret containing another is masked whole
}

// New returns a redactor for the given secret values (blank and short ones dropped).
func New(values ...string) *Redactor {
	r := &Redactor{}
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < minSecretLen {
			continue
		}
		// A secret in a URL (a token pasted into a query) is percent-encoded there.
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
			if !slices.Contains(r.values, form) {
				r.values = append(r.values, form)
			}
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
		s = p.re.ReplaceAllStringFunc(s, func(m string) string {
			g := p.re.FindStringSubmatch(m)
			if !p.masks(g[2], g[3], g[4]) {
				return m
			}
			return g[1] + Mask
		})
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
