package pipeline

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is what this build of tidemark is: the module version
// (a tag for `go install …@vX`, "(devel)" for a local build), the VCS
// revision and time stamped by go build where known, and the Go version.
type Version struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// BuildVersion reads this binary's build information.
func BuildVersion() Version { return VersionFrom(debug.ReadBuildInfo()) }

// VersionFrom reads build information (ok false: there is none).
func VersionFrom(bi *debug.BuildInfo, ok bool) Version {
	v := Version{Version: "(unknown)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
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

// WriteText writes the one-line form.
func (v Version) WriteText(w io.Writer) error {
	_, err := fmt.Fprintln(w, v)
	return err
}

// String is the one-line form: tidemark VERSION (REVISION, TIME[, modified]) GO PLATFORM.
func (v Version) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tidemark %s", v.Version)
	if v.Revision != "" {
		fmt.Fprintf(&b, " (%s", v.Revision[:min(len(v.Revision), 12)])
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
