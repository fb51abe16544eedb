package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// GetJSON sends one GET to rawURL with header under c's retry policy and decodes the
// JSON answer into v. It is the request of the REST price APIs that answer one JSON
// document per call (DigitalOcean, Cudo, Fluidstack, Shadeform, Prime Intellect):
// errors start "provider: what: ", and a 401 or 403 is an Invalid (setup) error that
// names keyEnv, the environment variable the key was read from ("" when none was
// sent), so a refused key says where it came from without ever showing it.
func (c *Client) GetJSON(ctx context.Context, provider, what, rawURL string, header http.Header, keyEnv string, v any) error {
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if h.Get("Accept") == "" {
		h.Set("Accept", "application/json")
	}
	resp, err := c.Do(ctx, Request{URL: rawURL, Header: h})
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden) {
			if keyEnv == "" {
				return pricing.Errorf(pricing.Invalid, "%s: %s: the API wants a key (set [providers.%s] api_key_env): %w", provider, what, provider, err)
			}
			return pricing.Errorf(pricing.Invalid, "%s: %s: the API refused the key read from %s: %w", provider, what, keyEnv, err)
		}
		return fmt.Errorf("%s: %s: %w", provider, what, err)
	}
	return DecodeJSON(provider, what, resp.Body, v)
}

// Rebase points an absolute next-page link that an API returned (DigitalOcean's
// links.pages.next, Azure's NextPageLink) at base, the configured endpoint, keeping the
// link's path and query: a proxy or test server keeps receiving the later pages, and a
// hostile link cannot send the key elsewhere. A base with a path prefixes the link's
// path unless it already starts with it.
func Rebase(base *url.URL, link string) (string, error) {
	u, err := url.Parse(link)
	if err != nil {
		return "", err
	}
	u.Scheme, u.Host, u.User = base.Scheme, base.Host, nil
	if base.Path != "" && !strings.HasPrefix(u.Path, base.Path+"/") {
		u.Path = base.Path + u.Path
		u.RawPath = ""
	}
	return u.String(), nil
}

// Number is a JSON number that some APIs send as a string: Fluidstack's
// price_per_gpu_hr ("2.89"), Cudo's {"value": "0.52"}, Shadeform's spot hourly_price
// ("1.50"). It reads either form; anything else (NaN, words) is a type error that
// DecodeJSON reports with its path.
type Number float64

// UnmarshalJSON reads a JSON number or a string holding one.
func (n *Number) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if unq, err := strconv.Unquote(s); err == nil {
		s = strings.TrimSpace(unq)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return &json.UnmarshalTypeError{Value: "value " + string(b), Type: reflect.TypeFor[float64]()}
	}
	*n = Number(v)
	return nil
}

// Keyed is what every keyed REST adapter's New works out from its config section: the
// API's base URL (endpoint, else the default), the environment variable its key is read
// from (api_key_env, else the default), and the client and clock of the options.
// Adapters embed it.
type Keyed struct {
	Base   *url.URL
	KeyEnv string
	Client *Client
	Now    func() time.Time
}

// NewKeyed checks endpoint (an Invalid error naming the key when it is not an absolute
// http(s) URL) and fills a Keyed for provider.
func NewKeyed(provider, endpoint, defEndpoint, keyEnv, defKeyEnv string, opts ...Option) (Keyed, error) {
	base, err := BaseURL(provider, endpoint, defEndpoint)
	if err != nil {
		return Keyed{}, err
	}
	if keyEnv == "" {
		keyEnv = defKeyEnv
	}
	s := Apply(opts...)
	return Keyed{Base: base, KeyEnv: keyEnv, Client: NewClient("", s), Now: s.Now}, nil
}

// URL is the base URL with path appended and query set.
func (k Keyed) URL(path, query string) string {
	u := *k.Base
	u.Path += path
	u.RawQuery = query
	return u.String()
}
