package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers/registry"
)

func TestExampleParsesAndCoversEveryOption(t *testing.T) {
	path := filepath.Join("..", "config.example.toml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(b, path)
	if err != nil {
		t.Fatalf("config.example.toml does not parse: %v", err)
	}
	if c.Refresh.Timeout.Duration != 10*time.Minute || c.Recommend.StaleAfter.Duration != 7*24*time.Hour || c.Store.KeepHistory.Duration != 365*24*time.Hour {
		t.Errorf("durations: timeout %v, stale_after %v, keep_history %v", c.Refresh.Timeout, c.Recommend.StaleAfter, c.Store.KeepHistory)
	}
	var raw map[string]any
	if err := toml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	sections, _ := raw["providers"].(map[string]any)
	for _, d := range registry.All() {
		sec, ok := sections[d.Name].(map[string]any)
		if !ok {
			t.Errorf("config.example.toml has no [providers.%s] section", d.Name)
			continue
		}
		for _, o := range d.AllOptions() {
			if _, ok := sec[o.Key]; !ok {
				t.Errorf("config.example.toml [providers.%s] does not document %q", d.Name, o.Key)
			}
		}
		if _, ok := c.Providers.Sections()[d.Name]; !ok {
			t.Errorf("config.Providers has no section for adapter %q", d.Name)
		}
	}
	for name := range sections {
		if _, ok := registry.Lookup(name); !ok {
			t.Errorf("config.example.toml documents [providers.%s], which is not an adapter", name)
		}
	}
}

func TestParseErrorsNameFileLineAndKey(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown key", "[refresh]\nschedule = \"@hourly\"\nshedule = \"x\"\n", []string{"my.toml:3", `"refresh.shedule"`}},
		{"unknown provider", "[providers.nosuchcloud]\nenabled = true\n", []string{"my.toml:", "providers.nosuchcloud"}},
		{"key of another provider", "[providers.aws]\nfiles = [\"a.csv\"]\n", []string{"my.toml:2", "providers.aws.files"}},
		{"bad cron spec", "[providers.aws]\nschedule = \"every tuesday\"\n", []string{"my.toml:2", "providers.aws", "schedule", "every tuesday"}},
		{"bad default cron spec", "[refresh]\nschedule = \"61 * * * *\"\n", []string{"my.toml:2", "[refresh] schedule"}},
		{"bad duration", "[refresh]\ntimeout = \"ten minutes\"\n", []string{"my.toml:2", "ten minutes"}},
		{"wrong type", "[providers.aws]\nregions = \"us-east-1\"\n", []string{"my.toml:2", "regions"}},
		// Issue 26: a number where a duration string belongs used to say only
		// `my.toml: bad duration "600"`, with no line and no key.
		{"duration as a number", "[refresh]\ntimeout = 600\n", []string{"my.toml:2:1", `"refresh.timeout"`, "got a TOML integer", `"600s"`}},
		{"provider duration as a number", "[providers.aws]\nenabled = true\n\ntimeout = 5\n", []string{"my.toml:4", `"providers.aws.timeout"`}},
		{"duration as a bool", "[store]\nkeep_history = true\n", []string{"my.toml:2", `"store.keep_history"`, "got a TOML bool"}},
		{"duration in an inline table", "[providers]\nlambda = { enabled = true, timeout = 30 }\n", []string{"my.toml:2", `"providers.lambda.timeout"`}},
		{"duration under a dotted key", "providers.runpod.timeout = 1.5\n", []string{"my.toml:1", `"providers.runpod.timeout"`, "got a TOML float"}},
		{"syntax", "[store\npath = 1\n", []string{"my.toml:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "my.toml")
			if err == nil {
				t.Fatal("Parse succeeded; want an error")
			}
			if pricing.ErrorCode(err) != pricing.Invalid {
				t.Errorf("code %q; want invalid", pricing.ErrorCode(err))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDefaultsAndResolution(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_DATA_HOME", "/data")
	c, err := Load("")
	if err != nil {
		t.Fatalf("Load with no file: %v", err)
	}
	if got, want := c.DBPath(""), "/data/picker/picker.db"; got != want {
		t.Errorf("DBPath = %q; want %q", got, want)
	}
	if got := c.DBPath("/tmp/x.db"); got != "/tmp/x.db" {
		t.Errorf("DBPath(override) = %q", got)
	}
	if c.Enabled("aws") || c.Enabled("static") {
		t.Error("providers must be disabled without config")
	}
	c2, err := Parse([]byte("[refresh]\nschedule = \"@every 30m\"\n[providers.lambda]\nenabled = true\nschedule = \"@hourly\"\n[providers.static]\nfiles = [\"p.csv\"]\n"), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !c2.Enabled("lambda") || !c2.Enabled("static") || c2.Enabled("aws") {
		t.Errorf("enabled: lambda %v static %v aws %v", c2.Enabled("lambda"), c2.Enabled("static"), c2.Enabled("aws"))
	}
	if c2.Schedule("lambda") != "@hourly" || c2.Schedule("aws") != "@every 30m" {
		t.Errorf("schedules: lambda %q aws %q", c2.Schedule("lambda"), c2.Schedule("aws"))
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml")); err == nil || !strings.Contains(err.Error(), "missing.toml") {
		t.Errorf("Load(missing explicit file) = %v; want an error naming it", err)
	}
}

// TestSectionsComeFromTheRegistry: every adapter's section decodes into the adapter's
// own Config type (the descriptor's), which its New accepts.
func TestSectionsComeFromTheRegistry(t *testing.T) {
	c, err := Parse([]byte("[providers.aws]\nregions = [\"us-east-1\"]\ntimeout = \"2m\"\n"), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Providers.Commons()["aws"].Regions; len(got) != 1 || got[0] != "us-east-1" {
		t.Errorf("aws regions = %v", got)
	}
	if got := c.Timeout("aws"); got != 2*time.Minute {
		t.Errorf("aws timeout = %v, want 2m", got)
	}
	for _, d := range registry.All() {
		sec := c.Providers.Sections()[d.Name]
		if reflect.TypeOf(sec) != reflect.TypeOf(d.Config) {
			t.Errorf("%s: section has type %T, want %T", d.Name, sec, d.Config)
		}
		if _, err := d.New(sec); err != nil && pricing.ErrorCode(err) == pricing.Internal {
			t.Errorf("%s: New refuses its own section: %v", d.Name, err)
		}
	}
}

// TestExampleWorksAsIs: a user who copies config.example.toml gets a refresh and a
// daemon that work: some provider is enabled, and every enabled one has what it needs
// without a secret (no api_key_env; static with files).
func TestExampleWorksAsIs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "config.example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Providers map[string]map[string]any `toml:"providers"`
	}
	if err := toml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var enabled []string
	for name, sec := range raw.Providers {
		if on, _ := sec["enabled"].(bool); !on {
			continue
		}
		enabled = append(enabled, name)
		if env, _ := sec["api_key_env"].(string); env != "" {
			t.Errorf("[providers.%s] is enabled in the example but needs the secret %s", name, env)
		}
		if files, ok := sec["files"].([]any); ok && len(files) == 0 {
			t.Errorf("[providers.%s] is enabled in the example with no files: refresh would fail", name)
		}
	}
	if len(enabled) == 0 {
		t.Error("the example enables no provider: `picker refresh` with it fails")
	}
}

// Issue 26: an error in a provider's section that the adapter finds when it is built
// (gcp's required project) names the file, line and key, once, instead of
// "gcp: gcp: project is required".
func TestProviderErrorNamesTheKey(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/home/u/.config")
	withFile, err := Parse([]byte("[refresh]\ntimeout = \"5m\"\n\n[providers.gcp]\nenabled = true\nendpoint = \"ftp://x\"\n"), "my.toml")
	if err != nil {
		t.Fatal(err)
	}
	gcpNew := func(c *Config) error {
		d, _ := registry.Lookup("gcp")
		_, err := d.New(c.Providers.Sections()["gcp"])
		return err
	}
	for _, tt := range []struct {
		name   string
		c      *Config
		err    error
		want   string
		code   pricing.Code
		noWant string
	}{
		{"missing key: the section's line", withFile, gcpNew(withFile),
			"config: my.toml:4:2: [providers.gcp] project is required (the project whose machine types are listed)", pricing.Invalid, "gcp: gcp:"},
		{"bad key: its own line", withFile, pricing.ParamErrorf(pricing.Invalid, "endpoint", "gcp: endpoint %q: want an http:// or https:// URL", "ftp://x"),
			`config: my.toml:6:1: [providers.gcp] endpoint "ftp://x": want an http:// or https:// URL`, pricing.Invalid, ""},
		{"no file", Default(), gcpNew(Default()),
			"config: [providers.gcp] project is required (the project whose machine types are listed); no config file was read: write it in /home/u/.config/picker/config.toml", pricing.Invalid, "gcp: gcp:"},
		{"not about a key, prefixed by the adapter: unchanged", withFile, pricing.Errorf(pricing.Unavailable, "gcp: quota"), "gcp: quota", pricing.Unavailable, ""},
		{"not about a key, unprefixed: prefixed once", withFile, pricing.Errorf(pricing.Unavailable, "quota"), "gcp: quota", pricing.Unavailable, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.c.ProviderError("gcp", tt.err)
			if !strings.HasPrefix(got.Error(), tt.want) {
				t.Errorf("ProviderError = %q\nwant prefix    %q", got, tt.want)
			}
			if tt.noWant != "" && strings.Contains(got.Error(), tt.noWant) {
				t.Errorf("ProviderError = %q repeats %q", got, tt.noWant)
			}
			if pricing.ErrorCode(got) != tt.code {
				t.Errorf("code %q, want %q", pricing.ErrorCode(got), tt.code)
			}
			if tt.code == pricing.Invalid && pricing.ErrorParam(got) != "" {
				t.Errorf("param %q: a config key is no flag of the command", pricing.ErrorParam(got))
			}
		})
	}
	if withFile.ProviderError("gcp", nil) != nil {
		t.Error("ProviderError(nil) != nil")
	}
}

func TestWhere(t *testing.T) {
	c, err := Parse([]byte("[store]\n\n[daemon]\n  listen = \"127.0.0.1:9\"\n"), "w.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		key  []string
		want string
	}{
		{[]string{"daemon", "listen"}, "w.toml:4:3"},
		{[]string{"daemon", "hosts"}, "w.toml:3:2"}, // absent: its table
		{[]string{"refresh", "timeout"}, "w.toml"},  // no table either: the file
	} {
		if got := c.Where(tt.key...); got != tt.want {
			t.Errorf("Where(%v) = %q, want %q", tt.key, got, tt.want)
		}
	}
	if got := Default().Where("daemon", "listen"); got != "" {
		t.Errorf("Default().Where = %q, want \"\"", got)
	}
	if !c.Sets("daemon", "listen") || c.Sets("daemon", "hosts") || c.Sets("refresh", "timeout") {
		t.Error("Sets: the file sets [daemon] listen only")
	}
}
