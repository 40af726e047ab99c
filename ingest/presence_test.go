package ingest_test

import (
	"testing"

	"github.com/tidemark/tidemark/ingest"
)

// Another presence under a daemon's holder is live unless this host can
// tell its process is gone, or it has this very process's pid here.
func TestPresenceLive(t *testing.T) {
	me := ingest.Presence{Holder: "wA", Instance: "me", Host: "vm1", PID: 100}
	l := &ingest.Liveness{Host: "vm1", Alive: func(pid int) bool { return pid == 200 }}
	for _, tc := range []struct {
		name string
		o    ingest.Presence
		want bool
	}{
		{"another running process here", ingest.Presence{Host: "vm1", PID: 200}, true},
		{"a process here that is gone", ingest.Presence{Host: "vm1", PID: 300}, false},
		{"this process's pid here (a predecessor)", ingest.Presence{Host: "vm1", PID: 100}, false},
		{"another host", ingest.Presence{Host: "vm2", PID: 300}, true},
		{"another host, this pid", ingest.Presence{Host: "vm2", PID: 100}, true},
	} {
		if got := me.Live(tc.o, l); got != tc.want {
			t.Errorf("%s: live %v, want %v", tc.name, got, tc.want)
		}
	}
	if !me.Live(ingest.Presence{Host: "vm1", PID: 300}, nil) {
		t.Error("without liveness, another pid here is taken for gone")
	}
}
