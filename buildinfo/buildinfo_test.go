package buildinfo

import (
	"runtime/debug"
	"testing"
)

func buildInfo(version string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/pickergpu/picker", Version: version}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

// TestFrom: stamped values (-ldflags -X) win; without them the toolchain's build info
// gives the module version, vcs.revision, vcs.time and vcs.modified.
func TestFrom(t *testing.T) {
	vcs := []string{"vcs", "git", "vcs.revision", "fedcba9876543210fedcba9876543210fedcba98", "vcs.time", "2026-11-30T08:00:00Z", "vcs.modified", "true"}
	for _, c := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
		line                  string
	}{
		{"stamped", "v1.2.3", "0123456789abcdef0123", "2026-12-01T10:00:00Z", buildInfo("(devel)", vcs...),
			Info{Version: "v1.2.3", Commit: "0123456789ab", Date: "2026-12-01T10:00:00Z", Go: "go1.26.0"},
			"v1.2.3 (0123456789ab, 2026-12-01T10:00:00Z) go1.26.0"},
		{"plain go build in a checkout", "", "", "", buildInfo("(devel)", vcs...),
			Info{Version: "(devel)", Commit: "fedcba987654", Date: "2026-11-30T08:00:00Z", Modified: true, Go: "go1.26.0"},
			"(devel) (fedcba987654, 2026-11-30T08:00:00Z, modified) go1.26.0"},
		{"go install module@version", "", "", "", buildInfo("v1.4.0"),
			Info{Version: "v1.4.0", Go: "go1.26.0"}, "v1.4.0 go1.26.0"},
		{"version stamped alone", "v2.0.0", "", "", buildInfo("(devel)", "vcs.revision", "abc", "vcs.modified", "false"),
			Info{Version: "v2.0.0", Commit: "abc", Go: "go1.26.0"}, "v2.0.0 (abc) go1.26.0"},
	} {
		got := From(c.version, c.commit, c.date, c.bi)
		if got != c.want {
			t.Errorf("%s: From = %+v, want %+v", c.name, got, c.want)
		}
		if got.String() != c.line {
			t.Errorf("%s: String = %q, want %q", c.name, got.String(), c.line)
		}
	}
	if got := From("", "", "", nil); got.Version != "(devel)" || got.Go == "" || got.Commit != "" {
		t.Errorf("no build info: %+v", got)
	}
}

// TestGet: the test binary has build info and a Go version.
func TestGet(t *testing.T) {
	if v := Get(); v.Version == "" || v.Go == "" {
		t.Errorf("Get = %+v", v)
	}
}
