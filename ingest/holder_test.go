package ingest_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/tidemark/tidemark/ingest"
)

func TestHolderGone(t *testing.T) {
	dead := map[int]bool{41: true}
	alive := func(pid int) bool { return !dead[pid] }
	cases := []struct {
		holder string
		gone   bool
	}{
		{"box:41", true},      // this host, not running
		{"box:42", false},     // this host, running
		{"other:41", false},   // another host: we cannot know
		{"worker-1", false},   // a custom identity
		{"box:", false},       // no pid
		{"box:0", false},      // not a process
		{"box:-41", false},    // not a process
		{"box:041", false},    // not the form HolderID writes
		{"box:41x", false},    // not a pid
		{":41", false},        // no host
		{"fe80::1:41", false}, // another host, with colons
		{"my:host:41", false}, // another host
		{ingest.HolderID("box", 41), true},
		{"box:41#2", true},  // another worker of the same process
		{"box:42#3", false}, // its process is running
		{"box:41#1", false}, // not the form HolderSlot writes
		{"box:41#x", false}, // not a slot
		{"box:41#", false},  // no slot
		{"w#2", false},      // a slot of a custom identity
		{ingest.HolderSlot(ingest.HolderID("box", 41), 2), true},
		{ingest.HolderSlot(ingest.HolderID("box", 41), 1), true},
	}
	for _, tc := range cases {
		if got := ingest.HolderGone(tc.holder, "box", alive); got != tc.gone {
			t.Errorf("HolderGone(%q) = %v, want %v", tc.holder, got, tc.gone)
		}
	}
	if ingest.HolderGone("box:41", "box", nil) {
		t.Error("gone without a probe")
	}
	if ingest.HolderGone("box:41", "", alive) {
		t.Error("gone without a host")
	}
	var none *ingest.Liveness
	if none.Gone("box:41") {
		t.Error("a nil Liveness declared a holder gone")
	}
}

// The real probe: this process is alive, a process that has exited and
// been waited for is gone.
func TestLocalLivenessOfARealProcess(t *testing.T) {
	l := ingest.Local()
	if l == nil {
		t.Skip("no host name")
	}
	if l.Gone(ingest.HolderID(l.Host, os.Getpid())) {
		t.Fatal("this very process declared gone")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	holder := ingest.HolderID(l.Host, cmd.ProcessState.Pid())
	if !l.Gone(holder) && processProbeWorks() {
		t.Fatalf("%s exited but is not gone", holder)
	}
}
