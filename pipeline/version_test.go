package pipeline

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-30T19:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := VersionFrom(bi, true).String()
	want := "tidemark v1.2.3 (0123456789ab, 2026-11-30T19:00:00Z, modified) " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if v := VersionFrom(nil, false); v.Version != "(unknown)" || v.GoVersion != runtime.Version() {
		t.Fatalf("without build info: %+v", v)
	}
}
