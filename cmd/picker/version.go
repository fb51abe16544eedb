package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/snapshot"
	"github.com/pickergpu/picker/store"
)

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3"; empty means the module's build info.
var version = ""

// VersionInfo is `picker version -o json`.
type VersionInfo struct {
	Version       string `json:"version"`
	Commit        string `json:"commit,omitempty"`
	Go            string `json:"go"`
	SnapshotDate  string `json:"snapshot_date"`
	SchemaVersion int    `json:"schema_version"`
}

func versionInfo() VersionInfo {
	v := VersionInfo{Version: version, Go: runtime.Version(), SnapshotDate: snapshot.Date().Format("2006-01-02"), SchemaVersion: store.LatestSchemaVersion()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Commit = s.Value
				if len(v.Commit) > 12 {
					v.Commit = v.Commit[:12]
				}
			}
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	return v
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print picker's version, its embedded price snapshot's date and its database schema version",
		RunE: func(cmd *cobra.Command, args []string) error {
			v := versionInfo()
			if a.output == "json" {
				return writeJSON(a.stdout, v)
			}
			commit := ""
			if v.Commit != "" {
				commit = " (" + v.Commit + ")"
			}
			fmt.Fprintf(a.stdout, "picker %s%s %s\nprice snapshot: %s\ndatabase schema: %d\n", v.Version, commit, v.Go, v.SnapshotDate, v.SchemaVersion)
			return nil
		},
	}
}
