// Package buildinfo says which build of picker and picker-fetch is running: the
// release, commit and commit date stamped at link time, or else what the Go toolchain
// recorded (runtime/debug.ReadBuildInfo: the module version of a go install, the
// vcs.revision, vcs.time and vcs.modified of a build in a git checkout).
//
// A release build stamps the three variables (the GoReleaser config does):
//
//	go build -ldflags "-X github.com/pickergpu/picker/buildinfo.Version=v1.2.3 \
//	  -X github.com/pickergpu/picker/buildinfo.Commit=$(git rev-parse HEAD) \
//	  -X github.com/pickergpu/picker/buildinfo.Date=$(git log -1 --format=%cI)" ./cmd/...
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Set at link time with -ldflags "-X github.com/pickergpu/picker/buildinfo.NAME=VALUE";
// empty means the toolchain's build info.
var (
	Version = "" // the release, v1.2.3
	Commit  = "" // the full commit hash
	Date    = "" // the commit's (or build's) time, RFC 3339
)

// Info is one build's identity.
type Info struct {
	Version  string `json:"version"`            // v1.2.3, a pseudo-version, or (devel)
	Commit   string `json:"commit,omitempty"`   // the commit, 12 hex digits
	Date     string `json:"date,omitempty"`     // the commit's time, RFC 3339
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go       string `json:"go"`                 // the toolchain, go1.26.0
}

// Get is this binary's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return From(Version, Commit, Date, bi)
}

// From builds an Info from stamped values, each of which wins over the build info's
// (bi may be nil: no build info).
func From(version, commit, date string, bi *debug.BuildInfo) Info {
	v := Info{Version: version, Commit: commit, Date: date, Go: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			v.Go = bi.GoVersion
		}
		if v.Version == "" && bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		stamped := commit != ""
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if !stamped {
					v.Commit = s.Value
				}
			case "vcs.time":
				if !stamped && v.Date == "" {
					v.Date = s.Value
				}
			case "vcs.modified":
				if !stamped {
					v.Modified = s.Value == "true"
				}
			}
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	if len(v.Commit) > 12 {
		v.Commit = v.Commit[:12]
	}
	return v
}

// String is the version line's body: "v1.2.3 (0123456789ab, 2026-12-01T10:00:00Z, modified) go1.26.0",
// the parenthesis only with a commit or date.
func (v Info) String() string {
	var meta []string
	for _, s := range []string{v.Commit, v.Date} {
		if s != "" {
			meta = append(meta, s)
		}
	}
	if v.Modified {
		meta = append(meta, "modified")
	}
	s := v.Version
	if len(meta) > 0 {
		s += " (" + strings.Join(meta, ", ") + ")"
	}
	return s + " " + v.Go
}
