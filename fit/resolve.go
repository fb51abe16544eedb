package fit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// DefaultHFEndpoint is the Hugging Face Hub used when HF_ENDPOINT is not set.
const DefaultHFEndpoint = "https://huggingface.co"

// ResolveOptions says how ResolveModel reaches the Hugging Face Hub. The zero value uses
// DefaultHFEndpoint, no token, no cache and an http.Client with a 15 s timeout; the CLI and
// the daemon use ResolveOptionsFromEnv, tests point Endpoint at an httptest server.
type ResolveOptions struct {
	Endpoint string       // Hub base URL ($HF_ENDPOINT)
	Token    string       // bearer token for gated repositories ($HF_TOKEN)
	CacheDir string       // fetched configs are kept under CacheDir/<owner>/<name>/config.json; "" = no cache
	Client   *http.Client // nil = a client with a 15 s timeout
	// Params, when set, is the --params raw count ("7b", "6.74e9"): with an empty ref it
	// makes a shape-guessed model; with a ref it overrides nothing and is ignored.
	Params string
}

// ResolveOptionsFromEnv reads HF_ENDPOINT, HF_TOKEN (or HUGGING_FACE_HUB_TOKEN) and the XDG
// cache directory ($XDG_CACHE_HOME/picker/hf, else os.UserCacheDir()/picker/hf).
func ResolveOptionsFromEnv() ResolveOptions {
	o := ResolveOptions{Endpoint: os.Getenv("HF_ENDPOINT"), Token: os.Getenv("HF_TOKEN")}
	if o.Token == "" {
		o.Token = os.Getenv("HUGGING_FACE_HUB_TOKEN")
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		base, _ = os.UserCacheDir()
	}
	if base != "" {
		o.CacheDir = filepath.Join(base, "picker", "hf")
	}
	return o
}

var hubIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ResolveModel finds a model by, in order: a path to a config.json (or a directory holding
// one); a catalog short name, Hub id or alias (case-insensitive); a raw parameter count
// ("7b", "6.74e9", or opt.Params with an empty ref); a Hub id not in the catalog, read
// from the cache or fetched from the Hub. Unknown names are pricing.NotFound errors that
// list the closest catalog names; unreachable or gated Hub repositories are
// pricing.Invalid errors that suggest --model path/to/config.json.
func ResolveModel(ctx context.Context, ref string, opt ResolveOptions) (*Model, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		if opt.Params != "" {
			return ModelFromParams(opt.Params)
		}
		return nil, pricing.Errorf(pricing.Invalid, "no model given: pass --model (a catalog name, a Hugging Face id or a path to config.json) or --params")
	}
	if isPathLike(ref) {
		return modelFromFile(ref)
	}
	if m, ok, err := CatalogModel(ref); ok || err != nil {
		return m, err
	}
	if _, err := ParseParamCount(ref); err == nil {
		return ModelFromParams(ref)
	}
	if hubIDRe.MatchString(ref) && !strings.Contains(ref, "..") {
		return fetchHub(ctx, ref, opt)
	}
	return nil, notFound(ref)
}

func notFound(ref string) error {
	return pricing.Errorf(pricing.NotFound, "unknown model %q; closest catalog names: %s (or pass a Hugging Face id, a path to config.json, or --params)",
		ref, strings.Join(closestNames(ref, 5), ", "))
}

func isPathLike(ref string) bool {
	if strings.HasSuffix(strings.ToLower(ref), ".json") || strings.HasPrefix(ref, ".") || strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "~") {
		return true
	}
	if st, err := os.Stat(ref); err == nil {
		if st.IsDir() {
			_, err := os.Stat(filepath.Join(ref, "config.json"))
			return err == nil
		}
		return true
	}
	return false
}

func modelFromFile(path string) (*Model, error) {
	if strings.HasPrefix(path, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, path[2:])
		}
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "config.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, pricing.Errorf(pricing.NotFound, "model config %s: no such file", path)
		}
		return nil, pricing.Errorf(pricing.Invalid, "model config %s: %v", path, err)
	}
	m, err := ModelFromConfig(path, data)
	if err != nil {
		return nil, err
	}
	m.Source = "file"
	m.Name = filepath.Base(filepath.Dir(path))
	if m.Name == "." || m.Name == "/" || m.Name == "" {
		m.Name = filepath.Base(path)
	}
	if id, _ := (&hfConfig{m: mustMap(data)}).optString("", "_name_or_path"); hubIDRe.MatchString(id) {
		m.HFID = id
	}
	m.Notes = append(m.Notes, "architecture read from "+path)
	return m, nil
}

func mustMap(data []byte) map[string]any {
	c, err := parseHFConfig("", data)
	if err != nil {
		return nil
	}
	return c.m
}

func fetchHub(ctx context.Context, id string, opt ResolveOptions) (*Model, error) {
	var cachePath string
	if opt.CacheDir != "" {
		cachePath = filepath.Join(opt.CacheDir, filepath.FromSlash(id), "config.json")
		if data, err := os.ReadFile(cachePath); err == nil {
			m, err := ModelFromConfig(id+" config.json (cached at "+cachePath+")", data)
			if err == nil {
				m.Name, m.HFID, m.Source = id, id, "hub-cache"
				m.Notes = append(m.Notes, fmt.Sprintf("%s is not in the catalog: config.json read from the cache %s", id, cachePath))
				return m, nil
			}
			// A corrupt cache entry is fetched again below.
		}
	}
	endpoint := strings.TrimRight(opt.Endpoint, "/")
	if endpoint == "" {
		endpoint = DefaultHFEndpoint
	}
	url := endpoint + "/" + id + "/resolve/main/config.json"
	client := opt.Client
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, pricing.Errorf(pricing.Invalid, "model %s: bad Hub URL %s: %v", id, url, err)
	}
	if opt.Token != "" {
		req.Header.Set("Authorization", "Bearer "+opt.Token)
	}
	req.Header.Set("User-Agent", "picker (github.com/pickergpu/picker)")
	hint := "pass --model path/to/config.json with the model's config.json"
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, pricing.Errorf(pricing.Invalid, "model %s is not in the catalog and the Hugging Face Hub (%s) could not be reached: %v; %s",
			id, endpoint, err, hint)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		auth := "set HF_TOKEN to a token that has accepted the model's license"
		if opt.Token != "" {
			auth = "the HF_TOKEN given has no access; accept the model's license on the Hub"
		}
		return nil, pricing.Errorf(pricing.Invalid, "model %s is gated on the Hugging Face Hub (HTTP %d): %s, or %s", id, resp.StatusCode, auth, hint)
	case resp.StatusCode == http.StatusNotFound:
		return nil, pricing.Errorf(pricing.NotFound, "model %s: not in the catalog and not on the Hugging Face Hub (HTTP 404); closest catalog names: %s",
			id, strings.Join(closestNames(id, 5), ", "))
	case resp.StatusCode != http.StatusOK:
		return nil, pricing.Errorf(pricing.Invalid, "model %s: the Hugging Face Hub answered HTTP %d; %s", id, resp.StatusCode, hint)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, pricing.Errorf(pricing.Invalid, "model %s: reading config.json from the Hub: %v; %s", id, err, hint)
	}
	m, err := ModelFromConfig(id+" config.json (from "+endpoint+")", data)
	if err != nil {
		return nil, err
	}
	m.Name, m.HFID, m.Source = id, id, "hub"
	note := fmt.Sprintf("%s is not in the catalog: config.json fetched from %s", id, endpoint)
	if cachePath != "" {
		if err := writeAtomic(cachePath, data); err == nil {
			note += " and cached at " + cachePath
		}
	}
	m.Notes = append(m.Notes, note)
	return m, nil
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

// ParseParamCount parses a raw parameter count: "7b", "7B", "1.5b", "350m", "6.74e9",
// "6738415616".
func ParseParamCount(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(strings.ReplaceAll(s, "_", "")))
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "t"):
		mult, t = 1e12, strings.TrimSuffix(t, "t")
	case strings.HasSuffix(t, "b"):
		mult, t = 1e9, strings.TrimSuffix(t, "b")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, pricing.Errorf(pricing.Invalid, "--params %q: want a parameter count like 7b, 350m or 6.74e9", s)
	}
	n := f * mult
	if n < 1e6 || n > 1e13 {
		return 0, pricing.Errorf(pricing.Invalid, "--params %q: %g parameters is outside 1M..10T", s, n)
	}
	return int64(math.Round(n)), nil
}

// ModelFromParams makes a model from a parameter count alone. Its shape is guessed as a
// Llama-style decoder (layers = hidden/128 as in Llama 2 7B/13B, gated MLP 2.6875 x hidden,
// 32k vocabulary) so that activations and KV cache have an order of magnitude; the
// weights use the exact count.
func ModelFromParams(count string) (*Model, error) {
	n, err := ParseParamCount(count)
	if err != nil {
		return nil, err
	}
	h := int64(math.Cbrt(float64(n)*128/12)/128+0.5) * 128
	if h < 256 {
		h = 256
	}
	L := n / (12 * h * h)
	if L < 2 {
		L = 2
	}
	heads := h / 128
	if heads < 2 {
		heads = 2
	}
	cfg := fmt.Sprintf(`{"model_type":"llama","hidden_size":%d,"num_hidden_layers":%d,"num_attention_heads":%d,"intermediate_size":%d,"vocab_size":32000}`,
		h, L, heads, h*43/16)
	m, err := ModelFromConfig("--params", []byte(cfg))
	if err != nil {
		return nil, err
	}
	// Keep the user's exact count: the difference goes to the quantizable linear weights.
	if diff := n - m.params; m.linearParams+diff > 0 {
		m.linearParams += diff
	}
	m.params, m.active = n, n
	m.Kind, m.Architecture, m.Source = KindParams, "unknown", "params"
	m.Name = strings.TrimSpace(count)
	m.Notes = append(m.Notes, fmt.Sprintf("only the parameter count is known: shape guessed as a Llama-style decoder (hidden %d, %d layers, 32k vocabulary)", h, L))
	return m, nil
}
