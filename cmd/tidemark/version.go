package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// versionInfo is what `tidemark version` reports: the module version
// (a tag for `go install …@vX`, "(devel)" for a local build), the VCS
// revision and time stamped by go build where known, and the Go version.
type versionInfo struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

func readVersion() versionInfo { return versionFrom(debug.ReadBuildInfo()) }

func versionFrom(bi *debug.BuildInfo, ok bool) versionInfo {
	v := versionInfo{Version: "(unknown)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print tidemark's version, the commit it was built from and the Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := readVersion()
			if asJSON {
				return writeJSON(a.stdout, v)
			}
			fmt.Fprintln(a.stdout, v)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (version, revision, time, modified, go_version, platform)")
	return cmd
}

// String is the one-line form: tidemark VERSION (REVISION, TIME[, modified]) GO PLATFORM.
func (v versionInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tidemark %s", v.Version)
	if v.Revision != "" {
		fmt.Fprintf(&b, " (%s", short(v.Revision, 12))
		if v.Time != "" {
			fmt.Fprintf(&b, ", %s", v.Time)
		}
		if v.Modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %s %s", v.GoVersion, v.Platform)
	return b.String()
}
