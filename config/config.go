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
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/robfig/cron/v3"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/registry"
)

// Defaults that apply when the file (or a key) is absent.
const (
	DefaultSchedule   = "0 */6 * * *"
	DefaultTimeout    = 10 * time.Minute
	DefaultListen     = "127.0.0.1:8080"
	DefaultStaleAfter = 7 * 24 * time.Hour
	DefaultParallel   = 4
)

// Config is the whole file.
type Config struct {
	Store     Store     `toml:"store"`
	Refresh   Refresh   `toml:"refresh"`
	Daemon    Daemon    `toml:"daemon"`
	Recommend Recommend `toml:"recommend"`
	// Providers is decoded from [providers.*] by Parse (see fileType).
	Providers Providers `toml:"-"`

	// Path is the file the config came from ("" for built-in defaults).
	Path string `toml:"-"`
}

// Store is [store].
type Store struct {
	Path string `toml:"path"`
	// KeepHistory prunes closed price intervals older than this on the daemon's nightly
	// job ("365d"); zero keeps everything.
	KeepHistory providers.Duration `toml:"keep_history"`
}

// Refresh is [refresh].
type Refresh struct {
	Schedule string             `toml:"schedule"`
	Timeout  providers.Duration `toml:"timeout"`
	// Parallel bounds how many providers refresh at once.
	Parallel int `toml:"parallel"`
}

// Daemon is [daemon].
type Daemon struct {
	Listen string `toml:"listen"`
}

// Recommend is [recommend].
type Recommend struct {
	// StaleAfter: prices older than this produce a warning naming their providers.
	StaleAfter providers.Duration `toml:"stale_after"`
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

func (c *Config) applyDefaults() {
	if c.Refresh.Schedule == "" {
		c.Refresh.Schedule = DefaultSchedule
	}
	if c.Refresh.Timeout.Duration == 0 {
		c.Refresh.Timeout.Duration = DefaultTimeout
	}
	if c.Refresh.Parallel <= 0 {
		c.Refresh.Parallel = DefaultParallel
	}
	if c.Daemon.Listen == "" {
		c.Daemon.Listen = DefaultListen
	}
	if c.Recommend.StaleAfter.Duration == 0 {
		c.Recommend.StaleAfter.Duration = DefaultStaleAfter
	}
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

// Load reads path. When path is "" it reads DefaultPath if that exists and otherwise
// returns the defaults. Errors are pricing.Invalid and name the file, line and key.
func Load(path string) (*Config, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultPath()
	}
	b, err := os.ReadFile(path)
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
	file := reflect.New(fileType)
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(file.Interface()); err != nil {
		return nil, pricing.Errorf(pricing.Invalid, "config: %s", providers.TOMLErrorString(path, err))
	}
	c := &Config{Path: path}
	c.fromFile(file.Elem())
	c.applyDefaults()
	if err := c.validate(b); err != nil {
		return nil, err
	}
	return c, nil
}

// validate checks what the TOML types can't: cron specs. Line numbers are found by
// looking the key's value up in the file text.
func (c *Config) validate(src []byte) error {
	check := func(section, spec string) error {
		if spec == "" {
			return nil
		}
		if _, err := cron.ParseStandard(spec); err != nil {
			return pricing.Errorf(pricing.Invalid, "config: %s:%d: [%s] schedule %q: %v", c.Path, lineOf(src, spec), section, spec, err)
		}
		return nil
	}
	if err := check("refresh", c.Refresh.Schedule); err != nil {
		return err
	}
	for name, cm := range c.Providers.Commons() {
		if err := check("providers."+name, cm.Schedule); err != nil {
			return err
		}
	}
	return nil
}

// lineOf returns the 1-based line of the first occurrence of a quoted value, 0 if absent.
func lineOf(src []byte, value string) int {
	i := bytes.Index(src, []byte(`"`+value+`"`))
	if i < 0 {
		return 0
	}
	return 1 + bytes.Count(src[:i], []byte("\n"))
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
