package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A claim whose holder is a process of this host that is no longer running
// is taken over at once, its run recorded lost; a holder that is alive, on
// another host or of a custom identity keeps its claim until the lease
// expires, and the refusal says who holds it until when.
func TestClaimTakesOverGoneHolder(t *testing.T) {
	ctx := context.Background()
	dead := map[int]bool{41: true}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		env := sqltest.NewEnv(3)
		db := mustOpenLive(t, b, env, &ingest.Liveness{Host: "box", Alive: func(pid int) bool { return !dead[pid] }})
		st := db.Ingest()
		n := 0
		var own []string // box:42's runs, all still under way: not to re-enter
		mustClaimed := func(t *testing.T, holder string) tidemark.Source {
			t.Helper()
			n++
			src, err := st.AddSource(ctx, ingest.NewSource{Name: "s" + string(rune('a'+n)), Kind: "git", Location: "x", Interval: time.Minute, RetryBudget: 3})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Claim(ctx, src.ID, holder, time.Hour); err != nil {
				t.Fatal(err)
			}
			return src
		}
		mustLost := func(t *testing.T, src tidemark.Source) {
			t.Helper()
			runs, err := st.Runs(ctx, ingest.RunFilter{SourceID: src.ID})
			if err != nil {
				t.Fatal(err)
			}
			var lost int
			for _, r := range runs {
				if r.Outcome == tidemark.OutcomeLost {
					lost++
					if !strings.Contains(r.Error, "is gone") {
						t.Errorf("lost run's reason %q does not say its holder is gone", r.Error)
					}
					// Its lease reads as text output shows times: in UTC, saying so.
					if !strings.HasSuffix(r.Error, " UTC)") {
						t.Errorf("lost run's reason %q does not give the lease's end in UTC", r.Error)
					}
				}
			}
			if lost != 1 || len(runs) != 2 {
				t.Fatalf("runs %+v, want the gone holder's run lost and one new", runs)
			}
		}

		t.Run("Claim", func(t *testing.T) {
			src := mustClaimed(t, "box:41")
			c, err := st.Claim(ctx, src.ID, "box:42", time.Hour)
			if err != nil {
				t.Fatalf("claim over a gone holder: %v", err)
			}
			if c.Reentered || c.Holder != "box:42" {
				t.Fatalf("claim %+v", c)
			}
			own = append(own, c.RunID)
			mustLost(t, src)
		})
		t.Run("ClaimDue", func(t *testing.T) {
			src := mustClaimed(t, "box:41")
			cs, err := st.ClaimDue(ctx, "box:42", time.Hour, 10, own...)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 1 || cs[0].SourceID != src.ID {
				t.Fatalf("claimed %+v, want the gone holder's source", cs)
			}
			own = append(own, cs[0].RunID)
			mustLost(t, src)
		})
		for _, holder := range []string{"box:43", "other:41", "worker-1"} {
			t.Run("kept by "+holder, func(t *testing.T) {
				src := mustClaimed(t, holder)
				_, err := st.Claim(ctx, src.ID, "box:42", time.Hour)
				var held *tidemark.HeldError
				if !errors.As(err, &held) || !errors.Is(err, tidemark.ErrClaimHeld) {
					t.Fatalf("claim: %v, want a HeldError", err)
				}
				if held.Holder != holder || !held.Until.Equal(env.Clock.Now().Add(time.Hour).Truncate(time.Millisecond)) {
					t.Errorf("held %+v", held)
				}
				// A running process of this host is named as one: the hint
				// never tells to take its identity, which would make two
				// workers of one; any other holder may be this worker
				// under another identity.
				local := holder == "box:43"
				hint := held.Hint()
				if held.Running != local || strings.Contains(hint, "--holder") == local ||
					local && !strings.Contains(hint, "process 43 of this host") {
					t.Errorf("held by %s: running %v, hint %q", holder, held.Running, hint)
				}
				cs, err := st.ClaimDue(ctx, "box:42", time.Hour, 10, own...)
				if err != nil || len(cs) != 0 {
					t.Fatalf("ClaimDue took %+v, %v", cs, err)
				}
				if _, err := st.Retry(ctx, src.Name, "op", ""); !errors.Is(err, tidemark.ErrClaimHeld) {
					t.Fatalf("retry over a live holder: %v", err)
				}
			})
		}
	})
}

// The look for claims of gone holders is not on the claim path's every
// call: a process's first ClaimDue makes it (so a restarted worker takes
// over its crashed predecessor's claims at once), and then at most once
// per Liveness.Every, by the store's clock. A gone holder met by a claim
// of its own source is taken over at once regardless.
func TestClaimDueLooksForGoneHoldersOncePerInterval(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		env := sqltest.NewEnv(3)
		dead := map[int]bool{}
		probes := 0
		db := mustOpenLive(t, b, env, &ingest.Liveness{Host: "box", Every: 5 * time.Second, Alive: func(pid int) bool { probes++; return !dead[pid] }})
		st := db.Ingest()
		add := func(name string) tidemark.Source {
			t.Helper()
			src, err := st.AddSource(ctx, ingest.NewSource{Name: name, Kind: "git", Location: "x", Interval: time.Minute, RetryBudget: 3})
			if err != nil {
				t.Fatal(err)
			}
			return src
		}
		// A predecessor on this host crashed holding a claim: the first
		// ClaimDue of this process takes it over at once.
		crashed := add("crashed")
		if _, err := st.Claim(ctx, crashed.ID, "box:41", time.Hour); err != nil {
			t.Fatal(err)
		}
		dead[41] = true
		cs, err := st.ClaimDue(ctx, "box:42", time.Hour, 10)
		if err != nil || len(cs) != 1 || cs[0].SourceID != crashed.ID {
			t.Fatalf("first ClaimDue: %+v, %v; want the crashed holder's source taken over", cs, err)
		}
		// A live holder of this host: the many claims that follow within
		// the interval do not look again.
		live := add("live")
		if _, err := st.Claim(ctx, live.ID, "box:43", time.Hour); err != nil {
			t.Fatal(err)
		}
		probes = 0
		held := cs[0].RunID // under way: not to re-enter
		for i := 0; i < 5; i++ {
			if cs, err := st.ClaimDue(ctx, "box:42", time.Hour, 10, held); err != nil || len(cs) != 0 {
				t.Fatalf("ClaimDue: %+v, %v", cs, err)
			}
		}
		if probes != 0 {
			t.Fatalf("%d liveness probes within the interval, want none", probes)
		}
		// Once the interval has passed, the next ClaimDue looks again:
		// box:43 has died meanwhile and is taken over.
		dead[43] = true
		env.Clock.Advance(5 * time.Second)
		cs, err = st.ClaimDue(ctx, "box:42", time.Hour, 10, held)
		if err != nil || len(cs) != 1 || cs[0].SourceID != live.ID {
			t.Fatalf("ClaimDue after the interval: %+v, %v; want the dead holder's source taken over", cs, err)
		}
		if probes != 1 {
			t.Fatalf("%d liveness probes, want 1", probes)
		}
	})
}

// A lane's lease follows the claims' rule: one whose holder is a process of
// this host that is gone is taken over at once, and the attempt it left
// open is in doubt for the new writer; a holder alive, on another host or
// of a custom identity keeps it until it expires, and the refusal says who
// holds it, until when, and what to do.
func TestLaneLeaseTakesOverGoneHolder(t *testing.T) {
	ctx := context.Background()
	dead := map[int]bool{41: true}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		env := sqltest.NewEnv(3)
		db := mustOpenLive(t, b, env, &ingest.Liveness{Host: "box", Alive: func(pid int) bool { return !dead[pid] }})
		st := db.Outbox()
		n := 0
		mustHeld := func(t *testing.T, holder string) string {
			t.Helper()
			n++
			name := fmt.Sprint("lane", n)
			if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: name, Provider: "webhook",
				Settings: map[string]string{"url": "https://x.example/", "secret_env": "S"}}}); err != nil {
				t.Fatal(err)
			}
			in, err := st.Draft(ctx, outbox.Draft{Lane: name, Target: "t", Body: "b"})
			if err != nil {
				t.Fatal(err)
			}
			l, err := st.Acquire(ctx, name, holder, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Begin(ctx, l, outbox.NewAttempt{IntentID: in.ID, Bound: time.Minute}); err != nil { // then the process dies mid-send
				t.Fatal(err)
			}
			return name
		}

		t.Run("gone", func(t *testing.T) {
			lane := mustHeld(t, "box:41")
			l, err := st.Acquire(ctx, lane, "box:42", time.Hour)
			if err != nil {
				t.Fatalf("acquire over a gone holder: %v", err)
			}
			if l.Token != 2 || l.Holder != "box:42" {
				t.Fatalf("lease %+v", l)
			}
			if doubt, err := st.InDoubt(ctx, l); err != nil || !doubt {
				t.Fatalf("in doubt %v, %v: the gone holder's open attempt must be reconciled", doubt, err)
			}
		})
		for _, holder := range []string{"box:43", "other:41", "worker-1"} {
			t.Run("kept by "+holder, func(t *testing.T) {
				lane := mustHeld(t, holder)
				_, err := st.Acquire(ctx, lane, "box:42", time.Hour)
				var held *outbox.LeaseHeldError
				if !errors.As(err, &held) || !errors.Is(err, tidemark.ErrClaimHeld) {
					t.Fatalf("acquire: %v, want a LeaseHeldError", err)
				}
				if held.Lane != lane || held.Holder != holder || !held.Until.Equal(env.Clock.Now().Add(time.Hour).Truncate(time.Millisecond)) {
					t.Errorf("held %+v", held)
				}
				local := holder == "box:43"
				hint := tidemark.Hint(err)
				if held.Running != local || strings.Contains(hint, "--holder") == local || !strings.Contains(hint, "expires at") ||
					local && !strings.Contains(hint, "process 43 of this host") {
					t.Errorf("held by %s: running %v, hint %q", holder, held.Running, hint)
				}
			})
		}
	})
}

// A claim on summarizing an event follows the claims' rule: one whose
// holder is a process of this host that is gone (killed while it asked the
// model) is taken over at once; a holder alive, on another host or of a
// custom identity keeps it until it expires.
func TestSummaryClaimTakesOverGoneHolder(t *testing.T) {
	ctx := context.Background()
	dead := map[int]bool{41: true}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		env := sqltest.NewEnv(3)
		db := mustOpenLive(t, b, env, &ingest.Liveness{Host: "box", Alive: func(pid int) bool { return !dead[pid] }})
		src := mustAddSource(t, db.Ingest(), "repo")
		rep := mustSettle(t, db.Ingest(), env, src, "a", "b", "c", "d", "e")
		events := rep.EventIDs
		claim := func(event, holder string) publish.SummaryClaimed {
			t.Helper()
			got, err := db.Publish().ClaimSummary(ctx, publish.SummaryClaim{EventID: event, Model: "m", PromptVersion: "p", Holder: holder}, 5*time.Minute)
			if err != nil {
				t.Fatalf("claim by %s: %v", holder, err)
			}
			return got
		}
		holders := []string{"box:41", "box:41#2", "box:43", "other:41", "worker-1"}
		for i, holder := range holders {
			if !claim(events[i], holder).OK {
				t.Fatalf("first claim by %s refused", holder)
			}
		}
		heldUntil := env.Clock.Now().Add(5 * time.Minute).Truncate(time.Millisecond)
		env.Clock.Advance(time.Minute)
		for i, holder := range holders {
			gone := holder == "box:41" || holder == "box:41#2"
			got := claim(events[i], "box:42")
			switch {
			case got.OK != gone:
				t.Errorf("claim over %s's: %+v, want OK %v", holder, got, gone)
			case gone && (got.TookOver != holder || got.Holder != "box:42"):
				t.Errorf("claim over gone %s's: %+v, want it taken over", holder, got)
			case !gone && (got.Holder != holder || !got.Until.Equal(heldUntil) || got.TookOver != ""):
				t.Errorf("claim over live %s's: %+v, want %s's claim until %v named", holder, got, holder, heldUntil)
			}
		}
		// The claim taken over is the taker's: the gone holder's release
		// (a late one) does not drop it, and nobody else takes it.
		if err := db.Publish().ReleaseSummary(ctx, publish.SummaryClaim{EventID: events[0], Model: "m", PromptVersion: "p", Holder: "box:41"}); err != nil {
			t.Fatal(err)
		}
		if got := claim(events[0], "box:44"); got.OK || got.Holder != "box:42" {
			t.Fatalf("claim over the taker's: %+v, want box:42's", got)
		}
	})
}

// A field migration run's claim follows the claims' rule too: one whose
// holder is a process of this host that is gone (a daemon killed while it
// drove the run) is taken over at once, so run --once finishes the run
// instead of passing it over as another worker's; a holder alive, on
// another host or of a custom identity keeps it until its lease expires.
func TestMigrationRunClaimTakesOverGoneHolder(t *testing.T) {
	ctx := context.Background()
	dead := map[int]bool{41: true}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		env := sqltest.NewEnv(3)
		db := mustOpenLive(t, b, env, &ingest.Liveness{Host: "box", Alive: func(pid int) bool { return !dead[pid] }})
		st := db.Content()
		for i, holder := range []string{"box:41", "box:41#2", "box:43", "other:41", "worker-1"} {
			coll := fmt.Sprint("things", i)
			if _, err := st.CreateCollection(ctx, coll, []content.Field{{Name: "v", Type: content.Text}}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Put(ctx, coll, content.Put{Set: content.Fields{"v": []byte(`"1"`)}}); err != nil {
				t.Fatal(err)
			}
			run, err := st.StartRun(ctx, coll, "v", content.Number, 1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.ClaimRun(ctx, run.ID, holder, time.Hour); err != nil {
				t.Fatal(err)
			}
			gone := holder == "box:41" || holder == "box:41#2"
			// The pending runs (what run --once and the daemon carry on)
			// include a gone holder's, not a live one's.
			pending, err := st.Runs(ctx, content.RunFilter{Pending: true})
			if err != nil {
				t.Fatal(err)
			}
			if listed := slices.ContainsFunc(pending, func(r content.Run) bool { return r.ID == run.ID }); listed != gone {
				t.Errorf("run held by %s listed pending: %v, want %v", holder, listed, gone)
			}
			c, err := st.ClaimRun(ctx, run.ID, "box:42", time.Hour)
			switch {
			case gone && err != nil:
				t.Errorf("claim over gone %s's run: %v, want it taken over", holder, err)
			case gone && c.Holder != "box:42":
				t.Errorf("claim over gone %s's run: %+v", holder, c)
			case !gone && (!errors.Is(err, tidemark.ErrClaimHeld) || !strings.Contains(err.Error(), holder)):
				t.Errorf("claim over live %s's run: %v, want it held, naming %s", holder, err, holder)
			}
		}
	})
}

// A source read while a gone process of this host holds its claim shows
// the claim gone, not running, and the read writes nothing: the claim and
// its run stay as they were until a claim takes them over. A live holder,
// or one of another host, shows running until its lease ends; an expired
// lease shows expired.
func TestReadShowsAGoneHolder(t *testing.T) {
	ctx := context.Background()
	dead := map[int]bool{41: true}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		env := sqltest.NewEnv(3)
		db := mustOpenLive(t, b, env, &ingest.Liveness{Host: "box", Alive: func(pid int) bool { return !dead[pid] }})
		st := db.Ingest()
		want := map[string]tidemark.ClaimState{}
		for name, holder := range map[string]string{"gone": "box:41", "slot": "box:41#3", "alive": "box:42", "remote": "other:41", "custom": "w1"} {
			src, err := st.AddSource(ctx, ingest.NewSource{Name: name, Kind: "git", Location: "/" + name, Interval: time.Minute, RetryBudget: 3})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Claim(ctx, src.ID, holder, time.Hour); err != nil {
				t.Fatal(err)
			}
			want[name] = tidemark.ClaimRunning
		}
		want["gone"], want["slot"] = tidemark.ClaimGone, tidemark.ClaimGone
		if _, err := st.AddSource(ctx, ingest.NewSource{Name: "idle", Kind: "git", Location: "/idle", Interval: time.Minute, RetryBudget: 3}); err != nil {
			t.Fatal(err)
		}
		want["idle"] = ""
		check := func(t *testing.T) {
			t.Helper()
			srcs, err := st.Sources(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range srcs {
				one, err := st.Source(ctx, s.Name)
				if err != nil {
					t.Fatal(err)
				}
				if s.ClaimState != want[s.Name] || one.ClaimState != want[s.Name] {
					t.Errorf("%s held by %q: claim %q listed, %q shown, want %q", s.Name, s.ClaimHolder, s.ClaimState, one.ClaimState, want[s.Name])
				}
				if want[s.Name] != "" && s.ClaimHolder == "" {
					t.Errorf("%s: a read released its claim", s.Name)
				}
			}
			// Its active run says the same, listed or read alone.
			runs, err := st.Runs(ctx, ingest.RunFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 5 {
				t.Fatalf("%d runs, want the 5 claimed", len(runs))
			}
			for _, r := range runs {
				one, err := st.Run(ctx, r.ID)
				if err != nil {
					t.Fatal(err)
				}
				if r.ClaimState != want[r.SourceName] || one.ClaimState != want[r.SourceName] {
					t.Errorf("the run of %s held by %q: claim %q listed, %q shown, want %q", r.SourceName, r.Holder, r.ClaimState, one.ClaimState, want[r.SourceName])
				}
			}
		}
		check(t)
		var active int
		if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM ingest_runs WHERE status = 'active'`).Scan(&active); err != nil || active != 5 {
			t.Fatalf("%d runs active after the reads (%v), want the 5 claimed: a read wrote", active, err)
		}
		env.Clock.Advance(2 * time.Hour)
		for name := range want {
			if name != "idle" {
				want[name] = tidemark.ClaimExpired
			}
		}
		check(t)
	})
}

// mustOpenLive opens a fresh database on b whose claims ask live whether
// a holder of this host is gone.
func mustOpenLive(t *testing.T, b sqltest.Backend, env sqltest.Env, live *ingest.Liveness) *sqlstore.DB {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), b.NewURL(t), sqlstore.Options{Clock: env.Clock, IDs: env.IDs, Liveness: live})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A gone holder's claim is taken over by ClaimDue's look whether or not
// anything is due: the takeover commits on its own (nothing due), beside
// the claims of other sources (on PostgreSQL those are claimed in one
// statement before the look), and over a lease that has expired meanwhile,
// which the claim of a due source would not otherwise meet before the
// source is next due. A freed source that is due is claimed by the same
// look when there is room. A live holder's expired lease is left to the
// claim of its source when it is next due.
func TestClaimDueTakesOverGoneHoldersWhateverIsDue(t *testing.T) {
	ctx := context.Background()
	const later = 6 * time.Hour // when a source run just now is next due
	cases := []struct {
		name string
		// dueToo adds a due source nobody holds; goneDue leaves the gone
		// holder's source due; expire lets its lease run out first.
		dueToo, goneDue, expire bool
	}{
		{name: "nothing due"},
		{name: "another source due", dueToo: true},
		{name: "lease expired", expire: true},
		{name: "lease expired, another source due", dueToo: true, expire: true},
		{name: "freed source due", dueToo: true, goneDue: true},
	}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				env := sqltest.NewEnv(3)
				db := mustOpenLive(t, b, env, &ingest.Liveness{Host: "box", Alive: func(pid int) bool { return pid != 41 }})
				st := db.Ingest()
				gone := mustAddSource(t, st, "gone")
				if !tc.goneDue {
					mustRunUntil(t, st, env, gone, later)
				}
				old, err := st.Claim(ctx, gone.ID, "box:41", time.Minute) // then box:41 is killed
				if err != nil {
					t.Fatal(err)
				}
				var other tidemark.Source
				if tc.dueToo {
					other = mustAddSource(t, st, "other")
				}
				if tc.expire {
					env.Clock.Advance(2 * time.Minute)
				}
				cs, err := st.ClaimDue(ctx, "box:42", time.Minute, 10)
				if err != nil {
					t.Fatal(err)
				}
				var claimed []string
				for _, c := range cs {
					claimed = append(claimed, c.SourceID)
				}
				var want []string
				if tc.goneDue {
					want = append(want, gone.ID)
				}
				if tc.dueToo {
					want = append(want, other.ID)
				}
				slices.Sort(claimed)
				slices.Sort(want)
				if !slices.Equal(claimed, want) {
					t.Fatalf("ClaimDue claimed %v, want %v", claimed, want)
				}
				// The takeover is committed: another connection's read sees
				// the old run lost and the source no longer held by box:41.
				lost, err := st.Run(ctx, old.RunID)
				if err != nil {
					t.Fatal(err)
				}
				if lost.Outcome != tidemark.OutcomeLost || lost.Status == tidemark.RunActive {
					t.Fatalf("box:41's run after the look: status %s, outcome %q; want it lost", lost.Status, lost.Outcome)
				}
				src, err := st.Source(ctx, gone.ID)
				if err != nil {
					t.Fatal(err)
				}
				if tc.goneDue != (src.ClaimHolder == "box:42") || !tc.goneDue && src.ClaimHolder != "" {
					t.Fatalf("gone's claim after the look: held by %q (%s)", src.ClaimHolder, src.ClaimState)
				}
			})
		}
		// A live holder (of another host) whose lease expired keeps its
		// claim on a source not due (a read shows it expired), and loses
		// it to the claim of the source once the source is due.
		t.Run("live holder's lease expired", func(t *testing.T) {
			env := sqltest.NewEnv(3)
			db := mustOpenLive(t, b, env, &ingest.Liveness{Host: "box", Alive: func(pid int) bool { return pid != 41 }})
			st := db.Ingest()
			src := mustAddSource(t, st, "remote")
			mustRunUntil(t, st, env, src, later)
			old, err := st.Claim(ctx, src.ID, "other:41", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			env.Clock.Advance(2 * time.Minute)
			if cs, err := st.ClaimDue(ctx, "box:42", time.Minute, 10); err != nil || len(cs) != 0 {
				t.Fatalf("ClaimDue before the source is due: %+v, %v", cs, err)
			}
			if s, err := st.Source(ctx, src.ID); err != nil || s.ClaimHolder != "other:41" || s.ClaimState != tidemark.ClaimExpired {
				t.Fatalf("remote before it is due: held by %q (%s), %v; want other:41's expired claim kept", s.ClaimHolder, s.ClaimState, err)
			}
			env.Clock.Advance(later)
			cs, err := st.ClaimDue(ctx, "box:42", time.Minute, 10)
			if err != nil || len(cs) != 1 || cs[0].SourceID != src.ID {
				t.Fatalf("ClaimDue once the source is due: %+v, %v; want it claimed", cs, err)
			}
			if r, err := st.Run(ctx, old.RunID); err != nil || r.Outcome != tidemark.OutcomeLost {
				t.Fatalf("other:41's run: %+v, %v; want it lost", r, err)
			}
		})
	})
}

// mustRunUntil runs src once (nothing new) as a worker of another host,
// due again after d.
func mustRunUntil(t *testing.T, st *sqlstore.IngestStore, env sqltest.Env, src tidemark.Source, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	c, err := st.Claim(ctx, src.ID, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Settle(ctx, c, ingest.Settlement{Cursor: "c1", NextDueAt: env.Clock.Now().Add(d)}); err != nil {
		t.Fatal(err)
	}
}
