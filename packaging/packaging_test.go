package packaging

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/pickergpu/picker/buildinfo"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ldflagsTargets are the -X variables every build stamps: buildinfo's three.
func ldflagsTargets(t *testing.T) []string {
	pkg := reflect.TypeOf(buildinfo.Info{}).PkgPath()
	_ = []*string{&buildinfo.Version, &buildinfo.Commit, &buildinfo.Date} // they exist, as strings
	return []string{pkg + ".Version=", pkg + ".Commit=", pkg + ".Date="}
}

// goMinor is go.mod's go line as major.minor (1.26).
func goMinor(t *testing.T) string {
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(read(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	return m[1]
}

// instructions are a Dockerfile's instructions, continuation lines joined, comments dropped.
func instructions(src string) [][2]string {
	var out [][2]string
	var cur string
	for _, line := range strings.Split(src, "\n") {
		trim := strings.TrimSpace(line)
		if cur == "" && (trim == "" || strings.HasPrefix(trim, "#")) {
			continue
		}
		if strings.HasSuffix(trim, "\\") {
			cur += strings.TrimSuffix(trim, "\\") + " "
			continue
		}
		cur += trim
		op, args, _ := strings.Cut(cur, " ")
		out = append(out, [2]string{strings.ToUpper(op), strings.TrimSpace(args)})
		cur = ""
	}
	return out
}

// TestDockerfile: a golang builder of go.mod's Go version, static binaries stamped
// with buildinfo's ldflags, a distroless or scratch final stage run as a non-root user,
// the data directory a VOLUME, a HEALTHCHECK that needs no curl, the daemon as the
// entrypoint, and a config that gives the non-loopback listener its token.
func TestDockerfile(t *testing.T) {
	ins := instructions(read(t, "Dockerfile"))
	var froms []string
	seen := map[string][]string{} // instructions of the final stage
	var run string
	for _, in := range ins {
		if in[0] == "FROM" {
			froms = append(froms, in[1])
			seen = map[string][]string{}
		}
		seen[in[0]] = append(seen[in[0]], in[1])
		if in[0] == "RUN" {
			run += in[1] + "\n"
		}
	}
	if len(froms) < 2 || !strings.HasPrefix(froms[0], "golang:"+goMinor(t)) {
		t.Errorf("stages %q: want a golang:%s builder and a final stage", froms, goMinor(t))
	}
	if final := froms[len(froms)-1]; !strings.Contains(final, "distroless/static") && final != "scratch" {
		t.Errorf("final stage %q: want distroless/static or scratch", final)
	}
	for _, w := range append([]string{"CGO_ENABLED=0", "./cmd/picker ", "./cmd/picker-fetch"}, ldflagsTargets(t)...) {
		if !strings.Contains(run, w) {
			t.Errorf("the build lacks %q:\n%s", w, run)
		}
	}
	if u := seen["USER"]; len(u) != 1 || u[0] == "" || strings.HasPrefix(u[0], "0") || strings.HasPrefix(u[0], "root") {
		t.Errorf("final stage USER %q: want one non-root user", u)
	}
	if v := seen["VOLUME"]; len(v) != 1 || !strings.Contains(v[0], "/data") {
		t.Errorf("VOLUME %q: want /data", v)
	}
	env := strings.Join(seen["ENV"], " ")
	for _, w := range []string{"XDG_DATA_HOME=/data", "PICKER_CONFIG=/etc/picker/config.toml"} {
		if !strings.Contains(env, w) {
			t.Errorf("ENV lacks %s: %q", w, env)
		}
	}
	if h := seen["HEALTHCHECK"]; len(h) != 1 || !strings.Contains(h[0], `"/usr/local/bin/picker", "healthcheck"`) {
		t.Errorf("HEALTHCHECK %q: want picker healthcheck (distroless has no curl)", h)
	}
	if e := seen["ENTRYPOINT"]; len(e) != 1 || e[0] != `["/usr/local/bin/picker", "daemon"]` {
		t.Errorf("ENTRYPOINT %q: want the daemon", e)
	}
	for _, c := range seen["COPY"] {
		if strings.HasPrefix(c, "--from") {
			continue
		}
		src := strings.Fields(c)[0]
		if _, err := os.Stat(filepath.Join("..", src)); err != nil {
			t.Errorf("COPY %s: %v", src, err)
		}
	}
	cfg := read(t, "packaging/docker/config.toml")
	for _, w := range []string{`listen = "0.0.0.0:8080"`, `token_env = "PICKER_TOKEN"`} {
		if !strings.Contains(cfg, w) {
			t.Errorf("packaging/docker/config.toml lacks %s", w)
		}
	}
}

// TestGoReleaser: the config builds picker and picker-fetch for linux and darwin on
// amd64 and arm64, statically, stamped with buildinfo's ldflags (goreleaser check, in
// .ci/run, validates the rest).
func TestGoReleaser(t *testing.T) {
	y := read(t, ".goreleaser.yaml")
	want := []string{
		"\nversion: 2\n", "main: ./cmd/picker\n", "main: ./cmd/picker-fetch\n", "binary: picker\n", "binary: picker-fetch\n",
		"CGO_ENABLED=0", "goos: [linux, darwin]", "goarch: [amd64, arm64]", "checksum:", "changelog:", "use: git",
	}
	for _, tgt := range ldflagsTargets(t) {
		want = append(want, "-X "+tgt)
	}
	for _, w := range want {
		if !strings.Contains(y, w) {
			t.Errorf(".goreleaser.yaml lacks %q", w)
		}
	}
	for _, f := range []string{"LICENSE", "README.md", "CHANGELOG.md", "config.example.toml", "packaging/systemd/picker.service"} {
		if strings.Contains(y, "- "+f+"\n") {
			if _, err := os.Stat(filepath.Join("..", f)); err != nil {
				t.Errorf("archive file %s: %v", f, err)
			}
		}
	}
}

// TestSystemdUnit: the unit runs the daemon sandboxed, its database in the
// StateDirectory (systemd-analyze verify, in .ci/run, checks the syntax).
func TestSystemdUnit(t *testing.T) {
	u := read(t, "packaging/systemd/picker.service")
	for _, w := range []string{
		"ExecStart=/usr/local/bin/picker daemon", "DynamicUser=yes", "StateDirectory=picker", "CacheDirectory=picker",
		"Environment=XDG_DATA_HOME=%S", "Environment=XDG_CACHE_HOME=%C", "ProtectSystem=strict", "ProtectHome=yes",
		"PrivateTmp=yes", "NoNewPrivileges=yes", "RestrictAddressFamilies=", "SystemCallFilter=@system-service",
		"MemoryDenyWriteExecute=yes", "CapabilityBoundingSet=\n", "WantedBy=multi-user.target",
	} {
		if !strings.Contains(u, w) {
			t.Errorf("picker.service lacks %q", w)
		}
	}
}
