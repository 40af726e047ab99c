package ingest_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
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

// A claim is shown running only while it stands: its lease runs and its
// holder is not a gone process of this host. A holder of another host, a
// custom identity, or any holder where the host cannot be probed counts as
// running until its lease ends.
func TestClaimState(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later, earlier := now.Add(time.Minute), now.Add(-time.Second)
	l := &ingest.Liveness{Host: "box", Alive: func(pid int) bool { return pid != 41 }}
	cases := []struct {
		holder string
		lease  *time.Time
		live   *ingest.Liveness
		want   tidemark.ClaimState
	}{
		{"", nil, l, ""},
		{"box:41", &later, l, tidemark.ClaimGone},
		{"box:41#2", &later, l, tidemark.ClaimGone},
		{"box:42", &later, l, tidemark.ClaimRunning},
		{"other:41", &later, l, tidemark.ClaimRunning},
		{"w1", &later, l, tidemark.ClaimRunning},
		{"box:41", &later, nil, tidemark.ClaimRunning},
		{"box:42", &earlier, l, tidemark.ClaimExpired},
		{"box:41", &now, l, tidemark.ClaimExpired},
	}
	for _, c := range cases {
		src := tidemark.Source{ClaimHolder: c.holder, LeaseExpiresAt: c.lease}
		if got := c.live.ClaimState(src, now); got != c.want {
			t.Errorf("claim of %q (lease %v, liveness %v): %q, want %q", c.holder, c.lease, c.live != nil, got, c.want)
		}
	}
}

// A source whose claim no longer stands is not shown running: its health
// is what it would be without the claim, its next try is now-ish and names
// the holder, and source show says the next claim takes it over.
func TestAStaleClaimIsNotShownRunning(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lease := now.Add(time.Hour)
	src := tidemark.Source{Name: "s", State: tidemark.SourceActive, Window: tidemark.WindowOpen, RetryBudget: 5,
		ClaimHolder: "box:41", ClaimRunID: "run1", LeaseExpiresAt: &lease, NextDueAt: now.Add(-time.Minute)}

	src.ClaimState = tidemark.ClaimRunning
	if h := src.Health(); h != "running" {
		t.Fatalf("a first run under way: health %q, want running", h)
	}
	src.ClaimState = tidemark.ClaimGone
	if h := src.Health(); h != "new" {
		t.Fatalf("a first run whose holder is gone: health %q, want new", h)
	}
	_, why, brief := ingest.NextTryWords(src)
	if brief != "box:41 gone" || !strings.Contains(why, "box:41") || !strings.Contains(why, "takes it over") {
		t.Fatalf("next try of a source whose holder is gone: why %q, brief %q", why, brief)
	}
	var list bytes.Buffer
	if err := (ingest.SourceList{src}).WriteText(&list); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(list.String(), "running") || !strings.Contains(list.String(), "(box:41 gone)") {
		t.Fatalf("source list:\n%s", list.String())
	}
	var show bytes.Buffer
	if err := (ingest.Detail{Source: src}).WriteText(&show); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(show.String(), "process box:41 of this host is gone") {
		t.Fatalf("source show does not say its holder is gone:\n%s", show.String())
	}

	src.ClaimState, src.LastOutcome = tidemark.ClaimExpired, tidemark.OutcomeEmpty
	if h := src.Health(); h != "empty" {
		t.Fatalf("health %q under an expired claim, want the last outcome's", h)
	}
	show.Reset()
	if err := (ingest.Detail{Source: src}).WriteText(&show); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(show.String(), "lease expired") {
		t.Fatalf("source show does not say the lease expired:\n%s", show.String())
	}
}

// A worker started after a worker of this host was killed holding a claim
// takes the claim over on its first look, as the daemon (Run) and as one
// pass (RunOnce): the killed worker's run is recorded lost and the source
// freed, whether or not anything is due at the look, beside another source
// due then, and after the killed worker's lease has expired. The source
// itself runs when it is next due.
func TestSchedulerTakesOverAGoneHoldersClaimOnItsFirstLook(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name           string
		dueToo, expire bool
	}{
		{name: "nothing due"},
		{name: "another source due", dueToo: true},
		{name: "lease expired", expire: true},
	}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for _, tc := range cases {
			for _, mode := range []string{"Run", "RunOnce"} {
				t.Run(tc.name+"/"+mode, func(t *testing.T) {
					env := sqltest.NewEnv(5)
					db, err := sqlstore.Open(ctx, b.NewURL(t), sqlstore.Options{Clock: env.Clock, IDs: env.IDs,
						Liveness: &ingest.Liveness{Host: "box", Alive: func(pid int) bool { return pid != 41 }}})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { db.Close() })
					var fetched []string
					svc := &ingest.Service{Store: db.Ingest(), Clock: env.Clock, Rand: env.Rand, Holder: "box:42", LeaseTTL: time.Minute,
						Fetchers: ingest.Fetchers{"test": fetchFunc(func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
							fetched = append(fetched, src.Name) // one worker: no race
							return tidemark.FetchResult{Cursor: "c1"}, nil
						})}}
					add := func(name string) tidemark.Source {
						t.Helper()
						src, err := svc.Store.AddSource(ctx, ingest.NewSource{Name: name, Kind: "test", Location: name, Interval: 6 * time.Hour, RetryBudget: 3})
						if err != nil {
							t.Fatal(err)
						}
						return src
					}
					// gone ran once (so it is not due), then box:41 claimed it
					// again by name and was killed mid-run.
					gone := add("gone")
					if _, err := svc.RunSource(ctx, gone.ID); err != nil {
						t.Fatal(err)
					}
					fetched = nil
					old, err := svc.Store.Claim(ctx, gone.ID, "box:41", time.Minute)
					if err != nil {
						t.Fatal(err)
					}
					if tc.dueToo {
						add("other")
					}
					if tc.expire {
						env.Clock.Advance(2 * time.Minute)
					}
					spy := claimDueSpy{Store: svc.Store, calls: make(chan []tidemark.Claim, 100)}
					svc.Store = spy
					sc := &ingest.Scheduler{Service: svc, Workers: 1, Poll: time.Hour}
					switch mode {
					case "Run":
						runCtx, stop := context.WithCancel(ctx)
						done := make(chan error)
						go func() { done <- sc.Run(runCtx) }()
						<-spy.calls // the first look
						if tc.dueToo {
							<-spy.calls // the look after other's run: other has settled
						}
						stop()
						if err := <-done; err != nil {
							t.Fatal(err)
						}
					case "RunOnce":
						if _, err := sc.RunOnce(ctx); err != nil {
							t.Fatal(err)
						}
					}
					lost, err := svc.Store.Run(ctx, old.RunID)
					if err != nil {
						t.Fatal(err)
					}
					if lost.Outcome != tidemark.OutcomeLost {
						t.Fatalf("box:41's run after %s: status %s, outcome %q (%s); want it lost", mode, lost.Status, lost.Outcome, lost.ClaimState)
					}
					if src, err := svc.Store.Source(ctx, gone.ID); err != nil || src.ClaimHolder != "" {
						t.Fatalf("gone after %s: held by %q, %v; want it free", mode, src.ClaimHolder, err)
					}
					want := ""
					if tc.dueToo {
						want = "other"
					}
					if got := strings.Join(fetched, " "); got != want {
						t.Fatalf("%s fetched %q, want %q: gone is not due", mode, got, want)
					}
				})
			}
		}
	})
}
