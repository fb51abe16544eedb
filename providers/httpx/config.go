package httpx

import (
	"net/url"
	"os"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// BaseURL parses a provider's `endpoint` setting, falling back to def when it is empty.
// The result has no trailing slash, so adapters append "/api/...". A URL that is not
// absolute http(s) is an Invalid (config) error whose Param is the key, "endpoint".
func BaseURL(provider, endpoint, def string) (*url.URL, error) {
	raw := strings.TrimSpace(endpoint)
	if raw == "" {
		raw = def
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, pricing.ParamErrorf(pricing.Invalid, "endpoint", "%s: endpoint %q: want an absolute http:// or https:// URL", provider, endpoint)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, pricing.ParamErrorf(pricing.Invalid, "endpoint", "%s: endpoint %q: a base URL takes no query or fragment", provider, endpoint)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// APIKey reads the key from the environment variable named env. When required and the
// variable is unset or empty, the error (Invalid: a setup problem) names the variable and
// the config key; the key's value never appears in any message.
func APIKey(provider, env string, required bool) (string, error) {
	if env == "" {
		if required {
			return "", pricing.Errorf(pricing.Invalid, "%s: no API key: set [providers.%s] api_key_env to the name of an environment variable holding the key", provider, provider)
		}
		return "", nil
	}
	key := strings.TrimSpace(os.Getenv(env))
	if key == "" && required {
		return "", pricing.Errorf(pricing.Invalid, "%s: no API key: environment variable %s is unset or empty (named by [providers.%s] api_key_env)", provider, env, provider)
	}
	return key, nil
}
