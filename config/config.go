// Package config loads picker's TOML config (config.example.toml documents every key)
// strictly: an unknown key, a bad cron spec or a bad duration is an error naming the
// file, line and key.
//
// The [providers.*] sections come from the one adapter list, providers/registry: each
// descriptor's Config type decodes its section, so adding an adapter adds its section
// here with no edit. Only cmd/picker imports this package.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/registry"
	"github.com/pickergpu/picker/redact"
	"github.com/pickergpu/picker/regfile"
	"github.com/pickergpu/picker/scheduler"
)

// Defaults that apply when the file (or a key) is absent.
const (
	DefaultSchedule   = "0 */6 * * *"
	DefaultTimeout    = 10 * time.Minute
	DefaultListen     = "127.0.0.1:8080"
	DefaultStaleAfter = 7 * 24 * time.Hour
	DefaultParallel   = 4
	// DefaultMaxAnswerMiB caps one provider answer (an HTTP body) unless
	// [refresh] max_answer_mib says otherwise.
	DefaultMaxAnswerMiB = 64
	// MaxAnswerMiB is the largest max_answer_mib accepted. An answer is read whole and
	// then decoded, so a refresh's peak RSS is about twice its largest answer (issue 30:
	// the old maximum, 4096, let a 3 GiB body pass 6 GiB RSS); the largest real answers
	// (a GCP SKU page of 5,000, an Azure retail-prices page) are a few MB. 256 MiB keeps
	// a hostile answer's cost near half a GiB.
	MaxAnswerMiB = 256
	// DefaultKeepHistory is [store] keep_history when the file does not set it: closed
	// price intervals older than 90 days are pruned nightly, so history is bounded by
	// default (issue 30: a provider changing 4,000 prices a refresh wrote ~417 MB a day
	// at the 1-minute minimum, kept for ever). keep_history = "0" keeps everything.
	DefaultKeepHistory = 90 * 24 * time.Hour
	// DefaultMaxConcurrentPerCPU: the API's requests are CPU-bound (a recommendation
	// reads and fits tens of thousands of offers), so more at once than a few per CPU
	// only adds latency and memory; [daemon] max_concurrent defaults to this many per
	// CPU, at least 8 and at most 64.
	DefaultMaxConcurrentPerCPU = 4
	// MinInterval is the shortest schedule period accepted: a provider refreshed more
	// often than once a minute gains nothing and can get the key rate-limited.
	MinInterval = time.Minute
)

// Ranges of the duration keys; a value outside is an error naming the key.
var (
	timeoutRange     = [2]time.Duration{time.Second, 24 * time.Hour}
	keepHistoryRange = [2]time.Duration{time.Hour, 100 * 365 * 24 * time.Hour}
	staleAfterRange  = [2]time.Duration{time.Minute, 100 * 365 * 24 * time.Hour}
)

// Config is the whole file.
type Config struct {
	Store     Store     `toml:"store"`
	Refresh   Refresh   `toml:"refresh"`
	Daemon    Daemon    `toml:"daemon"`
	Recommend Recommend `toml:"recommend"`
	// Watches are the [[watch]] entries: price alerts the daemon evaluates after each
	// refresh (watch.go).
	Watches []Watch `toml:"watch"`
	// Providers is decoded from [providers.*] by Parse (see fileType).
	Providers Providers `toml:"-"`

	// Path is the file the config came from ("" for built-in defaults).
	Path string `toml:"-"`
	// meta is where the file sets each key, for messages about them.
	meta meta `toml:"-"`
}

// Store is [store].
type Store struct {
	Path string `toml:"path"`
	// KeepHistory prunes closed price intervals older than this on the daemon's nightly
	// job ("365d"); DefaultKeepHistory when unset; "0" keeps everything.
	KeepHistory providers.Duration `toml:"keep_history"`
}

// Refresh is [refresh].
type Refresh struct {
	Schedule string             `toml:"schedule"`
	Timeout  providers.Duration `toml:"timeout"`
	// Parallel bounds how many providers refresh at once.
	Parallel int `toml:"parallel"`
	// MaxAnswerMiB caps one provider answer (one HTTP response body, every adapter).
	MaxAnswerMiB int `toml:"max_answer_mib"`
}

// Daemon is [daemon].
type Daemon struct {
	Listen string `toml:"listen"`
	// TokenEnv names the environment variable holding the bearer token every API
	// request must carry; required when Listen is not a loopback address.
	TokenEnv string `toml:"token_env"`
	// Hosts are the names the API answers to besides the listen address and
	// localhost (the Host header is checked: DNS rebinding).
	Hosts []string `toml:"hosts"`
	// AllowHub lets API requests fetch configs from the Hugging Face Hub (rate-limited,
	// failures cached); off, the API resolves catalog names and cached configs only.
	AllowHub bool `toml:"allow_hub"`
	// MaxConcurrent bounds the API requests worked on at once; more get 503.
	MaxConcurrent int `toml:"max_concurrent"`
}

// Recommend is [recommend].
type Recommend struct {
	// StaleAfter: prices older than this produce a warning naming their providers.
	StaleAfter providers.Duration `toml:"stale_after"`
}

// Watch is one [[watch]] entry: a job (recommend's flags as one string, as typed after
// `picker recommend`), one threshold, and where to POST an alert. cmd/picker binds Job
// (config cannot: the flags are the command's) and reports a bad flag with WatchError.
type Watch struct {
	Name string `toml:"name"`
	Job  string `toml:"job"`
	// Exactly one threshold, in dollars: the top offer's hourly price, the job's
	// est_cost_usd (the job needs --tokens, --requests or --image-count) or the ranked
	// figure per unit of work (per million tokens, per image).
	MaxUSDHr      *float64 `toml:"max_usd_hr"`
	MaxUSDJob     *float64 `toml:"max_usd_job"`
	MaxUSDPerUnit *float64 `toml:"max_usd_per_unit"`
	// WebhookURL, when set, gets each crossing POSTed as JSON (http or https).
	WebhookURL string `toml:"webhook_url"`
}

// Threshold returns the watch's threshold key and value ("", 0 when none is set).
func (w Watch) Threshold() (key string, v float64) {
	switch {
	case w.MaxUSDHr != nil:
		return "max_usd_hr", *w.MaxUSDHr
	case w.MaxUSDJob != nil:
		return "max_usd_job", *w.MaxUSDJob
	case w.MaxUSDPerUnit != nil:
		return "max_usd_per_unit", *w.MaxUSDPerUnit
	}
	return "", 0
}

// WatchError is an Invalid error about key of the i-th [[watch]] entry (0-based):
// "config: FILE:LINE:COL: [[watch]] "NAME" key: …".
func (c *Config) WatchError(i int, key, format string, args ...any) error {
	where := c.Where("watch", strconv.Itoa(i), key)
	if where == "" {
		where = "built-in defaults"
	}
	name := fmt.Sprintf("#%d", i+1)
	if i < len(c.Watches) && c.Watches[i].Name != "" {
		name = strconv.Quote(c.Watches[i].Name)
	}
	return pricing.Errorf(pricing.Invalid, "config: %s: [[watch]] %s %s%s", where, name, key, fmt.Sprintf(format, args...))
}

// validateWatches checks each [[watch]]: a unique name, a job, exactly one positive
// threshold, an http(s) webhook_url (never echoed: it may carry credentials).
func (c *Config) validateWatches() error {
	seen := map[string]bool{}
	for i, w := range c.Watches {
		switch {
		case strings.TrimSpace(w.Name) == "":
			return c.WatchError(i, "name", " is required")
		case seen[w.Name]:
			return c.WatchError(i, "name", ": another [[watch]] has this name; names must be unique")
		case strings.TrimSpace(w.Job) == "":
			return c.WatchError(i, "job", " is required: recommend's flags, e.g. \"--model llama-2-7b --task lora\"")
		}
		seen[w.Name] = true
		n := 0
		for _, t := range []struct {
			key string
			v   *float64
		}{{"max_usd_hr", w.MaxUSDHr}, {"max_usd_job", w.MaxUSDJob}, {"max_usd_per_unit", w.MaxUSDPerUnit}} {
			if t.v == nil {
				continue
			}
			n++
			if n > 1 {
				return c.WatchError(i, t.key, ": give one threshold of max_usd_hr, max_usd_job and max_usd_per_unit")
			}
			if !(*t.v > 0) || math.IsInf(*t.v, 0) {
				return c.WatchError(i, t.key, " %v: want a positive number of dollars", *t.v)
			}
		}
		if n == 0 {
			return c.WatchError(i, "max_usd_hr", ": a threshold is required: max_usd_hr, max_usd_job or max_usd_per_unit")
		}
		if w.WebhookURL != "" {
			u, err := url.Parse(w.WebhookURL)
			if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
				return c.WatchError(i, "webhook_url", ": want an absolute http or https URL")
			}
		}
	}
	return nil
}

// Providers holds each adapter's decoded [providers.NAME] section by adapter name:
// the adapter's own Config type (a value), in the form its descriptor's New accepts.
// Every adapter in the registry has an entry, zero when the file has no section.
type Providers map[string]providers.Section

// Sections returns the sections in the form a descriptor's New accepts.
func (p Providers) Sections() map[string]any {
	out := make(map[string]any, len(p))
	for name, s := range p {
		out[name] = s
	}
	return out
}

// Commons returns each provider's shared keys.
func (p Providers) Commons() map[string]providers.Common {
	out := make(map[string]providers.Common, len(p))
	for name, s := range p {
		out[name] = s.Shared()
	}
	return out
}

// fileType is the struct the file decodes into: Config's own tables plus a [providers]
// table with one field per registry descriptor, typed by the descriptor's Config, so
// strict decoding catches a key that belongs to another provider and reports its line.
var fileType = func() reflect.Type {
	var pfields []reflect.StructField
	for i, d := range registry.All() {
		pfields = append(pfields, reflect.StructField{
			Name: fmt.Sprintf("P%d", i), // exported, so the decoder fills it
			Type: reflect.TypeOf(d.Config),
			Tag:  reflect.StructTag(fmt.Sprintf(`toml:%q`, d.Name)),
		})
	}
	ct := reflect.TypeFor[Config]()
	var fields []reflect.StructField
	for i := range ct.NumField() {
		if f := ct.Field(i); f.Tag.Get("toml") != "-" {
			fields = append(fields, f)
		}
	}
	return reflect.StructOf(append(fields, reflect.StructField{
		Name: "Providers", Type: reflect.StructOf(pfields), Tag: `toml:"providers"`,
	}))
}()

// fromFile copies a decoded fileType value into c.
func (c *Config) fromFile(v reflect.Value) {
	cv := reflect.ValueOf(c).Elem()
	for i := range v.NumField() - 1 {
		cv.FieldByName(v.Type().Field(i).Name).Set(v.Field(i))
	}
	pv := v.FieldByName("Providers")
	c.Providers = Providers{}
	for i, d := range registry.All() {
		c.Providers[d.Name] = pv.Field(i).Interface().(providers.Section)
	}
}

// Default returns the built-in configuration.
func Default() *Config {
	c := &Config{}
	c.fromFile(reflect.New(fileType).Elem())
	c.applyDefaults()
	return c
}

// applyDefaults fills the keys the file does not set (an empty string, as in
// `listen = ""`, counts as unset). A number or duration it sets keeps its value for
// validate to judge: "parallel = -3" is an error, not the default in disguise.
func (c *Config) applyDefaults() {
	unset := func(table, key string) bool { return !c.meta.defined(table, key) }
	if c.Refresh.Schedule == "" {
		c.Refresh.Schedule = DefaultSchedule
	}
	if unset("refresh", "timeout") {
		c.Refresh.Timeout.Duration = DefaultTimeout
	}
	if unset("refresh", "parallel") {
		c.Refresh.Parallel = DefaultParallel
	}
	if unset("store", "keep_history") {
		c.Store.KeepHistory.Duration = DefaultKeepHistory
	}
	if unset("refresh", "max_answer_mib") {
		c.Refresh.MaxAnswerMiB = DefaultMaxAnswerMiB
	}
	if c.Daemon.Listen == "" {
		c.Daemon.Listen = DefaultListen
	}
	if unset("daemon", "max_concurrent") {
		c.Daemon.MaxConcurrent = DefaultMaxConcurrent()
	}
	if unset("recommend", "stale_after") {
		c.Recommend.StaleAfter.Duration = DefaultStaleAfter
	}
}

// DefaultMaxConcurrent is [daemon] max_concurrent when the file does not set it.
func DefaultMaxConcurrent() int {
	return min(max(8, DefaultMaxConcurrentPerCPU*runtime.GOMAXPROCS(0)), 64)
}

// DefaultPath is $XDG_CONFIG_HOME/picker/config.toml (~/.config/picker/config.toml).
func DefaultPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "picker", "config.toml")
}

// MaxFileBytes caps the config file: a config is a few KB of TOML, and the cap keeps
// PICKER_CONFIG=/dev/zero or a FIFO from exhausting memory or blocking (regfile).
const MaxFileBytes = 1 << 20

// Load reads path. When path is "" it reads DefaultPath if that exists and otherwise
// returns the defaults. Errors are pricing.Invalid and name the file, line and key.
func Load(path string) (*Config, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultPath()
	}
	b, err := regfile.Read(path, MaxFileBytes)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return Default(), nil
		}
		return nil, pricing.Errorf(pricing.Invalid, "config: %w", err)
	}
	return Parse(b, path)
}

// Parse decodes a config file's bytes; path is used in messages only.
func Parse(b []byte, path string) (*Config, error) {
	// A UTF-8 byte order mark, as Windows editors save, is not TOML's but is no error
	// (issue 30): it is dropped; line numbers are unchanged.
	b = bytes.TrimPrefix(b, []byte("\uFEFF"))
	c := &Config{Path: path, meta: readMeta(b)}
	if err := c.meta.checkTextKinds(path, fileType); err != nil {
		return nil, pricing.Errorf(pricing.Invalid, "config: %w", err)
	}
	file := reflect.New(fileType)
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(file.Interface()); err != nil {
		return nil, pricing.Errorf(pricing.Invalid, "config: %s", providers.TOMLErrorString(path, err))
	}
	c.fromFile(file.Elem())
	c.applyDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Where names the place in the file of a key, given as its path ("daemon", "listen"):
// "FILE:LINE:COL" of the key, else of its table, else the file alone; "" for built-in
// defaults.
func (c *Config) Where(key ...string) string {
	if ki, ok := c.meta.near(key...); ok && c.Path != "" {
		return fmt.Sprintf("%s:%d:%d", c.Path, ki.line, ki.col)
	}
	return c.Path
}

// Sets reports whether the file sets the key, given as its path ("daemon", "listen").
func (c *Config) Sets(key ...string) bool { return c.meta.defined(key...) }

// keyError is an Invalid error about a key: "config: FILE:LINE:COL: [table] key: …",
// where the key is given as its table and name.
func (c *Config) keyError(table, key, format string, args ...any) error {
	path := append(strings.Split(table, "."), key)
	where := c.Where(path...)
	if where == "" {
		where = "built-in defaults"
	}
	return pricing.Errorf(pricing.Invalid, "config: %s: [%s] %s%s", where, table, key, fmt.Sprintf(format, args...))
}

// validate checks what the TOML types can't: cron specs and their period, the ranges of
// durations and counts, the listen address. Each error names the key's line (meta).
func (c *Config) validate() error {
	check := func(table, spec string) error {
		if spec == "" {
			return nil
		}
		if err := CheckSchedule(spec); err != nil {
			return c.keyError(table, "schedule", " %q: %v", spec, err)
		}
		return nil
	}
	if err := check("refresh", c.Refresh.Schedule); err != nil {
		return err
	}
	within := func(table, key string, d time.Duration, r [2]time.Duration, zeroOK bool) error {
		if d == 0 && zeroOK || d >= r[0] && d <= r[1] {
			return nil
		}
		return c.keyError(table, key, " %s: want between %s and %s", d, fmtDur(r[0]), fmtDur(r[1]))
	}
	if err := within("refresh", "timeout", c.Refresh.Timeout.Duration, timeoutRange, false); err != nil {
		return err
	}
	if err := within("store", "keep_history", c.Store.KeepHistory.Duration, keepHistoryRange, true); err != nil {
		return err
	}
	if err := within("recommend", "stale_after", c.Recommend.StaleAfter.Duration, staleAfterRange, false); err != nil {
		return err
	}
	ints := []struct {
		table, key string
		v          int
		lo, hi     int
	}{
		{"refresh", "parallel", c.Refresh.Parallel, 1, 64},
		{"refresh", "max_answer_mib", c.Refresh.MaxAnswerMiB, 1, MaxAnswerMiB},
		{"daemon", "max_concurrent", c.Daemon.MaxConcurrent, 1, 4096},
	}
	for _, n := range ints {
		if n.v < n.lo || n.v > n.hi {
			return c.keyError(n.table, n.key, " %d: want between %d and %d", n.v, n.lo, n.hi)
		}
	}
	if err := CheckListen(c.Daemon.Listen); err != nil {
		return c.keyError("daemon", "listen", " %q: %v", c.Daemon.Listen, err)
	}
	if e := c.Daemon.TokenEnv; e != "" && !envNameRe().MatchString(e) {
		// Not an environment variable's name: most likely the token itself, which
		// must not sit in the file (nor be echoed here).
		return c.keyError("daemon", "token_env", ": want the NAME of an environment variable (A-Z, 0-9, _), not the token itself")
	}
	if err := c.validateWatches(); err != nil {
		return err
	}
	names := make([]string, 0, len(c.Providers))
	for name := range c.Providers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		cm := c.Providers[name].Shared()
		if err := check("providers."+name, cm.Schedule); err != nil {
			return err
		}
		if err := within("providers."+name, "timeout", cm.Timeout.Duration, timeoutRange, true); err != nil {
			return err
		}
	}
	return nil
}

// CheckListen accepts a TCP listen address as net.Listen takes it: HOST:PORT with a
// port from 0 to 65535 (0: any free port) and the host an IP, a name or empty (every
// interface). Checked when the config is read, so a bad port is a usage error naming
// the key rather than a failure once the daemon has opened the database.
func CheckListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want HOST:PORT, e.g. %s", DefaultListen)
	}
	if n, err := strconv.ParseUint(port, 10, 64); err != nil || n > 65535 {
		return fmt.Errorf("port %q: want a number from 0 to 65535", port)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("host %q: want an IP address or a host name", host)
	}
	return nil
}

// ProviderError places an error from building a provider's adapter out of its section:
// one about a key (a pricing.Error naming it as its Param, such as gcp's missing
// project) becomes an Invalid error naming the file, line and key; any other is
// returned with the provider's name in front, once (adapters begin their messages with
// it).
func (c *Config) ProviderError(name string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	key := pricing.ErrorParam(err)
	if key == "" {
		if strings.HasPrefix(msg, name+":") {
			return err
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	msg = strings.TrimPrefix(msg, name+": ")
	if rest, ok := strings.CutPrefix(msg, key); ok {
		msg = rest // "project is required" reads "[providers.gcp] project is required"
	} else {
		msg = ": " + msg
	}
	if c.Path == "" {
		return pricing.Errorf(pricing.Invalid, "config: [providers.%s] %s%s; no config file was read: write it in %s (see config.example.toml) or pass --config", name, key, msg, DefaultPath())
	}
	// Not wrapped: the key is the config's, not a flag the command's --help explains.
	return c.keyError("providers."+name, key, "%s", msg)
}

// Compiled on first use, not in package init, which every picker command runs.
var envNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// CheckSchedule parses a cron spec or descriptor as the scheduler does (scheduler.Parse:
// the zone prefix validated, no panic) and refuses a period under MinInterval. "@every"
// is checked on its own text, after any TZ=/CRON_TZ= prefix: the cron library turns a
// negative or sub-second delay into one second.
func CheckSchedule(spec string) error {
	if d, ok, err := scheduler.Every(spec); err == nil && ok && d < MinInterval {
		return fmt.Errorf("every %v is shorter than the minimum interval %v", d, MinInterval)
	}
	if _, err := scheduler.Parse(spec); err != nil {
		return errors.Unwrap(err)
	}
	return nil
}

func fmtDur(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// Schedule returns the cron spec of a provider: its own, else [refresh] schedule.
func (c *Config) Schedule(provider string) string {
	if s, ok := c.Providers[provider]; ok && s.Shared().Schedule != "" {
		return s.Shared().Schedule
	}
	return c.Refresh.Schedule
}

// Timeout returns a provider's refresh timeout: its own, else [refresh] timeout.
func (c *Config) Timeout(provider string) time.Duration {
	if s, ok := c.Providers[provider]; ok && s.Shared().Timeout.Duration > 0 {
		return s.Shared().Timeout.Duration
	}
	return c.Refresh.Timeout.Duration
}

// Enabled reports whether a provider is enabled: its enabled key, else the adapter's
// default (off, except static when it lists files: listing files is the intent).
func (c *Config) Enabled(provider string) bool {
	s, ok := c.Providers[provider]
	return ok && s.Shared().IsEnabled(s.DefaultEnabled())
}

// DBPath resolves the database path: flag/env value, else [store] path, else
// $XDG_DATA_HOME/picker/picker.db.
func (c *Config) DBPath(override string) string {
	p := override
	if p == "" {
		p = c.Store.Path
	}
	if p == "" {
		dir := os.Getenv("XDG_DATA_HOME")
		if dir == "" {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".local", "share")
		}
		return filepath.Join(dir, "picker", "picker.db")
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// String is used in messages.
func (c *Config) String() string {
	if c.Path == "" {
		return "built-in defaults"
	}
	return fmt.Sprintf("config %s", c.Path)
}

// wellKnownSecretEnv are variables read by picker or its SDKs whose values are secrets
// even though no config key names them.
var wellKnownSecretEnv = []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}

// Secrets returns the secret values the config points at, for the redactor: the value
// of every environment variable a *_env key names (api_key_env of each provider,
// [daemon] token_env) plus the well-known ones, and a *_env key's own text when it is
// not a variable name (a key pasted where its variable's name belongs).
func (c *Config) Secrets(getenv func(string) string) []string {
	var names, out []string
	names = append(names, wellKnownSecretEnv...)
	add := func(name string) {
		if name == "" {
			return
		}
		if envNameRe().MatchString(name) {
			names = append(names, name)
		}
		// Not a variable's name, or a valid name shaped like a key (hf_AbC123…,
		// sk_live_…): the text itself is masked too (issue 30: such a value was stored
		// in refresh_runs.error and served by /v1/providers).
		if !envNameRe().MatchString(name) || redact.CredentialShaped(name) {
			out = append(out, name)
		}
	}
	add(c.Daemon.TokenEnv)
	for _, s := range c.Providers {
		v := reflect.ValueOf(s)
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			continue
		}
		for i := range v.NumField() {
			tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ",")
			if strings.HasSuffix(tag, "_env") && v.Field(i).Kind() == reflect.String {
				add(v.Field(i).String())
			}
		}
	}
	for _, n := range names {
		if val := getenv(n); val != "" {
			out = append(out, val)
		}
	}
	// A password in HF_ENDPOINT's userinfo (a private mirror) is a secret too.
	if u, err := url.Parse(getenv("HF_ENDPOINT")); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	return out
}
