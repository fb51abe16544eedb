// Package modelref finds the model a job names and hands fit a parsed spec: a built-in
// catalog name, a local config.json (or a directory holding one), a raw parameter count,
// or a Hugging Face Hub id fetched once and cached on disk. It is the I/O that fit, being
// pure, does not do: it reads files and the network, and its Options come from the
// environment (HF_ENDPOINT, HF_TOKEN, XDG_CACHE_HOME) through FromEnv. Only cmd/picker
// imports it.
package modelref

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/regfile"
)

// DefaultHFEndpoint is the Hugging Face Hub used when HF_ENDPOINT is not set.
const DefaultHFEndpoint = "https://huggingface.co"

// Where a resolved model came from (fit.Model.Source); the catalog and --params sources
// are fit's own ("catalog", "params").
const (
	SourceFile     = "file"
	SourceHub      = "hub"
	SourceHubCache = "hub-cache"
)

// Options says how Resolve reaches the Hugging Face Hub. The zero value uses
// DefaultHFEndpoint, no token, no cache and an http.Client with a 15 s timeout; the CLI and
// the daemon use FromEnv, tests point Endpoint at an httptest server.
type Options struct {
	Endpoint string       // Hub base URL ($HF_ENDPOINT)
	Token    string       // bearer token for gated repositories ($HF_TOKEN)
	CacheDir string       // fetched configs are kept under CacheDir/<owner>/<name>/config.json; "" = no cache
	Client   *http.Client // nil = a client with a 15 s timeout
	// Download, when set, wraps every network fetch of a Hub config (after a cache
	// miss): it may refuse it (the daemon's [daemon] allow_hub), rate-limit it or
	// remember its failure, and otherwise calls fetch. nil fetches.
	Download func(ctx context.Context, id string, fetch func() ([]byte, error)) ([]byte, error)
}

// FromEnv reads HF_ENDPOINT, HF_TOKEN (or HUGGING_FACE_HUB_TOKEN) and the XDG cache
// directory ($XDG_CACHE_HOME/picker/hf, else os.UserCacheDir()/picker/hf) through getenv,
// so that tests hand it their own environment.
func FromEnv(getenv func(string) string) Options {
	o := Options{Endpoint: getenv("HF_ENDPOINT"), Token: getenv("HF_TOKEN")}
	if o.Token == "" {
		o.Token = getenv("HUGGING_FACE_HUB_TOKEN")
	}
	base := getenv("XDG_CACHE_HOME")
	if base == "" {
		base, _ = os.UserCacheDir()
	}
	if base != "" {
		o.CacheDir = filepath.Join(base, "picker", "hf")
	}
	return o
}

// Compiled on first use, not in package init, which every picker command runs.
var hubIDRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
})

// Resolve finds a model by, in order: a path to a config.json (or a directory holding
// one); a catalog short name, Hub id or alias (case-insensitive); a raw parameter count
// ("7b", "6.74e9", or params with an empty ref); a Hub id not in the catalog, read from
// the cache or fetched from the Hub. Unknown names are pricing.NotFound errors that list
// the closest catalog names; unreachable or gated Hub repositories are pricing.Invalid
// errors that suggest --model path/to/config.json. Every error names the parameter
// ("model" or "params") as pricing.Error.Param.
func Resolve(ctx context.Context, ref, params string, opt Options) (*model.Model, error) {
	ref = strings.TrimSpace(ref)
	param := "model" // a bad --params is only ever read when --model is empty
	if ref == "" && params != "" {
		param = "params"
	}
	m, err := resolve(ctx, ref, params, opt)
	if pe := (*pricing.Error)(nil); errors.As(err, &pe) {
		return nil, pricing.WithParam(err, param) // not a cancelled context: about the parameter
	}
	if err != nil {
		return nil, err
	}
	if ref != "" && params != "" {
		// Both given: the stated count must describe the model the shapes describe.
		if err := m.CheckStatedParams(params); err != nil {
			return nil, pricing.WithParam(err, "params")
		}
	}
	return m, nil
}

func resolve(ctx context.Context, ref, params string, opt Options) (*model.Model, error) {
	if ref == "" {
		if params != "" {
			return model.ModelFromParams(params)
		}
		return nil, pricing.Errorf(pricing.Invalid, "no model given: pass --model (a catalog name, a Hugging Face id or a path to config.json) or --params")
	}
	if IsPath(ref) {
		return fromFile(ref)
	}
	if m, ok, err := model.CatalogModel(ref); ok || err != nil {
		return m, err
	}
	if _, err := model.ParseParamCount(ref); err == nil {
		return model.ModelFromParams(ref)
	}
	if hubIDRe().MatchString(ref) && !strings.Contains(ref, "..") {
		return fetchHub(ctx, ref, opt)
	}
	return nil, pricing.Errorf(pricing.NotFound, "unknown model %q; closest catalog names: %s (or pass a Hugging Face id, a path to config.json, or --params)",
		ref, strings.Join(model.ClosestCatalogNames(ref, 5), ", "))
}

// IsPath reports whether a --model value names a file on disk rather than a catalog name
// or a Hub id: it ends in .json, starts like a path (".", "/", "~") or holds a backslash,
// or it exists (a file, or a directory holding config.json). The HTTP API refuses such
// values, since it never reads the daemon's files.
func IsPath(ref string) bool {
	if strings.HasSuffix(strings.ToLower(ref), ".json") || strings.HasPrefix(ref, ".") || strings.HasPrefix(ref, "/") ||
		strings.HasPrefix(ref, "~") || strings.Contains(ref, `\`) {
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

// MaxConfigBytes caps a local config.json: the Hub's are a few KB (the largest, with
// long quantization or vision sections, some tens of KB); the cap keeps --model
// /dev/zero or a FIFO from exhausting memory or blocking (regfile).
const MaxConfigBytes = 4 << 20

// fromFile reads a local config.json (or a directory's).
func fromFile(path string) (*model.Model, error) {
	if strings.HasPrefix(path, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, path[2:])
		}
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "config.json")
	}
	data, err := regfile.Read(path, MaxConfigBytes)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, pricing.Errorf(pricing.NotFound, "model config %s: no such file", path)
		}
		return nil, pricing.Errorf(pricing.Invalid, "model config %s: %v", path, err)
	}
	m, err := model.ModelFromConfig(path, data)
	if err != nil {
		return nil, err
	}
	m.Source = SourceFile
	m.Name = filepath.Base(filepath.Dir(path))
	if m.Name == "." || m.Name == "/" || m.Name == "" {
		m.Name = filepath.Base(path)
	}
	// A config saved by transformers names the repository it came from.
	var origin struct {
		NameOrPath string `json:"_name_or_path"`
	}
	if json.Unmarshal(data, &origin) == nil && hubIDRe().MatchString(origin.NameOrPath) {
		m.HFID = origin.NameOrPath
	}
	m.Notes = append(m.Notes, "architecture read from "+path)
	return m, nil
}

// hubHint is how to get past a Hub that cannot serve a config.
const hubHint = "pass --model path/to/config.json with the model's config.json"

// fetchHub resolves a Hub id: from the cache when it holds a parsable config, else from
// the Hub, caching what it fetched.
func fetchHub(ctx context.Context, id string, opt Options) (*model.Model, error) {
	var cachePath string
	if opt.CacheDir != "" {
		cachePath = filepath.Join(opt.CacheDir, filepath.FromSlash(id), "config.json")
		if m, ok := fromCache(id, cachePath); ok {
			return m, nil
		}
	}
	endpoint := strings.TrimRight(opt.Endpoint, "/")
	if endpoint == "" {
		endpoint = DefaultHFEndpoint
	}
	fetch := func() ([]byte, error) { return download(ctx, id, endpoint, opt) }
	var data []byte
	var err error
	if opt.Download != nil {
		data, err = opt.Download(ctx, id, fetch)
	} else {
		data, err = fetch()
	}
	if err != nil {
		return nil, err
	}
	m, err := hubModel(id, "from "+shownURL(endpoint), data, SourceHub)
	if err != nil {
		return nil, err
	}
	note := fmt.Sprintf("%s is not in the catalog: config.json fetched from %s", id, shownURL(endpoint))
	if cachePath != "" {
		if err := writeAtomic(cachePath, data); err == nil {
			note += " and cached at " + cachePath
		}
	}
	m.Notes = append(m.Notes, note)
	return m, nil
}

// hubModel parses a Hub repository's config.json (from says where it was read, for
// error messages) and names the model by its id.
func hubModel(id, from string, data []byte, source string) (*model.Model, error) {
	m, err := model.ModelFromConfig(id+" config.json ("+from+")", data)
	if err != nil {
		return nil, err
	}
	m.Name, m.HFID, m.Source = id, id, source
	return m, nil
}

// fromCache parses a cached config; a missing or corrupt entry is not an error (it is
// fetched again).
func fromCache(id, cachePath string) (*model.Model, bool) {
	data, err := os.ReadFile(cachePath)
	if err != nil {
		return nil, false
	}
	m, err := hubModel(id, "cached at "+cachePath, data, SourceHubCache)
	if err != nil {
		return nil, false
	}
	m.Notes = append(m.Notes, fmt.Sprintf("%s is not in the catalog: config.json read from the cache %s", id, cachePath))
	return m, true
}

// shownURL is raw (HF_ENDPOINT, a URL under it) without its userinfo, for messages:
// HF_ENDPOINT=http://user:password@mirror put the password in the /v1/estimate error
// body and on the Ask page (issue 30). A raw that does not parse is shown as its scheme
// and host only, or not at all.
func shownURL(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		if i := strings.LastIndexByte(raw, '@'); i >= 0 {
			return "…" + raw[i:]
		}
		return raw
	}
	u.User = nil
	return u.String()
}

// withoutUserinfo is err's message with u's userinfo removed (net/http masks only the
// password, as ***, and keeps the user name).
func withoutUserinfo(err error, u *neturl.URL) string {
	msg := err.Error()
	if u == nil || u.User == nil {
		return msg
	}
	if p, ok := u.User.Password(); ok && p != "" {
		msg = strings.ReplaceAll(msg, p, "")
	}
	for _, ui := range []string{u.User.String() + "@", u.User.Username() + ":***@", u.User.Username() + "@"} {
		msg = strings.ReplaceAll(msg, ui, "")
	}
	return msg
}

// download fetches id's config.json from the Hub, mapping each failure to an error that
// says what to do.
func download(ctx context.Context, id, endpoint string, opt Options) ([]byte, error) {
	url := endpoint + "/" + id + "/resolve/main/config.json"
	client := opt.Client
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, pricing.Errorf(pricing.Invalid, "model %s: bad Hub URL %s: %v", id, shownURL(url), strings.ReplaceAll(err.Error(), url, shownURL(url)))
	}
	if opt.Token != "" {
		req.Header.Set("Authorization", "Bearer "+opt.Token)
	}
	req.Header.Set("User-Agent", "picker (github.com/pickergpu/picker)")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, pricing.Errorf(pricing.Invalid, "model %s is not in the catalog and the Hugging Face Hub (%s) could not be reached: %v; %s",
			id, shownURL(endpoint), withoutUserinfo(err, req.URL), hubHint)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		auth := "set HF_TOKEN to a token that has accepted the model's license"
		if opt.Token != "" {
			auth = "the HF_TOKEN given has no access; accept the model's license on the Hub"
		}
		return nil, pricing.Errorf(pricing.Invalid, "model %s is gated on the Hugging Face Hub (HTTP %d): %s, or %s", id, resp.StatusCode, auth, hubHint)
	case resp.StatusCode == http.StatusNotFound:
		return nil, pricing.Errorf(pricing.NotFound, "model %s: not in the catalog and not on the Hugging Face Hub (HTTP 404); closest catalog names: %s",
			id, strings.Join(model.ClosestCatalogNames(id, 5), ", "))
	case resp.StatusCode != http.StatusOK:
		return nil, pricing.Errorf(pricing.Invalid, "model %s: the Hugging Face Hub answered HTTP %d; %s", id, resp.StatusCode, hubHint)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, pricing.Errorf(pricing.Invalid, "model %s: reading config.json from the Hub: %v; %s", id, err, hubHint)
	}
	return data, nil
}

// writeAtomic writes through a temporary file renamed over path, so a concurrent reader
// never parses half a config.
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

// CachedIDs lists the Hugging Face ids whose config.json is in opt.CacheDir (fetched by
// an earlier question), sorted: the web page suggests them beside the catalog's names.
func CachedIDs(opt Options) []string {
	if opt.CacheDir == "" {
		return nil
	}
	matches, _ := fs.Glob(os.DirFS(opt.CacheDir), "*/*/config.json")
	ids := make([]string, 0, len(matches))
	for _, m := range matches {
		ids = append(ids, strings.TrimSuffix(m, "/config.json"))
	}
	slices.Sort(ids)
	return ids
}
