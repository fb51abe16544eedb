package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pickergpu/picker/config"
	"github.com/pickergpu/picker/providers/httpx"
)

// Issue 26: every config key error is exit 2 and names the file, line and key; before,
// `timeout = 600` named neither, `parallel = -3` was taken as the default, a bad listen
// port was exit 1 once the daemon tried it, and a gcp section without a project said
// "gcp: gcp: project is required".
func TestConfigKeyErrors(t *testing.T) {
	for _, tt := range []struct {
		name, cfg string
		args      []string
		want      []string
	}{
		{"duration as a number", "[refresh]\ntimeout = 600\n", []string{"offers"},
			[]string{"c.toml:2:1", `"refresh.timeout"`, "duration string", `"600s"`}},
		{"negative parallel", "[refresh]\nparallel = -3\n", []string{"offers"},
			[]string{"c.toml:2:1", "[refresh] parallel -3", "between 1 and 64"}},
		{"bad listen port", "[daemon]\nlisten = \"127.0.0.1:99999\"\n", []string{"daemon"},
			[]string{"c.toml:2:1", "[daemon] listen", `port "99999"`}},
		{"gcp without a project", "[providers.gcp]\nenabled = true\n", []string{"refresh", "--provider", "gcp"},
			[]string{"c.toml:1:2: [providers.gcp] project is required"}},
		{"bad runpod clouds", "[providers.runpod]\n\nclouds = [\"cheap\"]\n", []string{"refresh", "--provider", "runpod"},
			[]string{"c.toml:3:1", `[providers.runpod] clouds: "cheap"`}},
		{"bad lambda endpoint", "[providers.lambda]\nendpoint = \"ftp://x\"\n", []string{"refresh", "--provider", "lambda"},
			[]string{"c.toml:2:1", `[providers.lambda] endpoint "ftp://x"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "c.toml")
			if err := os.WriteFile(cfg, []byte(tt.cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, tempDB(t), false, append([]string{"--config", cfg}, tt.args...)...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q does not say %q", r.stderr, w)
				}
			}
			for _, bad := range []string{"gcp: gcp:", "runpod: runpod:", "lambda: lambda:", "--help"} {
				if strings.Contains(r.stderr, bad) {
					t.Errorf("stderr %q says %q", r.stderr, bad)
				}
			}
		})
	}
}

// Issue 26: --listen is checked as the key is, and an address in use names where it
// came from.
func TestConfigListenFlagAndSource(t *testing.T) {
	if r := runCLI(t, tempDB(t), false, "daemon", "--listen", "localhost"); r.code != 2 || !strings.Contains(r.stderr, `--listen "localhost": want HOST:PORT`) {
		t.Errorf("--listen localhost: exit %d %q; want 2 naming the flag", r.code, r.stderr)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(cfg, []byte("[daemon]\n\nlisten = \""+busy.Addr().String()+"\"\n"), 0o644)
	r := runCLI(t, tempDB(t), false, "--config", cfg, "daemon")
	if r.code != 1 || !strings.Contains(r.stderr, "[daemon] listen at "+cfg+":3:1") {
		t.Errorf("address in use: exit %d %q; want 1 naming the key and its line", r.code, r.stderr)
	}
}

// Issue 26: config.example.toml speaks of routes the daemon serves only (it documented
// a /readyz that answered 404), and its [store] section leaves the database where
// XDG_DATA_HOME says.
func TestConfigExampleMatchesTheDaemon(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "config.example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	routes := regexp.MustCompile(`(?:^|[\s(])(/(?:[a-z]+z|v1/[a-z]+))\b`).FindAllStringSubmatch(string(b), -1)
	if len(routes) == 0 {
		t.Fatal("the example names no route; the pattern is stale")
	}
	_, srv := newTestAPI(t)
	for _, m := range routes {
		resp, err := http.Get(srv.URL + m[1])
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			t.Errorf("config.example.toml names %s, which the daemon answers 404", m[1])
		}
	}
	c, err := config.Parse(b, "config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_DATA_HOME", "/xdg/data")
	if got, want := c.DBPath(""), "/xdg/data/picker/picker.db"; got != want {
		t.Errorf("with the example, the database is %s; want %s (XDG_DATA_HOME)", got, want)
	}
}

// Issue 26: picker's own messages about keys and tokens come through the redactor
// whole: they say where a secret is read from and hold none.
func TestRedactLeavesPickersMessages(t *testing.T) {
	env := map[string]string{"PICKER_TOKEN": "daemon-t0ken-5678"}
	a, srv := newGuardedAPI(t, "[daemon]\ntoken_env = \"PICKER_TOKEN\"\n[providers.lambda]\napi_key_env = \"MY_LAMBDA_KEY\"\n", env)
	var msgs []string
	code, body := get(t, srv.URL+"/v1/offers")
	var apiErr struct{ Error string }
	if err := json.Unmarshal(body, &apiErr); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("GET without the token: %d %s", code, body)
	}
	msgs = append(msgs, apiErr.Error)
	a.m.Getenv = func(string) string { return "" } // the token's variable unset
	loopback, _ := net.ResolveTCPAddr("tcp", "127.0.0.1:8080")
	if err := a.checkExposure(loopback); err != nil {
		msgs = append(msgs, err.Error())
	}
	a.cfg.Daemon.TokenEnv = ""
	anywhere, _ := net.ResolveTCPAddr("tcp", "0.0.0.0:8080")
	if err := a.checkExposure(anywhere); err != nil {
		msgs = append(msgs, err.Error())
	}
	for _, env := range []string{"MY_LAMBDA_KEY", ""} {
		if _, err := httpx.APIKey("lambda", env, true); err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if _, err := config.Parse([]byte("[daemon]\ntoken_env = \"not a name!\"\n"), "c.toml"); err != nil {
		msgs = append(msgs, err.Error())
	}
	if len(msgs) != 6 {
		t.Fatalf("made %d messages, want 6: %q", len(msgs), msgs)
	}
	red := a.redactor()
	for _, m := range msgs {
		if got := red.String(m); got != m {
			t.Errorf("redacted %q\n  into   %q", m, got)
		}
	}
}
