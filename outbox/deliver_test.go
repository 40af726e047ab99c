package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func TestDraftRefusesDuplicateIdentity(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{})
		a := h.draft("t1", "hello")
		c := h.draft("t1", "hello again")
		if c.Rank <= a.Rank {
			t.Fatalf("ranks %d then %d: drafts must rank in order", a.Rank, c.Rank)
		}
		_, err := h.st.Draft(context.Background(), outbox.Draft{Lane: h.lane, Target: "t1", Body: "hello"})
		if !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("duplicate identity: err = %v, want ErrConflict", err)
		}
		if a.IdempotencyKey != outbox.IdempotencyKey(h.lane, a.Identity()) || a.IdempotencyKey == c.IdempotencyKey {
			t.Fatalf("idempotency keys %q %q are not derived from the intents", a.IdempotencyKey, c.IdempotencyKey)
		}
		if _, err := h.st.Draft(context.Background(), outbox.Draft{Lane: "nope", Target: "t", Body: "x"}); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("unknown lane: %v", err)
		}
	})
}

func TestPublishHookDraftsInTheMarkTransaction(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{})
		ctx := context.Background()
		src, err := h.db.Ingest().AddSource(ctx, ingest.NewSource{Name: "docs", Kind: "git", Location: "/tmp/docs", Interval: time.Hour, RetryBudget: 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.st.AddChannel(ctx, "docs", h.lane, "room-1", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := h.st.AddChannel(ctx, src.ID, h.lane, "room-2", "thread-9"); err != nil {
			t.Fatal(err)
		}
		hook := h.st.PublishHook()
		publish := func(p tidemark.Publication, commit bool) {
			t.Helper()
			tx, err := h.db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if err := hook(ctx, tx, p); err != nil {
				t.Fatal(err)
			}
			if commit {
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
		count := func() int {
			t.Helper()
			ins, err := h.st.ListIntents(ctx, outbox.IntentFilter{Lane: h.lane})
			if err != nil {
				t.Fatal(err)
			}
			return len(ins)
		}
		p1 := tidemark.Publication{PageID: "page-1", SourceID: src.ID, Title: "v2 released", Summary: "Breaking change.", PageURL: "https://wiki/p1"}
		publish(p1, false)
		if n := count(); n != 0 {
			t.Fatalf("a rolled-back publication left %d intents", n)
		}
		publish(p1, true)
		ins, err := h.st.ListIntents(ctx, outbox.IntentFilter{Lane: h.lane})
		if err != nil {
			t.Fatal(err)
		}
		if len(ins) != 2 || ins[0].Target != "room-1" || ins[1].Parent != "thread-9" || ins[0].PageID != "page-1" ||
			ins[0].Body != "v2 released\n\nBreaking change.\n\nhttps://wiki/p1" {
			t.Fatalf("intents after publishing: %+v", ins)
		}
		publish(p1, true) // republished as it stands: nothing new
		if n := count(); n != 2 {
			t.Fatalf("republishing the same page drafted again: %d intents", n)
		}
		p2 := p1
		p2.Summary, p2.Generation = "Breaking change, revised.", 2
		publish(p2, true)
		if n := count(); n != 4 {
			t.Fatalf("a new summary drafted %d intents in all, want 4", n)
		}
		// A different page whose body collides with an intent (here: the
		// same page URL) does not fail the mark: its intents are kept in
		// collision, never sent.
		p3 := p1
		p3.PageID = "page-3"
		publish(p3, true)
		col, err := h.st.ListIntents(ctx, outbox.IntentFilter{Lane: h.lane, State: outbox.StateCollision})
		if err != nil || len(col) != 2 || col[0].PageID != "page-3" || !strings.Contains(col[0].StateReason, ins[0].ID) {
			t.Fatalf("colliding page: %+v %v; want two intents in collision naming their twins", col, err)
		}
		// Without a page URL the body names the page, so two pages with
		// the same text do not collide.
		p4, p5 := p1, p1
		p4.PageID, p4.PageURL, p5.PageID, p5.PageURL = "page-4", "", "page-5", ""
		publish(p4, true)
		publish(p5, true)
		if n := count(); n != 10 {
			t.Fatalf("%d intents after two pages with the same text, want 10", n)
		}
		pending, err := h.st.ListIntents(ctx, outbox.IntentFilter{Lane: h.lane, State: outbox.StatePending})
		if err != nil || len(pending) != 8 || !strings.HasSuffix(pending[7].Body, "page page-5") {
			t.Fatalf("pending %+v %v", pending, err)
		}
	})
}

func TestDeliverInRankOrderThroughThePacingGate(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{minGap: 10 * time.Second, skew: time.Second})
		ins := []outbox.Intent{h.draft("t1", "one"), h.draft("t2", "two"), h.draft("t1", "three")}
		d := h.deliverer("w1")
		if s := h.step(d); s.Kind != outbox.StepSent || s.IntentID != ins[0].ID || s.Outcome != outbox.OutcomeLanded {
			t.Fatalf("first step %+v", s)
		}
		s := h.step(d)
		if s.Kind != outbox.StepWait || !s.Until.Equal(sqltest.Epoch.Add(10*time.Second)) {
			t.Fatalf("second step %+v: want the gate closed for 10s", s)
		}
		if h.srv.Posts() != 1 {
			t.Fatalf("the gate let %d posts through", h.srv.Posts())
		}
		h.env.Clock.Advance(10 * time.Second)
		h.step(d)
		h.env.Clock.Advance(15 * time.Second)
		h.step(d)
		if s := h.step(d); s.Kind != outbox.StepIdle {
			t.Fatalf("after three sends: %+v", s)
		}
		h.assertExactlyOnce(ins)
		ws := h.srv.Writes()
		for i, w := range ws {
			if w.BodySHA256 != ins[i].BodySHA256 {
				t.Fatalf("write %d is %s, want rank order", i, w.ID)
			}
		}
		if got := h.intent(ins[0].ID); got.RemoteID != ws[0].ID || got.StateReason != string(outbox.CountLandedOnce) {
			t.Fatalf("landed intent %+v: want remote id %s verified by the counter", got, ws[0].ID)
		}
		gaps, err := h.st.Gaps(context.Background(), h.lane)
		if err != nil {
			t.Fatal(err)
		}
		g := gaps[0]
		if g.Count != 2 || g.MinMS != 10_000 || g.MedianMS != 12_500 || g.ThresholdMS != 10_000 || g.BelowThreshold != 0 || !g.OK {
			t.Fatalf("gaps %+v", g)
		}
	})
}

func TestRetryAfterIsHonoured(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{minGap: time.Second})
		in := h.draft("t1", "one")
		h.srv.RetryAfterNext(30 * time.Second)
		d := h.deliverer("w1")
		if s := h.step(d); s.Outcome != outbox.OutcomeDeferred {
			t.Fatalf("step %+v, want deferred", s)
		}
		if s := h.step(d); s.Kind != outbox.StepWait || !s.Until.Equal(sqltest.Epoch.Add(30*time.Second)) {
			t.Fatalf("step %+v, want to wait out Retry-After", s)
		}
		h.env.Clock.Advance(30 * time.Second)
		if s := h.step(d); s.Outcome != outbox.OutcomeLanded {
			t.Fatalf("step %+v", s)
		}
		h.assertExactlyOnce([]outbox.Intent{in})
	})
}

func TestModeratedTargetIsBucketedReversibly(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{retire: outbox.RetirementPolicy{Checks: 0, Spacing: tidemark.Duration(time.Hour)}})
		ins := []outbox.Intent{h.draft("t1", "one"), h.draft("locked", "two"), h.draft("t3", "three")}
		h.srv.Moderate("locked", "thread locked by a moderator")
		d := h.deliverer("w1")
		h.runOnce(d)
		if got := h.intent(ins[1].ID); got.State != outbox.StateUnexecutable || !strings.Contains(got.StateReason, "locked") {
			t.Fatalf("moderated intent %+v", got)
		}
		if h.srv.Posts() != 2 {
			t.Fatalf("%d posts: the moderated target was written to", h.srv.Posts())
		}
		h.assertExactlyOnce(ins)
		// Lifted: the next spaced check revives it and it is sent.
		h.srv.Moderate("locked", "")
		h.env.Clock.Advance(2 * time.Hour)
		h.runOnce(d)
		if got := h.intent(ins[1].ID); got.State != outbox.StateLanded {
			t.Fatalf("after the target reopened: %+v", got)
		}
		h.assertExactlyOnce(ins)
		checks, _ := h.st.Checks(context.Background(), ins[1].ID)
		if len(checks) != 2 || checks[0].Verdict != "unexecutable" || checks[1].Verdict != "pending" {
			t.Fatalf("checks %+v", checks)
		}
	})
}

// A write whose answer was lost, checked against a cache that serves a
// copy assembled before the attempt: whatever that copy says, it resolves
// nothing, and nothing is sent again; a fresh answer resolves it.
func TestStaleAnswersNeverResolveFreshOnesDo(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true, skew: time.Second})
		a, c := h.draft("t1", "one"), h.draft("t1", "two")
		d := h.deliverer("w1")
		h.step(d) // a lands
		h.srv.Freeze()
		h.env.Clock.Advance(10 * time.Second)
		h.srv.LoseAnswers(1)
		if s := h.step(d); s.IntentID != c.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("step %+v: want c's outcome unknown", s)
		}
		// The stale copy says c is not there; believing it would send c twice.
		pr, err := h.provider().Probe(context.Background(), provider.Write{Target: c.Target, Body: []byte(c.Body)})
		if err != nil || pr.Found || pr.Meta.Age != "10" {
			t.Fatalf("stale probe %+v %v", pr, err)
		}
		s := h.step(d)
		if s.Kind != outbox.StepReconciled || !slices.Equal(s.Plan.Unresolved, []string{c.ID}) {
			t.Fatalf("reconcile over a stale listing: %+v", s.Plan)
		}
		if got := h.intent(c.ID); got.State != outbox.StateUnresolved {
			t.Fatalf("c is %s after a stale answer", got.State)
		}
		if s := h.step(d); s.Kind != outbox.StepIdle {
			t.Fatalf("with c unresolved and its recheck not due: %+v", s)
		}
		// No Age header is no proof of freshness either.
		h.srv.Thaw()
		h.srv.OmitAge(true)
		h.env.Clock.Advance(2 * time.Minute)
		if s := h.step(d); s.Kind != outbox.StepReconciled || len(s.Plan.Unresolved) != 1 {
			t.Fatalf("reconcile without Age: %+v", s.Plan)
		}
		// An unreadable Date neither.
		h.srv.OmitAge(false)
		h.srv.BadDate(true)
		h.env.Clock.Advance(2 * time.Minute)
		if s := h.step(d); len(s.Plan.Unresolved) != 1 {
			t.Fatalf("reconcile with a bad Date: %+v", s.Plan)
		}
		if h.srv.Posts() != 2 {
			t.Fatalf("%d posts: an unresolved intent was sent again", h.srv.Posts())
		}
		h.srv.BadDate(false)
		h.env.Clock.Advance(2 * time.Minute)
		if s := h.step(d); s.Kind != outbox.StepReconciled || !slices.Contains(s.Plan.Landed, c.ID) {
			t.Fatalf("fresh reconcile: %+v", s.Plan)
		}
		h.assertExactlyOnce([]outbox.Intent{a, c})
		checks, _ := h.st.Checks(context.Background(), c.ID)
		if len(checks) != 3 || !strings.Contains(checks[0].Evidence, `Age "10"`) {
			t.Fatalf("checks kept as evidence: %+v", checks)
		}
	})
}

// A write the remote is still processing is not yet in a listing, however
// fresh: "not found" decides that a write never landed only once the
// attempt could no longer land, after its request's deadline. Before that,
// resending it would make two.
func TestAbsenceDecidesOnlyAfterTheAttemptsDeadline(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true, skew: time.Second})
		a, c := h.draft("t1", "one"), h.draft("t1", "two")
		d := h.deliverer("w1")
		h.step(d) // a lands
		h.srv.HoldNext()
		if s := h.step(d); s.IntentID != c.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("step %+v: want c's outcome unknown", s)
		}
		// Fresh, past the skew, within the write's deadline: c is not
		// listed because it is still being written.
		h.env.Clock.Advance(5 * time.Second)
		s := h.step(d)
		if s.Kind != outbox.StepReconciled || !slices.Equal(s.Plan.Unresolved, []string{c.ID}) || len(s.Plan.Replay) != 0 {
			t.Fatalf("reconcile within c's deadline: %+v", s.Plan)
		}
		if got := h.intent(c.ID); got.State != outbox.StateUnresolved {
			t.Fatalf("c is %s", got.State)
		}
		if checks, err := h.st.Checks(context.Background(), c.ID); err != nil || len(checks) != 1 || !strings.Contains(checks[0].Evidence, "could still land") {
			t.Fatalf("c's check does not say why it stays unresolved: %+v %v", checks, err)
		}
		h.srv.Land()
		// Checked again once the deadline has passed, not hours later.
		h.env.Clock.Advance(provider.DefaultTimeout)
		s = h.step(d)
		if s.Kind != outbox.StepReconciled || !slices.Contains(s.Plan.Landed, c.ID) {
			t.Fatalf("reconcile after c's deadline: %+v %+v", s, s.Plan)
		}
		if h.srv.Posts() != 2 {
			t.Fatalf("%d posts: c was sent again while its first write was landing", h.srv.Posts())
		}
		h.assertExactlyOnce([]outbox.Intent{a, c})
	})
}

func TestRetirementPolicyAndOperators(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true, retire: outbox.RetirementPolicy{Checks: 2, Spacing: tidemark.Duration(time.Hour)}})
		ctx := context.Background()
		a := h.draft("t1", "one")
		h.srv.OmitAge(true) // no answer is ever fresh
		h.srv.LoseAnswers(1)
		d := h.deliverer("w1")
		h.step(d)
		h.step(d) // first check: unresolved
		h.env.Clock.Advance(10 * time.Minute)
		h.step(d)
		if got := h.intent(a.ID); got.State != outbox.StateUnresolved {
			t.Fatalf("retired before the checks were spaced: %+v", got)
		}
		h.env.Clock.Advance(2 * time.Hour)
		h.step(d)
		if got := h.intent(a.ID); got.State != outbox.StateRetired || !strings.Contains(got.StateReason, "policy") {
			t.Fatalf("after spaced checks: %+v", got)
		}
		// Revived, it goes back to unresolved (never straight to sending).
		got, err := h.st.Revive(ctx, a.ID, "ops", "look again")
		if err != nil || got.State != outbox.StateUnresolved {
			t.Fatalf("revive: %+v %v", got, err)
		}
		h.srv.OmitAge(false)
		h.env.Clock.Advance(time.Minute)
		h.step(d)
		h.assertExactlyOnce([]outbox.Intent{a})
		if h.srv.Posts() != 1 {
			t.Fatalf("%d posts", h.srv.Posts())
		}
		// Operators retire a pending intent, and cannot retire a landed one.
		p := h.draft("t2", "two")
		if got, err := h.st.Retire(ctx, p.ID, "ops", "not wanted"); err != nil || got.State != outbox.StateRetired {
			t.Fatalf("retire: %+v %v", got, err)
		}
		if _, err := h.st.Retire(ctx, a.ID, "ops", "x"); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("retire landed: %v", err)
		}
		acts, _ := h.st.Actions(ctx, a.ID)
		if len(acts) != 2 || acts[0].Actor != "policy" || acts[1].Action != "revive" {
			t.Fatalf("audit trail %+v", acts)
		}
	})
}

// takeover lets a second writer take the lane in the instant after the
// first writer's attempt is journaled and before it sends.
type takeover struct {
	outbox.Store
	after func()
}

func (s takeover) Begin(ctx context.Context, l outbox.Lease, na outbox.NewAttempt) (outbox.Attempt, error) {
	a, err := s.Store.Begin(ctx, l, na)
	if err == nil && s.after != nil {
		s.after()
	}
	return a, err
}

func TestOlderTokenRefusedBeforeItCanSend(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{})
		ctx := context.Background()
		in := h.draft("t1", "one")
		var second outbox.Lease
		first := h.deliverer("first")
		first.Store = takeover{Store: h.st, after: func() {
			if _, err := h.st.Acquire(ctx, h.lane, "second", time.Minute); !errors.Is(err, tidemark.ErrClaimHeld) {
				t.Errorf("acquire while held: %v", err)
			}
			h.env.Clock.Advance(2 * time.Minute) // the first writer's lease runs out
			var err error
			if second, err = h.st.Acquire(ctx, h.lane, "second", time.Minute); err != nil {
				t.Error(err)
			}
		}}
		_, err := first.Step(ctx)
		if !errors.Is(err, tidemark.ErrStaleClaim) {
			t.Fatalf("first writer: err = %v, want ErrStaleClaim", err)
		}
		if h.srv.Posts() != 0 {
			t.Fatal("the writer with the older token sent")
		}
		// Every journal transition with the old token changes nothing.
		old := outbox.Lease{Lane: h.lane, Holder: "first", Token: second.Token - 1, ExpiresAt: h.env.Clock.Now().Add(time.Hour)}
		if _, err := h.st.Begin(ctx, old, outbox.NewAttempt{IntentID: in.ID, Bound: time.Minute}); !errors.Is(err, tidemark.ErrStaleClaim) {
			t.Fatalf("begin with the old token: %v", err)
		}
		if err := h.st.Bucket(ctx, old, in.ID, "x", outbox.Check{}); !errors.Is(err, tidemark.ErrStaleClaim) {
			t.Fatalf("bucket with the old token: %v", err)
		}
		if second.Token <= old.Token {
			t.Fatalf("tokens %d then %d do not grow", old.Token, second.Token)
		}
		// The second writer finds the journaled attempt, reconciles (the
		// write never left) and sends it once.
		d2 := h.deliverer("second")
		steps := h.runOnce(d2)
		if steps[0].Kind != outbox.StepReconciled || !slices.Equal(steps[0].Plan.Replay, []string{in.ID}) {
			t.Fatalf("second writer's first step %+v", steps[0])
		}
		h.assertExactlyOnce([]outbox.Intent{in})
	})
}

// doublePoster makes every write land twice, as a provider that retried
// behind our back would.
type doublePoster struct{ provider.Provider }

func (p doublePoster) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	if _, err := p.Provider.Post(ctx, w); err != nil {
		return provider.Posted{}, err
	}
	return p.Provider.Post(ctx, w)
}

func TestVerifyBySubtraction(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{})
		a, c := h.draft("t1", "one"), h.draft("t1", "two")
		d := h.deliverer("w1")
		// The answer is lost, but the counter moved by one: landed, no
		// reconciliation needed.
		h.srv.LoseAnswers(1)
		if s := h.step(d); s.Outcome != outbox.OutcomeLanded {
			t.Fatalf("lost answer, counter +1: %+v", s)
		}
		if got := h.intent(a.ID); got.State != outbox.StateLanded || got.StateReason != string(outbox.CountLandedOnce) {
			t.Fatalf("intent %+v", got)
		}
		// The counter moved by two: a duplicate alert.
		d.Provider = doublePoster{d.Provider}
		s := h.step(d)
		if s.Alert == "" || h.intent(c.ID).StateReason != string(outbox.CountDuplicate) {
			t.Fatalf("counter +2 raised no alert: %+v", s)
		}
	})
}

// A run that starts at a closed gate and, once through it, finds the lane
// due for a recheck reconciles, and then goes on sending.
func TestRunOnceReconcilesAfterWaitingFirst(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{minGap: 2 * time.Minute})
		ins := []outbox.Intent{h.draft("locked", "one"), h.draft("t1", "two"), h.draft("t1", "three")}
		h.srv.Moderate("locked", "locked by a moderator")
		d := h.deliverer("w1")
		if s := h.step(d); s.Kind != outbox.StepBucketed {
			t.Fatalf("first step %+v", s)
		}
		if s := h.step(d); s.Kind != outbox.StepSent {
			t.Fatalf("second step %+v", s)
		}
		// The gate is closed for two minutes; the recheck falls due in one.
		steps := h.runOnce(d)
		if len(steps) == 0 || steps[0].Kind != outbox.StepReconciled {
			t.Fatalf("steps %+v: want a reconciliation after the wait", steps)
		}
		h.assertExactlyOnce(ins)
		if got := h.intent(ins[2].ID); got.State != outbox.StateLanded {
			t.Fatalf("the last intent is %s", got.State)
		}
	})
}

// laterAlways is a provider that answers every write "later" (429 with
// Retry-After) while later is set.
type laterAlways struct {
	provider.Provider
	later bool
	posts int
}

func (p *laterAlways) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	if !p.later {
		return p.Provider.Post(ctx, w)
	}
	p.posts++
	return provider.Posted{}, &provider.RetryAfterError{Status: 429, After: 30 * time.Second}
}

// A pass (RunOnce) is bounded: a write its provider asks to wait for is
// deferred (pending, with the gate set to when it may be tried again) and
// the pass ends; it does not sleep and try again. A later pass that finds
// the gate still closed by the provider ends at once, sending nothing; one
// after the gate opens sends it.
func TestRunOnceDefersAWriteItsRemoteAsksToWaitForAndEnds(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{minGap: time.Second})
		ins := []outbox.Intent{h.draft("t1", "one"), h.draft("t1", "two")}
		d := h.deliverer("w1")
		p := &laterAlways{Provider: d.Provider, later: true}
		d.Provider = p
		sleeps := 0
		pass := func() ([]outbox.Step, error) {
			t.Helper()
			return d.RunOnce(context.Background(), func(_ context.Context, dur time.Duration) error {
				if sleeps++; sleeps > 10 {
					return errors.New("the pass keeps waiting on a provider that says later")
				}
				h.env.Clock.Advance(dur)
				return nil
			})
		}
		steps, err := pass()
		var deferred *outbox.DeferredError
		if !errors.As(err, &deferred) || !errors.Is(err, tidemark.ErrUnavailable) || deferred.IntentID != ins[0].ID ||
			!deferred.Until.Equal(sqltest.Epoch.Add(30*time.Second)) {
			t.Fatalf("first pass: %v (%d posts, %d sleeps); want the intent deferred until +30s", err, p.posts, sleeps)
		}
		if p.posts != 1 || len(steps) != 1 || steps[0].Outcome != outbox.OutcomeDeferred {
			t.Fatalf("first pass: %d posts, steps %+v; want one attempt, deferred", p.posts, steps)
		}
		if got := h.intent(ins[0].ID); got.State != outbox.StatePending || got.Attempts != 1 {
			t.Fatalf("intent %+v: want pending after one attempt", got)
		}
		steps, err = pass()
		if !errors.As(err, &deferred) || p.posts != 1 || len(steps) != 1 || steps[0].Kind != outbox.StepWait ||
			steps[0].Outcome != outbox.OutcomeDeferred {
			t.Fatalf("second pass: %v, %d posts, steps %+v; want it to end at the closed gate, sending nothing", err, p.posts, steps)
		}
		h.env.Clock.Advance(30 * time.Second)
		p.later = false
		if _, err := pass(); err != nil {
			t.Fatalf("pass after the gate opened: %v", err)
		}
		h.assertExactlyOnce(ins)
	})
}

// A write the remote refuses for a reason that is the lane's, not the
// target's (a 401 for a wrong secret), burns nothing: the intent stays
// pending, nothing after it is sent into the same refusal, the lane says
// why it cannot deliver, and once its credentials are fixed the queue
// goes out as it stood, with no operator reviving anything.
func TestRefusedWriteStopsTheLaneAndKeepsTheQueue(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{})
		ctx := context.Background()
		ins := []outbox.Intent{h.draft("t1", "one"), h.draft("t2", "two"), h.draft("t3", "three")}
		t.Setenv(secretEnv, "not-the-secret") // the receiver answers 401
		d := h.deliverer("w1")
		steps, err := d.RunOnce(ctx, func(_ context.Context, dur time.Duration) error { h.env.Clock.Advance(dur); return nil })
		if !errors.Is(err, tidemark.ErrUnavailable) || !strings.Contains(err.Error(), "401") {
			t.Fatalf("RunOnce: err = %v, want the refusal as unavailable (exit 5), naming the status", err)
		}
		if len(steps) != 1 || steps[0].IntentID != ins[0].ID || steps[0].Outcome != outbox.OutcomeRefused {
			t.Fatalf("steps %+v, want one refused attempt at the first intent", steps)
		}
		if n := h.srv.Posts(); n != 1 {
			t.Fatalf("%d posts: a lane whose writes are refused must stop sending", n)
		}
		for _, in := range ins {
			if got := h.intent(in.ID); got.State != outbox.StatePending {
				t.Fatalf("intent %s is %s (%s), want pending", in.ID, got.State, got.StateReason)
			}
		}
		l, err := h.st.LaneDetail(ctx, h.lane)
		if err != nil {
			t.Fatal(err)
		}
		v := outbox.LaneView{Lane: l}
		v.Judge(nil)
		if v.Health != outbox.HealthBroken || !strings.Contains(v.Problem, "401") {
			t.Fatalf("lane health %q (%q), want broken, saying the provider refused with 401", v.Health, v.Problem)
		}
		if err := d.Release(ctx); err != nil {
			t.Fatal(err)
		}
		// The credentials fixed: the queue goes out, and the lane is ok.
		t.Setenv(secretEnv, secret)
		h.runOnce(h.deliverer("w1"))
		h.assertExactlyOnce(ins)
		for _, in := range ins {
			if got := h.intent(in.ID); got.State != outbox.StateLanded {
				t.Fatalf("after the fix intent %s is %s, want landed", in.ID, got.State)
			}
		}
		if l, err = h.st.LaneDetail(ctx, h.lane); err != nil {
			t.Fatal(err)
		}
		v = outbox.LaneView{Lane: l}
		if v.Judge(nil); v.Health != outbox.HealthOK {
			t.Fatalf("after the fix the lane is %q (%q), want ok", v.Health, v.Problem)
		}
	})
}

// A writer that died with a write in flight leaves the intent sending and
// the lane's flag down: the lane is in doubt as soon as that writer cannot
// be the one finishing it (its lease ran out, or its process is gone), not
// only once the next writer takes the lane.
func TestALaneWithAnAttemptItsWriterLostIsInDoubt(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{})
		ctx := context.Background()
		in := h.draft("t1", "one")
		l, err := h.st.Acquire(ctx, h.lane, "vm:4242", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.st.Begin(ctx, l, outbox.NewAttempt{IntentID: in.ID, Bound: time.Minute}); err != nil {
			t.Fatal(err)
		}
		judge := func(gone bool) string {
			t.Helper()
			lane, err := h.st.LaneDetail(ctx, h.lane)
			if err != nil {
				t.Fatal(err)
			}
			v := outbox.LaneView{Lane: lane, AsOf: h.env.Clock.Now(), HolderGone: gone}
			v.Judge(nil)
			return v.Health
		}
		// Its writer holds the lane and may still finish the attempt.
		if got := judge(false); got != outbox.HealthOK {
			t.Fatalf("an attempt in flight under a live lease: health %q, want ok", got)
		}
		if got := judge(true); got != outbox.HealthInDoubt {
			t.Fatalf("an attempt in flight whose writer's process is gone: health %q, want in doubt", got)
		}
		h.env.Clock.Advance(time.Minute + time.Second)
		if got := judge(false); got != outbox.HealthInDoubt {
			t.Fatalf("an attempt in flight whose writer's lease ran out: health %q, want in doubt", got)
		}
	})
}

// scoped is a provider whose listing reads only some targets (Slack's
// channels, GitHub's repos, ntfy's topics, Matrix's rooms): a write to any
// other target is never listed, landed or not.
type scoped struct {
	provider.Provider
	covered string
	probes  bool
}

func (s scoped) Covers(target, _ string) bool { return target == s.covered }

func (s scoped) ListOwn(ctx context.Context, q provider.ListQuery) (provider.Page, error) {
	pg, err := s.Provider.ListOwn(ctx, q)
	kept := pg.Writes[:0]
	for _, w := range pg.Writes {
		if w.Target == s.covered {
			kept = append(kept, w)
		}
	}
	pg.Writes = kept
	return pg, err
}

func (s scoped) Probe(ctx context.Context, w provider.Write) (provider.Probed, error) {
	if !s.probes {
		return provider.Probed{}, provider.ErrUnsupported
	}
	return s.Provider.Probe(ctx, w)
}

// A listing says nothing of a target it does not read: a write in doubt
// there is decided by a probe, or stays unresolved; it is never taken for
// one that did not land and sent again.
func TestAListingDecidesOnlyTheTargetsItReads(t *testing.T) {
	for _, probes := range []bool{false, true} {
		t.Run(fmt.Sprintf("probe=%v", probes), func(t *testing.T) {
			h := newHarness(t, sqltest.Backends()[0], laneOpts{noCount: true, skew: time.Second})
			in := h.draft("elsewhere", "one")
			d := &outbox.Deliverer{Store: h.st, Provider: scoped{h.provider(), "covered", probes}, Lane: h.lane, Holder: "w1", Clock: h.env.Clock, LeaseTTL: time.Minute}
			h.srv.LoseAnswers(1) // it lands; its answer is lost
			if s := h.step(d); s.Outcome != outbox.OutcomeUnknown {
				t.Fatalf("step %+v: want the outcome unknown", s)
			}
			h.env.Clock.Advance(provider.DefaultTimeout + time.Minute) // past its deadline: a fresh listing could decide a covered write
			for range 3 {
				h.step(d)
			}
			if h.srv.Posts() != 1 {
				t.Fatalf("%d posts: the write was sent again because a listing that does not read its target did not show it", h.srv.Posts())
			}
			want := outbox.StateUnresolved
			if probes {
				want = outbox.StateLanded
			}
			if got := h.intent(in.ID); got.State != want {
				t.Fatalf("intent is %s, want %s", got.State, want)
			}
			if checks, err := h.st.Checks(context.Background(), in.ID); !probes && (err != nil || len(checks) == 0) ||
				!probes && !strings.Contains(checks[0].Evidence, `does not read target "elsewhere"`) {
				t.Fatalf("the evidence does not say the listing cannot show it: %+v %v", checks, err)
			}
		})
	}
}

// A provider's counter that has not moved when a write's answer was lost
// says nothing before the attempt's deadline: the remote may still be
// writing it. Counted at once, a 5xx whose write landed a moment later
// was taken for "not landed" and sent again, as often as the lane's gap
// allowed. The lane now waits for the deadline, sending nothing, and
// counts again.
func TestAnUnmovedCounterDecidesOnlyAfterTheAttemptsDeadline(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for _, lands := range []bool{true, false} {
			t.Run(fmt.Sprintf("lands=%v", lands), func(t *testing.T) {
				h := newHarness(t, b, laneOpts{skew: time.Second})
				a, c, e := h.draft("t1", "one"), h.draft("t1", "two"), h.draft("t1", "three")
				d := h.deliverer("w1")
				h.step(d) // a lands
				h.srv.HoldNext()
				sent := h.env.Clock.Now()
				s := h.step(d)
				if s.Kind != outbox.StepWait || s.IntentID != c.ID || s.Until == nil || s.Until.Sub(sent) < provider.DefaultTimeout+time.Second {
					t.Fatalf("step %+v: want a wait for c's deadline (%v) and the skew", s, provider.DefaultTimeout)
				}
				if got := h.intent(c.ID); got.State != outbox.StateSending {
					t.Fatalf("c is %s while it waits to be counted", got.State)
				}
				// Nothing else is sent while c may still land.
				h.env.Clock.Advance(provider.DefaultTimeout / 2)
				if s := h.step(d); s.Kind != outbox.StepWait || h.srv.Posts() != 2 {
					t.Fatalf("step within c's deadline %+v, %d posts", s, h.srv.Posts())
				}
				if lands {
					h.srv.Land() // the remote finishes writing within the deadline
				}
				h.env.Clock.Set(*s.Until)
				want := outbox.OutcomeNotLanded
				if lands {
					want = outbox.OutcomeLanded
				}
				if s := h.step(d); s.Kind != outbox.StepSent || s.IntentID != c.ID || s.Outcome != want {
					t.Fatalf("step after c's deadline %+v: want c %s", s, want)
				}
				h.runOnce(d)
				if want := map[bool]int{true: 3, false: 4}[lands]; h.srv.Posts() != want {
					t.Fatalf("%d posts, want %d (c sent again only if it never landed)", h.srv.Posts(), want)
				}
				h.assertExactlyOnce([]outbox.Intent{a, c, e})
			})
		}
	})
}

// A delivery stopped while a write waits to be counted again finishes its
// attempt as unknown, for a reconciliation to decide: never as not landed.
func TestAStoppedDeliveryLeavesAnUncountedWriteInDoubt(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{})
		c := h.draft("t1", "one")
		d := h.deliverer("w1")
		h.srv.HoldNext()
		if s := h.step(d); s.Kind != outbox.StepWait {
			t.Fatalf("step %+v: want a wait for the deadline", s)
		}
		if err := d.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.srv.Land()
		got := h.intent(c.ID)
		if got.State == outbox.StatePending || got.State == outbox.StateLanded {
			t.Fatalf("c is %s after a stop before its deadline: want it in doubt", got.State)
		}
		h.env.Clock.Advance(provider.DefaultTimeout + time.Minute)
		h.runOnce(h.deliverer("w2"))
		if h.srv.Posts() != 1 {
			t.Fatalf("%d posts: c was sent again", h.srv.Posts())
		}
		h.assertExactlyOnce([]outbox.Intent{c})
	})
}

// A receiver that is up but fails every write is not sent the same write
// again at the lane's gap forever: each failed attempt of an intent
// doubles the wait before the lane sends again, up to a cap.
func TestFailedAttemptsBackOff(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true})
		c := h.draft("t1", "one")
		h.srv.FailWrites(12)
		d := h.deliverer("w1")
		var gaps []time.Duration
		last := time.Time{}
		for h.srv.Posts() < 13 {
			before := h.srv.Posts()
			s := h.step(d)
			if h.srv.Posts() > before {
				if !last.IsZero() {
					gaps = append(gaps, h.env.Clock.Now().Sub(last))
				}
				last = h.env.Clock.Now()
			}
			switch {
			case s.Until != nil && s.Until.After(h.env.Clock.Now()):
				h.env.Clock.Set(*s.Until)
			default:
				h.env.Clock.Advance(time.Second)
			}
			if len(gaps) > 40 {
				t.Fatal("no progress")
			}
		}
		t.Logf("gaps between attempts: %v", gaps)
		for i := 1; i < len(gaps); i++ {
			if gaps[i] < gaps[i-1] && gaps[i] < outbox.MaxFailureBackoff {
				t.Fatalf("gaps between attempts %v: shrank at %d", gaps, i)
			}
		}
		if g := gaps[len(gaps)-1]; g < outbox.MaxFailureBackoff {
			t.Fatalf("gaps between attempts %v: want the last at the cap %v", gaps, outbox.MaxFailureBackoff)
		}
		if g := gaps[len(gaps)-1]; g > outbox.MaxFailureBackoff+provider.DefaultTimeout+time.Minute {
			t.Fatalf("gaps between attempts %v: the cap %v is not kept", gaps, outbox.MaxFailureBackoff)
		}
		h.runOnce(d)
		h.assertExactlyOnce([]outbox.Intent{c})
	})
}
