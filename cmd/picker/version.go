package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/buildinfo"
	"github.com/pickergpu/picker/snapshot"
	"github.com/pickergpu/picker/store"
)

// VersionInfo is `picker version -o json`: the build (buildinfo: stamped with
// -ldflags "-X github.com/pickergpu/picker/buildinfo.Version=v1.2.3" and .Commit,
// .Date, else the toolchain's build info), the embedded snapshot's date and the
// database schema version.
type VersionInfo struct {
	Version       string `json:"version"`
	Commit        string `json:"commit,omitempty"`
	Date          string `json:"date,omitempty"`
	Modified      bool   `json:"modified,omitempty"`
	Go            string `json:"go"`
	SnapshotDate  string `json:"snapshot_date"`
	SchemaVersion int    `json:"schema_version"`
}

func versionInfo() VersionInfo { return versionFrom(buildinfo.Get()) }

func versionFrom(b buildinfo.Info) VersionInfo {
	return VersionInfo{Version: b.Version, Commit: b.Commit, Date: b.Date, Modified: b.Modified, Go: b.Go,
		SnapshotDate: snapshot.Date().Format("2006-01-02"), SchemaVersion: store.LatestSchemaVersion()}
}

// versionText is `picker version` and `picker --version`:
//
//	picker v1.2.3 (0123456789ab, 2026-12-01T10:00:00Z) go1.26.0
//	price snapshot: 2026-11-30
//	database schema: 7
func versionText(v VersionInfo) string {
	b := buildinfo.Info{Version: v.Version, Commit: v.Commit, Date: v.Date, Modified: v.Modified, Go: v.Go}
	return fmt.Sprintf("picker %s\nprice snapshot: %s\ndatabase schema: %d\n", b, v.SnapshotDate, v.SchemaVersion)
}

// The root command's --version prints versionText through cobra's version template;
// the function is registered once (cobra's template functions are one global map), and
// reads the snapshot and migrations only when --version is asked.
func init() {
	cobra.AddTemplateFunc("pickerVersion", func() string { return versionText(versionInfo()) })
}

// distribution gives the root command --version (what `picker version` prints,
// before any setup: a broken config does not hide it) and the healthcheck command.
func (a *app) distribution(root *cobra.Command) {
	root.Version = buildinfo.Get().Version
	root.SetVersionTemplate(`{{pickerVersion}}`)
	root.AddCommand(a.healthcheckCmd())
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
			_, err := io.WriteString(a.stdout, versionText(v))
			return err
		},
	}
}
