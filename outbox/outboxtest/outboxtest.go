// Package outboxtest is the conformance suite every outbox.Store passes, in
// the manner of testing/fstest: an implementation's tests call Run with a
// way to open a fresh store. It holds the store's promises: drafting
// (identity and origin uniqueness, collisions), the lane lease and its
// growing token, every journal transition fenced by the current token, the
// pacing gate, reconciliation, and an operator's retire and revive.
package outboxtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox"
)

// Harness is a fresh, empty store, the fake clock it runs on, and the
// administration the suite needs beside outbox.Store.
type Harness struct {
	Store outbox.Store
	Clock *clock.Fake
	// AddLane adds a lane whose writes are at least minGap apart.
	AddLane func(t *testing.T, name string, minGap time.Duration)
	// AddLaneOf adds a lane of a provider kind (AddLane's are webhooks).
	AddLaneOf func(t *testing.T, name, kind string)
	// Intent reads any intent, retired and colliding ones included.
	Intent func(t *testing.T, id string) outbox.Intent
	// Retire and Revive are an operator's (see outbox.StateRetired).
	Retire func(ctx context.Context, id, actor, reason string) (outbox.Intent, error)
	Revive func(ctx context.Context, id, actor, reason string) (outbox.Intent, error)
}

const ttl = time.Minute

// Run runs the outbox store conformance suite. open returns a fresh, empty
// store for each subtest.
func Run(t *testing.T, open func(t *testing.T) Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"DraftRanksInLaneOrder", testDraftRanks},
		{"DraftRefusesBadInput", testDraftInvalid},
		{"DraftByHandRefusesDuplicateIdentity", testDraftDuplicate},
		{"DraftOriginIsUniqueCollisionKept", testDraftOrigin},
		{"LeaseTokenOnlyGrows", testLeaseToken},
		{"StaleTokenChangesNothing", testStaleToken},
		{"ExpiredLeaseChangesNothing", testExpiredLease},
		{"SameHolderOlderTokenChangesNothing", testSameHolderOlderToken},
		{"FinishRecordsEachOutcome", testFinishOutcomes},
		{"OneAttemptInFlight", testOneInFlight},
		{"PacingGate", testPacingGate},
		{"ApplyReconciles", testApply},
		{"RetireAndRevive", testRetireRevive},
		{"CollisionRevivedOnlyWithoutLiveTwin", testCollisionRevive},
		{"DraftIdentityIsWhatTheProviderTellsApart", testDraftFingerprint},
		{"ReadRefusalStandsUntilAReconciliation", testReadRefusal},
		{"ApplyKeepsWhyAnIntentStaysUnresolved", testUnresolvedReason},
		{"ApplyKeepsTheOwnWritesNoIntentMatched", testLastReconciliation},
		{"KeptReadIsFencedReplacedAndDroppedByApply", testKeptRead},
		{"LaneFailuresAreKeptUntilAStepGoesThrough", testLaneFailures},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var ctx = context.Background()

func mustDraft(t *testing.T, h Harness, d outbox.Draft) outbox.Intent {
	t.Helper()
	in, err := h.Store.Draft(ctx, d)
	if err != nil {
		t.Fatalf("draft %+v: %v", d, err)
	}
	return in
}

func byHand(lane, body string) outbox.Draft {
	return outbox.Draft{Lane: lane, Target: "room-1", Body: body}
}

func mustAcquire(t *testing.T, h Harness, lane, holder string) outbox.Lease {
	t.Helper()
	l, err := h.Store.Acquire(ctx, lane, holder, ttl)
	if err != nil {
		t.Fatalf("acquire %s for %s: %v", lane, holder, err)
	}
	return l
}

func mustBegin(t *testing.T, h Harness, l outbox.Lease, intentID string) outbox.Attempt {
	t.Helper()
	a, err := h.Store.Begin(ctx, l, outbox.NewAttempt{IntentID: intentID, Bound: time.Minute})
	if err != nil {
		t.Fatalf("begin %s: %v", intentID, err)
	}
	if a.IntentID != intentID || a.Token != l.Token || a.ID == "" {
		t.Fatalf("attempt %+v for intent %s under token %d", a, intentID, l.Token)
	}
	return a
}

func mustFinish(t *testing.T, h Harness, l outbox.Lease, a outbox.Attempt, r outbox.Result) {
	t.Helper()
	if err := h.Store.Finish(ctx, l, a, r); err != nil {
		t.Fatalf("finish %s as %s: %v", a.IntentID, r.Outcome, err)
	}
}

func mustState(t *testing.T, h Harness, id string, want outbox.State) outbox.Intent {
	t.Helper()
	in := h.Intent(t, id)
	if in.State != want {
		t.Fatalf("intent %s is %s (%s), want %s", id, in.State, in.StateReason, want)
	}
	return in
}

func mustLane(t *testing.T, h Harness, name string) outbox.Lane {
	t.Helper()
	l, err := h.Store.Lane(ctx, name)
	if err != nil {
		t.Fatalf("lane %s: %v", name, err)
	}
	return l
}

func mustErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

func mustInDoubt(t *testing.T, h Harness, l outbox.Lease, want bool) {
	t.Helper()
	got, err := h.Store.InDoubt(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("lane %s in doubt = %v, want %v", l.Lane, got, want)
	}
}

func landed(h Harness, remoteID string) outbox.Result {
	return outbox.Result{Outcome: outbox.OutcomeLanded, RemoteID: remoteID, SentAt: h.Clock.Now()}
}

func testDraftRanks(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	h.AddLane(t, "other", 0)
	a := mustDraft(t, h, byHand("chat", "first"))
	b := mustDraft(t, h, byHand("chat", "second"))
	o := mustDraft(t, h, byHand("other", "first"))
	if a.State != outbox.StatePending || a.Lane != "chat" || a.Target != "room-1" || a.Body != "first" ||
		a.IdempotencyKey == "" || a.BodySHA256 != outbox.BodySHA256([]byte("first")) || a.Attempts != 0 {
		t.Fatalf("drafted intent %+v", a)
	}
	if b.Rank <= a.Rank {
		t.Fatalf("ranks %d then %d, want increasing", a.Rank, b.Rank)
	}
	if a.IdempotencyKey == b.IdempotencyKey || a.IdempotencyKey == o.IdempotencyKey {
		t.Fatalf("idempotency keys repeat: %s %s %s", a.IdempotencyKey, b.IdempotencyKey, o.IdempotencyKey)
	}
	l := mustAcquire(t, h, "chat", "w1")
	next, ok, err := h.Store.NextPending(ctx, l)
	if err != nil || !ok || next.ID != a.ID {
		t.Fatalf("next pending %+v %v %v, want %s", next, ok, err, a.ID)
	}
	all, err := h.Store.Intents(ctx, l)
	if err != nil || len(all) != 2 || all[0].ID != a.ID || all[1].ID != b.ID {
		t.Fatalf("intents of chat %+v %v, want [%s %s]", all, err, a.ID, b.ID)
	}
	lo := mustAcquire(t, h, "other", "w1")
	if next, ok, err := h.Store.NextPending(ctx, lo); err != nil || !ok || next.ID != o.ID {
		t.Fatalf("next pending of other %+v %v %v, want %s", next, ok, err, o.ID)
	}
}

func testDraftInvalid(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	if _, err := h.Store.Draft(ctx, byHand("chat", "")); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("draft without a body: %v, want ErrInvalid", err)
	}
	if _, err := h.Store.Draft(ctx, outbox.Draft{Lane: "chat", Target: " ", Body: "x"}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("draft without a target: %v, want ErrInvalid", err)
	}
	if _, err := h.Store.Draft(ctx, byHand("nowhere", "x")); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("draft on a missing lane: %v, want ErrNotFound", err)
	}
	l := mustAcquire(t, h, "chat", "w1")
	if _, ok, err := h.Store.NextPending(ctx, l); err != nil || ok {
		t.Fatalf("refused drafts left an intent: %v %v", ok, err)
	}
}

func testDraftDuplicate(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	h.AddLane(t, "other", 0)
	a := mustDraft(t, h, byHand("chat", "hello"))
	_, err := h.Store.Draft(ctx, byHand("chat", "hello"))
	mustErr(t, "draft the same identity by hand", err, tidemark.ErrConflict)
	// Another parent, target or lane is another identity.
	mustDraft(t, h, outbox.Draft{Lane: "chat", Target: "room-1", Parent: "thread-1", Body: "hello"})
	mustDraft(t, h, outbox.Draft{Lane: "chat", Target: "room-2", Body: "hello"})
	mustDraft(t, h, byHand("other", "hello"))
	l := mustAcquire(t, h, "chat", "w1")
	all, err := h.Store.Intents(ctx, l)
	if err != nil || len(all) != 3 || all[0].ID != a.ID {
		t.Fatalf("intents %+v %v, want 3 starting with %s", all, err, a.ID)
	}
}

func testDraftOrigin(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	from := func(page, summary, body string) outbox.Draft {
		return outbox.Draft{Lane: "chat", Target: "room-1", Body: body, SourceID: "src", ChannelID: "ch1", PageID: page, SummaryID: summary}
	}
	a := mustDraft(t, h, from("page-1", "sum-1", "page one"))
	if a.PageID != "page-1" || a.ChannelID != "ch1" || a.SummaryID != "sum-1" {
		t.Fatalf("origin not recorded: %+v", a)
	}
	// The same origin drafts nothing new, even with another body.
	if again := mustDraft(t, h, from("page-1", "sum-1", "page one, changed")); again.ID != a.ID {
		t.Fatalf("same origin drafted %s, want %s", again.ID, a.ID)
	}
	// The page's summary came back to a text it already drafted.
	if back := mustDraft(t, h, from("page-1", "sum-2", "page one")); back.ID != a.ID {
		t.Fatalf("same page and body drafted %s, want %s", back.ID, a.ID)
	}
	// Another page with the same remote identity is kept, in collision,
	// with its own key, out of reconciliation's join.
	c := mustDraft(t, h, from("page-2", "sum-3", "page one"))
	if c.ID == a.ID || c.State != outbox.StateCollision || c.StateReason == "" || c.IdempotencyKey == a.IdempotencyKey {
		t.Fatalf("colliding draft %+v (earlier %+v)", c, a)
	}
	l := mustAcquire(t, h, "chat", "w1")
	all, err := h.Store.Intents(ctx, l)
	if err != nil || len(all) != 1 || all[0].ID != a.ID {
		t.Fatalf("intents %+v %v, want only %s", all, err, a.ID)
	}
	if _, err := h.Store.Begin(ctx, l, outbox.NewAttempt{IntentID: c.ID, Bound: time.Minute}); !errors.Is(err, tidemark.ErrConflict) {
		t.Fatalf("begin a colliding intent: %v, want ErrConflict", err)
	}
	mustState(t, h, c.ID, outbox.StateCollision)
}

func testLeaseToken(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	if _, err := h.Store.Acquire(ctx, "nowhere", "w1", ttl); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("acquire a missing lane: %v, want ErrNotFound", err)
	}
	l1 := mustAcquire(t, h, "chat", "w1")
	if l1.Token < 1 || l1.Holder != "w1" || !l1.ExpiresAt.Equal(h.Clock.Now().Add(ttl)) {
		t.Fatalf("lease %+v", l1)
	}
	if got := mustLane(t, h, "chat"); got.LeaseToken != l1.Token || got.LeaseHolder != "w1" {
		t.Fatalf("lane records lease %d of %q, want %d of w1", got.LeaseToken, got.LeaseHolder, l1.Token)
	}
	_, err := h.Store.Acquire(ctx, "chat", "w2", ttl)
	mustErr(t, "acquire a held lane", err, tidemark.ErrClaimHeld)
	if err := h.Store.CheckLease(ctx, l1); err != nil {
		t.Fatalf("check the current lease: %v", err)
	}
	// The same holder acquiring again gets a higher token; its old one is stale.
	l2 := mustAcquire(t, h, "chat", "w1")
	if l2.Token <= l1.Token {
		t.Fatalf("tokens %d then %d, want increasing", l1.Token, l2.Token)
	}
	mustErr(t, "check the replaced lease", h.Store.CheckLease(ctx, l1), tidemark.ErrStaleClaim)
	_, err = h.Store.Renew(ctx, l1, ttl)
	mustErr(t, "renew the replaced lease", err, tidemark.ErrStaleClaim)
	// Renewal extends the current lease.
	h.Clock.Advance(ttl / 2)
	l2r, err := h.Store.Renew(ctx, l2, ttl)
	if err != nil || l2r.Token != l2.Token || !l2r.ExpiresAt.Equal(h.Clock.Now().Add(ttl)) {
		t.Fatalf("renew: %+v %v", l2r, err)
	}
	h.Clock.Advance(ttl * 3 / 4)
	if err := h.Store.CheckLease(ctx, l2r); err != nil {
		t.Fatalf("the renewed lease expired early: %v", err)
	}
	// Released, another holder takes it at once, with a higher token.
	if err := h.Store.Release(ctx, l2r); err != nil {
		t.Fatal(err)
	}
	l3 := mustAcquire(t, h, "chat", "w2")
	if l3.Token <= l2.Token {
		t.Fatalf("token after release %d, want more than %d", l3.Token, l2.Token)
	}
	// Releasing a lost lease does not free the lane.
	if err := h.Store.Release(ctx, l2r); err != nil {
		t.Fatalf("release a lost lease: %v", err)
	}
	if err := h.Store.CheckLease(ctx, l3); err != nil {
		t.Fatalf("an old holder's release freed the lane: %v", err)
	}
	// Expired, the lane goes to another holder.
	h.Clock.Advance(ttl + time.Second)
	mustErr(t, "check an expired lease", h.Store.CheckLease(ctx, l3), tidemark.ErrStaleClaim)
	l4 := mustAcquire(t, h, "chat", "w1")
	if l4.Token <= l3.Token {
		t.Fatalf("token after expiry %d, want more than %d", l4.Token, l3.Token)
	}
}

// staleEverywhere asserts every fenced method refuses l, changing nothing.
func staleEverywhere(t *testing.T, h Harness, l outbox.Lease, pending, sending string, open outbox.Attempt) {
	t.Helper()
	_, err := h.Store.Begin(ctx, l, outbox.NewAttempt{IntentID: pending, Bound: time.Minute})
	mustErr(t, "begin under a stale token", err, tidemark.ErrStaleClaim)
	mustState(t, h, pending, outbox.StatePending)
	mustErr(t, "bucket under a stale token",
		h.Store.Bucket(ctx, l, pending, "moderated", outbox.Check{At: h.Clock.Now(), Verdict: "unexecutable", Evidence: "x"}), tidemark.ErrStaleClaim)
	mustState(t, h, pending, outbox.StatePending)
	if checks, err := h.Store.Checks(ctx, pending); err != nil || len(checks) != 0 {
		t.Fatalf("a refused bucket recorded checks %+v %v", checks, err)
	}
	if sending != "" {
		mustErr(t, "finish under a stale token", h.Store.Finish(ctx, l, open, landed(h, "r-stale")), tidemark.ErrStaleClaim)
		in := mustState(t, h, sending, outbox.StateSending)
		if in.RemoteID != "" || in.LandedAt != nil {
			t.Fatalf("a refused finish changed the intent: %+v", in)
		}
	}
	plan := &outbox.Plan{Landed: []string{pending}, LandedAs: map[string]outbox.OwnWrite{pending: {RemoteID: "r-x"}},
		Accounting: outbox.Accounting{Total: 1, Landed: 1, Balanced: true}}
	mustErr(t, "apply under a stale token", h.Store.Apply(ctx, l, outbox.Reconciliation{Plan: plan}), tidemark.ErrStaleClaim)
	mustState(t, h, pending, outbox.StatePending)
}

func testStaleToken(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	a := mustDraft(t, h, byHand("chat", "a"))
	b := mustDraft(t, h, byHand("chat", "b"))
	old := mustAcquire(t, h, "chat", "w1")
	attempt := mustBegin(t, h, old, a.ID)
	h.Clock.Advance(ttl + time.Second)
	cur := mustAcquire(t, h, "chat", "w2")
	staleEverywhere(t, h, old, b.ID, a.ID, attempt)
	// The current token's reconciliation closes the old attempt and the
	// writer carries on.
	plan := &outbox.Plan{Landed: []string{a.ID}, LandedAs: map[string]outbox.OwnWrite{a.ID: {RemoteID: "r-a"}},
		Accounting: outbox.Accounting{Total: 2, Landed: 1, Replay: 1, Balanced: true}, Replay: []string{}}
	if err := h.Store.Apply(ctx, cur, outbox.Reconciliation{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	mustState(t, h, a.ID, outbox.StateLanded)
	mustErr(t, "finish an attempt reconciliation closed", h.Store.Finish(ctx, cur, attempt, landed(h, "r-late")), tidemark.ErrStaleClaim)
	mustFinish(t, h, cur, mustBegin(t, h, cur, b.ID), landed(h, "r-b"))
	if in := mustState(t, h, b.ID, outbox.StateLanded); in.RemoteID != "r-b" || in.LandedAt == nil || in.Attempts != 1 {
		t.Fatalf("landed intent %+v", in)
	}
}

// A holder that acquires again (a restarted process keeping its name)
// fences off its own older lease: only the token tells them apart.
func testSameHolderOlderToken(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	a := mustDraft(t, h, byHand("chat", "a"))
	b := mustDraft(t, h, byHand("chat", "b"))
	old := mustAcquire(t, h, "chat", "w1")
	attempt := mustBegin(t, h, old, a.ID)
	cur := mustAcquire(t, h, "chat", "w1")
	staleEverywhere(t, h, old, b.ID, a.ID, attempt)
	_, err := h.Store.Renew(ctx, old, ttl)
	mustErr(t, "renew the older lease", err, tidemark.ErrStaleClaim)
	// Releasing the older lease does not free the lane.
	if err := h.Store.Release(ctx, old); err != nil {
		t.Fatalf("release the older lease: %v", err)
	}
	if err := h.Store.CheckLease(ctx, cur); err != nil {
		t.Fatalf("releasing the older lease freed the current one: %v", err)
	}
	_, err = h.Store.Acquire(ctx, "chat", "w2", ttl)
	mustErr(t, "acquire after an older lease's release", err, tidemark.ErrClaimHeld)
}

func testExpiredLease(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	a := mustDraft(t, h, byHand("chat", "a"))
	b := mustDraft(t, h, byHand("chat", "b"))
	l := mustAcquire(t, h, "chat", "w1")
	attempt := mustBegin(t, h, l, a.ID)
	// No one took the lane, but the lease ran out: it fences nothing.
	h.Clock.Advance(ttl)
	staleEverywhere(t, h, l, b.ID, a.ID, attempt)
	_, err := h.Store.Renew(ctx, l, ttl)
	mustErr(t, "renew an expired lease", err, tidemark.ErrStaleClaim)
}

func testFinishOutcomes(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	l := mustAcquire(t, h, "chat", "w1")
	for _, tc := range []struct {
		outcome outbox.Outcome
		want    outbox.State
		doubt   bool
	}{
		{outbox.OutcomeLanded, outbox.StateLanded, false},
		{outbox.OutcomeNotLanded, outbox.StatePending, false},
		{outbox.OutcomeDeferred, outbox.StatePending, false},
		{outbox.OutcomeRefused, outbox.StatePending, false},
		{outbox.OutcomeUnexecutable, outbox.StateUnexecutable, false},
		{outbox.OutcomeUnknown, outbox.StateUnresolved, true},
	} {
		in := mustDraft(t, h, byHand("chat", string(tc.outcome)))
		a := mustBegin(t, h, l, in.ID)
		sending := mustState(t, h, in.ID, outbox.StateSending)
		if sending.Attempts != 1 || sending.LastAttemptAt == nil {
			t.Fatalf("begun intent %+v", sending)
		}
		mustInDoubt(t, h, l, true) // an attempt is open
		mustFinish(t, h, l, a, outbox.Result{Outcome: tc.outcome, RemoteID: "r-" + in.ID, Error: "because"})
		got := mustState(t, h, in.ID, tc.want)
		if (got.LandedAt != nil) != (tc.want == outbox.StateLanded) {
			t.Fatalf("%s: landed at %v", tc.outcome, got.LandedAt)
		}
		mustInDoubt(t, h, l, tc.doubt)
		if got := mustLane(t, h, "chat"); got.NeedsReconcile != (tc.outcome == outbox.OutcomeUnknown) {
			t.Fatalf("%s: lane needs reconcile = %v", tc.outcome, got.NeedsReconcile)
		}
		// An attempt is finished once.
		mustErr(t, "finish twice", h.Store.Finish(ctx, l, a, landed(h, "again")), tidemark.ErrStaleClaim)
		mustState(t, h, in.ID, tc.want)
		if tc.want == outbox.StateUnexecutable {
			checks, err := h.Store.Checks(ctx, in.ID)
			if err != nil || len(checks) != 1 || checks[0].Verdict != "unexecutable" {
				t.Fatalf("checks of the unexecutable intent %+v %v", checks, err)
			}
			// Its recheck is due later, not now.
			h.Clock.Advance(time.Hour)
			mustInDoubt(t, h, l, true)
			l = mustAcquire(t, h, "chat", "w1")
			if _, err := h.Retire(ctx, in.ID, "test", "done"); err != nil {
				t.Fatal(err)
			}
			mustInDoubt(t, h, l, false)
		}
	}
	// Begin takes only a pending intent of its own lane.
	pendingOne, _, _ := h.Store.NextPending(ctx, l) // the not-landed one is pending again
	if pendingOne.ID == "" {
		t.Fatal("no pending intent left")
	}
	h.AddLane(t, "other", 0)
	lo := mustAcquire(t, h, "other", "w1")
	if _, err := h.Store.Begin(ctx, lo, outbox.NewAttempt{IntentID: pendingOne.ID, Bound: time.Minute}); !errors.Is(err, tidemark.ErrConflict) {
		t.Fatalf("begin another lane's intent: %v, want ErrConflict", err)
	}
	mustState(t, h, pendingOne.ID, outbox.StatePending)
}

func testOneInFlight(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	a := mustDraft(t, h, byHand("chat", "a"))
	b := mustDraft(t, h, byHand("chat", "b"))
	l := mustAcquire(t, h, "chat", "w1")
	attempt := mustBegin(t, h, l, a.ID)
	_, err := h.Store.Begin(ctx, l, outbox.NewAttempt{IntentID: b.ID, Bound: time.Minute})
	mustErr(t, "begin a second attempt while one is open", err, tidemark.ErrConflict)
	mustState(t, h, b.ID, outbox.StatePending)
	_, err = h.Store.Begin(ctx, l, outbox.NewAttempt{IntentID: a.ID, Bound: time.Minute})
	mustErr(t, "begin an intent already sending", err, tidemark.ErrConflict)
	mustFinish(t, h, l, attempt, outbox.Result{Outcome: outbox.OutcomeNotLanded})
	mustFinish(t, h, l, mustBegin(t, h, l, b.ID), landed(h, "r-b"))
}

func testPacingGate(t *testing.T, h Harness) {
	const gap = 10 * time.Second
	h.AddLane(t, "chat", gap)
	var ins []outbox.Intent
	for _, body := range []string{"a", "b", "c", "d"} {
		ins = append(ins, mustDraft(t, h, byHand("chat", body)))
	}
	// Before its first send the gate is open: no next send time at all.
	if lane := mustLane(t, h, "chat"); lane.LastSendAt != nil || lane.NextSendAt != nil {
		t.Fatalf("gate before any send: last %v next %v, want neither", lane.LastSendAt, lane.NextSendAt)
	}
	l := mustAcquire(t, h, "chat", "w1")
	sent := h.Clock.Now()
	mustFinish(t, h, l, mustBegin(t, h, l, ins[0].ID), landed(h, "r-a"))
	lane := mustLane(t, h, "chat")
	if lane.LastSendAt == nil || !lane.LastSendAt.Equal(sent) || lane.NextSendAt == nil || !lane.NextSendAt.Equal(sent.Add(gap)) {
		t.Fatalf("gate after a send: last %v next %v, want %v and %v", lane.LastSendAt, lane.NextSendAt, sent, sent.Add(gap))
	}
	h.Clock.Advance(gap - time.Second)
	_, err := h.Store.Begin(ctx, l, outbox.NewAttempt{IntentID: ins[1].ID, Bound: time.Minute})
	var closed *outbox.GateClosedError
	if !errors.As(err, &closed) || !errors.Is(err, outbox.ErrGateClosed) || !closed.Until.Equal(sent.Add(gap)) {
		t.Fatalf("begin before the gap: %v, want the gate closed until %v", err, sent.Add(gap))
	}
	mustState(t, h, ins[1].ID, outbox.StatePending)
	if in := h.Intent(t, ins[1].ID); in.Attempts != 0 {
		t.Fatalf("a refused begin counted an attempt: %+v", in)
	}
	mustInDoubt(t, h, l, false)
	// A try that never reached the provider does not move the gate.
	h.Clock.Advance(time.Second)
	mustFinish(t, h, l, mustBegin(t, h, l, ins[1].ID), outbox.Result{Outcome: outbox.OutcomeNotLanded, Error: "cancelled before sending"})
	if got := mustLane(t, h, "chat"); !got.NextSendAt.Equal(sent.Add(gap)) || !got.LastSendAt.Equal(sent) {
		t.Fatalf("an unsent attempt moved the gate: last %v next %v", got.LastSendAt, got.NextSendAt)
	}
	// Retry-After pushes the gate past the gap.
	sent2 := h.Clock.Now()
	mustFinish(t, h, l, mustBegin(t, h, l, ins[1].ID), outbox.Result{Outcome: outbox.OutcomeDeferred, SentAt: sent2, RetryAfter: time.Minute})
	if got := mustLane(t, h, "chat"); !got.NextSendAt.Equal(sent2.Add(time.Minute)) || !got.LastSendAt.Equal(sent2) {
		t.Fatalf("gate after Retry-After: last %v next %v, want %v and %v", got.LastSendAt, got.NextSendAt, sent2, sent2.Add(time.Minute))
	}
	h.Clock.Advance(gap)
	_, err = h.Store.Begin(ctx, l, outbox.NewAttempt{IntentID: ins[1].ID, Bound: time.Minute})
	mustErr(t, "begin before Retry-After", err, outbox.ErrGateClosed)
	h.Clock.Advance(time.Minute - gap)
	l = mustAcquire(t, h, "chat", "w1")
	mustFinish(t, h, l, mustBegin(t, h, l, ins[1].ID), landed(h, "r-b"))
}

func testApply(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	a := mustDraft(t, h, byHand("chat", "a"))
	b := mustDraft(t, h, byHand("chat", "b"))
	c := mustDraft(t, h, byHand("chat", "c"))
	l := mustAcquire(t, h, "chat", "w1")
	mustFinish(t, h, l, mustBegin(t, h, l, a.ID), outbox.Result{Outcome: outbox.OutcomeUnknown, Error: "timeout"})
	mustBegin(t, h, l, b.ID) // the process dies here
	mustInDoubt(t, h, l, true)
	if !mustLane(t, h, "chat").NeedsReconcile {
		t.Fatal("an unknown outcome did not mark the lane for reconciliation")
	}

	unbalanced := &outbox.Plan{Landed: []string{a.ID}, Accounting: outbox.Accounting{Total: 3, Landed: 1}}
	mustErr(t, "apply an unbalanced plan", h.Store.Apply(ctx, l, outbox.Reconciliation{Plan: unbalanced}), outbox.ErrUnbalanced)
	mustErr(t, "apply no plan", h.Store.Apply(ctx, l, outbox.Reconciliation{}), outbox.ErrUnbalanced)
	mustState(t, h, a.ID, outbox.StateUnresolved)
	mustState(t, h, b.ID, outbox.StateSending)

	plan := &outbox.Plan{
		Landed:     []string{a.ID},
		LandedAs:   map[string]outbox.OwnWrite{a.ID: {RemoteID: "r-a"}},
		Replay:     []string{b.ID, c.ID},
		Accounting: outbox.Accounting{Total: 3, Landed: 1, Replay: 2, Balanced: true},
	}
	if err := h.Store.Apply(ctx, l, outbox.Reconciliation{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	if in := mustState(t, h, a.ID, outbox.StateLanded); in.RemoteID != "r-a" || in.LandedAt == nil {
		t.Fatalf("reconciled intent %+v", in)
	}
	mustState(t, h, b.ID, outbox.StatePending)
	mustState(t, h, c.ID, outbox.StatePending)
	mustInDoubt(t, h, l, false)
	if mustLane(t, h, "chat").NeedsReconcile {
		t.Fatal("reconciliation left the lane marked for reconciliation")
	}
	if next, ok, err := h.Store.NextPending(ctx, l); err != nil || !ok || next.ID != b.ID {
		t.Fatalf("next pending after reconciliation %+v %v %v, want %s", next, ok, err, b.ID)
	}
	// The open attempt was closed, so the lane can write again.
	mustFinish(t, h, l, mustBegin(t, h, l, b.ID), landed(h, "r-b"))
}

func testRetireRevive(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	a := mustDraft(t, h, byHand("chat", "a"))
	b := mustDraft(t, h, byHand("chat", "b"))
	l := mustAcquire(t, h, "chat", "w1")
	r, err := h.Retire(ctx, a.ID, "alice", "not wanted")
	if err != nil || r.State != outbox.StateRetired {
		t.Fatalf("retire a pending intent: %+v %v", r, err)
	}
	if next, ok, err := h.Store.NextPending(ctx, l); err != nil || !ok || next.ID != b.ID {
		t.Fatalf("next pending %+v %v %v, want %s past the retired one", next, ok, err, b.ID)
	}
	if all, err := h.Store.Intents(ctx, l); err != nil || len(all) != 1 || all[0].ID != b.ID {
		t.Fatalf("intents %+v %v, want only %s", all, err, b.ID)
	}
	_, err = h.Store.Begin(ctx, l, outbox.NewAttempt{IntentID: a.ID, Bound: time.Minute})
	mustErr(t, "begin a retired intent", err, tidemark.ErrConflict)
	_, err = h.Retire(ctx, a.ID, "alice", "again")
	mustErr(t, "retire twice", err, tidemark.ErrConflict)
	if v, err := h.Revive(ctx, a.ID, "alice", "wanted after all"); err != nil || v.State != outbox.StatePending {
		t.Fatalf("revive: %+v %v", v, err)
	}
	_, err = h.Revive(ctx, a.ID, "alice", "again")
	mustErr(t, "revive a pending intent", err, tidemark.ErrConflict)

	// One retired while unresolved comes back unresolved: a fresh answer
	// decides before it is sent again.
	mustFinish(t, h, l, mustBegin(t, h, l, a.ID), outbox.Result{Outcome: outbox.OutcomeUnknown})
	if _, err := h.Retire(ctx, a.ID, "alice", "give up"); err != nil {
		t.Fatal(err)
	}
	if v, err := h.Revive(ctx, a.ID, "alice", "try again"); err != nil || v.State != outbox.StateUnresolved {
		t.Fatalf("revive a once-unresolved intent: %+v %v, want unresolved", v, err)
	}
	// A landed intent is never retired.
	mustFinish(t, h, l, mustBegin(t, h, l, b.ID), landed(h, "r-b"))
	_, err = h.Retire(ctx, b.ID, "alice", "oops")
	mustErr(t, "retire a landed intent", err, tidemark.ErrConflict)
	mustState(t, h, b.ID, outbox.StateLanded)
	_, err = h.Retire(ctx, "no-such-intent", "alice", "x")
	mustErr(t, "retire a missing intent", err, tidemark.ErrNotFound)
}

func testCollisionRevive(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	first := mustDraft(t, h, outbox.Draft{Lane: "chat", Target: "room-1", Body: "same", ChannelID: "ch1", PageID: "p1", SummaryID: "s1"})
	twin := mustDraft(t, h, outbox.Draft{Lane: "chat", Target: "room-1", Body: "same", ChannelID: "ch1", PageID: "p2", SummaryID: "s2"})
	if twin.State != outbox.StateCollision {
		t.Fatalf("twin %+v, want collision", twin)
	}
	_, err := h.Revive(ctx, twin.ID, "alice", "send it")
	mustErr(t, "revive a collision while its twin lives", err, tidemark.ErrConflict)
	mustState(t, h, twin.ID, outbox.StateCollision)
	// Retired and revived while the twin lives, it goes back to collision.
	if _, err := h.Retire(ctx, twin.ID, "alice", "later"); err != nil {
		t.Fatal(err)
	}
	if v, err := h.Revive(ctx, twin.ID, "alice", "back"); err != nil || v.State != outbox.StateCollision {
		t.Fatalf("revive a retired collision with a live twin: %+v %v, want collision", v, err)
	}
	// With the first retired, the twin may go.
	if _, err := h.Retire(ctx, first.ID, "alice", "the other one"); err != nil {
		t.Fatal(err)
	}
	if v, err := h.Revive(ctx, twin.ID, "alice", "now"); err != nil || v.State != outbox.StatePending {
		t.Fatalf("revive a collision without a live twin: %+v %v, want pending", v, err)
	}
	l := mustAcquire(t, h, "chat", "w1")
	mustFinish(t, h, l, mustBegin(t, h, l, twin.ID), landed(h, "r-twin"))
}

// On a lane whose provider joins on a fingerprint of the body (Slack:
// entities unescaped and white space collapsed), two bodies with one
// fingerprint are one identity, as two equal bodies are: refused by hand,
// kept in collision from a publication, and a colliding intent is not
// revived while its twin lives. A lane that joins on the exact body tells
// them apart.
func testDraftFingerprint(t *testing.T, h Harness) {
	h.AddLaneOf(t, "slack", "slack")
	h.AddLaneOf(t, "hooks", "webhook")
	a := mustDraft(t, h, byHand("slack", "Deploy  finished"))
	_, err := h.Store.Draft(ctx, byHand("slack", "Deploy finished\n"))
	mustErr(t, "draft by hand a body with the same fingerprint", err, tidemark.ErrConflict)
	_, err = h.Store.Draft(ctx, byHand("slack", "Deploy finished &amp;"))
	if err != nil {
		t.Fatalf("another fingerprint: %v", err)
	}
	mustDraft(t, h, byHand("hooks", "Deploy  finished"))
	mustDraft(t, h, byHand("hooks", "Deploy finished"))

	from := func(page, body string) outbox.Draft {
		return outbox.Draft{Lane: "slack", Target: "room-1", Body: body, SourceID: "src", ChannelID: "ch1", PageID: page, SummaryID: "s-" + page}
	}
	c := mustDraft(t, h, from("page-2", "Deploy\tfinished"))
	if c.State != outbox.StateCollision || c.IdempotencyKey == a.IdempotencyKey {
		t.Fatalf("a publication's draft with the same fingerprint: %+v, want collision", c)
	}
	_, err = h.Revive(ctx, c.ID, "alice", "send it")
	mustErr(t, "revive a collision while its fingerprint's twin lives", err, tidemark.ErrConflict)
	if _, err := h.Retire(ctx, a.ID, "alice", "superseded"); err != nil {
		t.Fatal(err)
	}
	if v, err := h.Revive(ctx, c.ID, "alice", "send it"); err != nil || v.State != outbox.StatePending {
		t.Fatalf("revive with its twin retired: %+v %v, want pending", v, err)
	}
}

// A read the lane needs, refused by the provider for the lane's reason, is
// recorded on the lane (fenced by the token) and stands, the lane still in
// doubt, until a reconciliation goes through.
func testReadRefusal(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	a := mustDraft(t, h, byHand("chat", "a"))
	old := mustAcquire(t, h, "chat", "w1")
	mustFinish(t, h, old, mustBegin(t, h, old, a.ID), outbox.Result{Outcome: outbox.OutcomeUnknown, Error: "timeout"})
	h.Clock.Advance(ttl + time.Second)
	l := mustAcquire(t, h, "chat", "w2")
	const why = "conversations.history refused: missing_scope (needs channels:history)"
	mustErr(t, "a read refusal under a stale token", h.Store.RefuseRead(ctx, old, why), tidemark.ErrStaleClaim)
	if got := mustLane(t, h, "chat").ReadRefusal; got != "" {
		t.Fatalf("a stale token recorded a read refusal: %q", got)
	}
	if err := h.Store.RefuseRead(ctx, l, why); err != nil {
		t.Fatal(err)
	}
	lane := mustLane(t, h, "chat")
	if lane.ReadRefusal != why || !lane.NeedsReconcile {
		t.Fatalf("after a read refusal: refusal %q, needs reconcile %v; want %q, true", lane.ReadRefusal, lane.NeedsReconcile, why)
	}
	mustInDoubt(t, h, l, true)
	mustState(t, h, a.ID, outbox.StateUnresolved)
	plan := &outbox.Plan{Unresolved: []string{a.ID}, Accounting: outbox.Accounting{Total: 1, Unresolved: 1, Balanced: true}}
	if err := h.Store.Apply(ctx, l, outbox.Reconciliation{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	if got := mustLane(t, h, "chat").ReadRefusal; got != "" {
		t.Fatalf("a reconciliation that went through left the read refusal %q", got)
	}
}

// An unresolved intent carries the reason the reconciliation gave for it
// (one that nothing can decide says so); without one, that no fresh answer
// decided it yet.
func testUnresolvedReason(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	a := mustDraft(t, h, byHand("chat", "a"))
	b := mustDraft(t, h, byHand("chat", "b"))
	l := mustAcquire(t, h, "chat", "w1")
	mustFinish(t, h, l, mustBegin(t, h, l, a.ID), outbox.Result{Outcome: outbox.OutcomeUnknown, Error: "timeout"})
	h.Clock.Advance(time.Second)
	mustFinish(t, h, l, mustBegin(t, h, l, b.ID), outbox.Result{Outcome: outbox.OutcomeUnknown, Error: "timeout"})
	const why = "cannot be decided: the lane is at most once"
	plan := &outbox.Plan{Unresolved: []string{a.ID, b.ID}, Accounting: outbox.Accounting{Total: 2, Unresolved: 2, Balanced: true}}
	if err := h.Store.Apply(ctx, l, outbox.Reconciliation{Plan: plan, Reasons: map[string]string{a.ID: why}}); err != nil {
		t.Fatal(err)
	}
	if got := mustState(t, h, a.ID, outbox.StateUnresolved).StateReason; got != why {
		t.Errorf("a's reason %q, want %q", got, why)
	}
	if got := mustState(t, h, b.ID, outbox.StateUnresolved).StateReason; got != "no fresh answer yet" {
		t.Errorf("b's reason %q, want the default", got)
	}
}

// A reconciliation keeps, on its lane, how many own writes matched no
// intent and how many repeated a landed one, with their remote ids: a
// duplicate once made is not silent. The next one replaces it.
func testLastReconciliation(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	a := mustDraft(t, h, byHand("chat", "a"))
	l := mustAcquire(t, h, "chat", "w1")
	if got := mustLane(t, h, "chat").LastReconciliation; got != nil {
		t.Fatalf("a lane never reconciled has a last reconciliation: %+v", got)
	}
	mustFinish(t, h, l, mustBegin(t, h, l, a.ID), outbox.Result{Outcome: outbox.OutcomeUnknown, Error: "timeout"})
	plan := &outbox.Plan{Landed: []string{a.ID}, LandedAs: map[string]outbox.OwnWrite{a.ID: {RemoteID: "r-a"}},
		UnmatchedOwnWrites: []string{"r-x", "r-y"}, DuplicateOwnWrites: []string{"r-a2"},
		Accounting: outbox.Accounting{Total: 1, Landed: 1, Balanced: true}}
	at := h.Clock.Now()
	if err := h.Store.Apply(ctx, l, outbox.Reconciliation{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	got := mustLane(t, h, "chat").LastReconciliation
	if got == nil || !got.At.Equal(at) || got.UnmatchedOwnWrites != 2 || got.DuplicateOwnWrites != 1 ||
		strings.Join(got.RemoteIDs, " ") != "r-a2 r-x r-y" {
		t.Fatalf("last reconciliation %+v; want at %v, 2 unmatched, 1 duplicate, r-a2 r-x r-y", got, at)
	}
	h.Clock.Advance(time.Second)
	clean := &outbox.Plan{Landed: []string{a.ID}, LandedAs: map[string]outbox.OwnWrite{a.ID: {RemoteID: "r-a"}},
		Accounting: outbox.Accounting{Total: 1, Landed: 1, Balanced: true}}
	if err := h.Store.Apply(ctx, l, outbox.Reconciliation{Plan: clean}); err != nil {
		t.Fatal(err)
	}
	if got := mustLane(t, h, "chat").LastReconciliation; got == nil || got.UnmatchedOwnWrites != 0 || got.DuplicateOwnWrites != 0 || len(got.RemoteIDs) != 0 {
		t.Fatalf("after a clean reconciliation: %+v", got)
	}
}

// A read stopped part-way is kept per lane, whole, under the current
// token only; a second replaces the first; DropRead and a recorded
// reconciliation discard it; another lane's is its own.
func testKeptRead(t *testing.T, h Harness) {
	h.AddLane(t, "chat", 0)
	h.AddLane(t, "other", 0)
	a := mustDraft(t, h, byHand("chat", "a"))
	old := mustAcquire(t, h, "chat", "w1")
	mustFinish(t, h, old, mustBegin(t, h, old, a.ID), outbox.Result{Outcome: outbox.OutcomeUnknown, Error: "timeout"})
	h.Clock.Advance(ttl + time.Second)
	l := mustAcquire(t, h, "chat", "w2")
	if _, ok, err := h.Store.KeptRead(ctx, l); err != nil || ok {
		t.Fatalf("a lane that never kept a read: ok %v, %v", ok, err)
	}
	at := h.Clock.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	horizon := at.Add(-time.Hour)
	p := outbox.ReadProgress{Key: "k1", Cursor: "page-3", Listing: outbox.Listing{
		Writes: []outbox.OwnWrite{
			{RemoteID: "r1", CreatedAt: at, Target: "room-1", Parent: "p", HasParent: true, BodySHA256: strings.Repeat("ab", 32)},
			{RemoteID: "r2", CreatedAt: at.Add(-time.Second), Target: "room-2", HasParent: false, BodySHA256: strings.Repeat("cd", 32)},
		},
		ListedAt: &at, Pages: 2, Supported: true, Evidence: "listing page 0: fresh", Horizon: &horizon,
	}}
	mustErr(t, "keep a read under a stale token", h.Store.KeepRead(ctx, old, p), tidemark.ErrStaleClaim)
	if _, ok, _ := h.Store.KeptRead(ctx, l); ok {
		t.Fatal("a stale token kept a read")
	}
	if err := h.Store.KeepRead(ctx, l, p); err != nil {
		t.Fatal(err)
	}
	got, ok, err := h.Store.KeptRead(ctx, l)
	if err != nil || !ok || got.Key != p.Key || got.Cursor != p.Cursor || len(got.Listing.Writes) != 2 ||
		got.Listing.Writes[0] != p.Listing.Writes[0] || got.Listing.Writes[1] != p.Listing.Writes[1] ||
		got.Listing.ListedAt == nil || !got.Listing.ListedAt.Equal(at) || got.Listing.Horizon == nil || !got.Listing.Horizon.Equal(horizon) ||
		got.Listing.Pages != 2 || !got.Listing.Supported || got.Listing.Evidence != p.Listing.Evidence {
		t.Fatalf("kept %+v (ok %v, %v), want %+v", got, ok, err, p)
	}
	ol := mustAcquire(t, h, "other", "w3")
	if _, ok, _ := h.Store.KeptRead(ctx, ol); ok {
		t.Fatal("another lane sees chat's kept read")
	}
	p2 := outbox.ReadProgress{Key: "k2", Cursor: "page-5", Listing: outbox.Listing{Pages: 4, Supported: true}}
	if err := h.Store.KeepRead(ctx, l, p2); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := h.Store.KeptRead(ctx, l); !ok || got.Key != "k2" || got.Cursor != "page-5" || len(got.Listing.Writes) != 0 || got.Listing.ListedAt != nil {
		t.Fatalf("after a second keep: %+v; want it in place of the first", got)
	}
	mustErr(t, "drop a read under a stale token", h.Store.DropRead(ctx, old), tidemark.ErrStaleClaim)
	if err := h.Store.DropRead(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := h.Store.KeptRead(ctx, l); ok {
		t.Fatal("a dropped read is still kept")
	}
	if err := h.Store.DropRead(ctx, l); err != nil {
		t.Fatalf("dropping a read none kept: %v", err)
	}
	if err := h.Store.KeepRead(ctx, l, p); err != nil {
		t.Fatal(err)
	}
	plan := &outbox.Plan{Unresolved: []string{a.ID}, Accounting: outbox.Accounting{Total: 1, Unresolved: 1, Balanced: true}}
	if err := h.Store.Apply(ctx, l, outbox.Reconciliation{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := h.Store.KeptRead(ctx, l); ok {
		t.Fatal("a recorded reconciliation left the read it stopped kept")
	}
}

// A lane's failing delivery steps are kept with it, so every process (lane
// show, the console, /metrics) sees them: since when, how many in a row,
// and the latest; a step that goes through clears them.
func testLaneFailures(t *testing.T, h Harness) {
	h.AddLane(t, "hooks", 0)
	if l := mustLane(t, h, "hooks"); l.Failing != nil {
		t.Fatalf("a new lane is failing: %+v", l.Failing)
	}
	first := h.Clock.Now()
	if err := h.Store.RecordLaneFailure(ctx, "hooks", first, "count before: connection refused"); err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(time.Minute)
	if err := h.Store.RecordLaneFailure(ctx, "hooks", h.Clock.Now(), "count before: connection reset"); err != nil {
		t.Fatal(err)
	}
	f := mustLane(t, h, "hooks").Failing
	if f == nil || !f.Since.Equal(first) || !f.At.Equal(h.Clock.Now()) || f.Failures != 2 || f.Last != "count before: connection reset" {
		t.Fatalf("failing after two failures: %+v, want since %s, 2 in a row, the latest", f, first)
	}
	if err := h.Store.ClearLaneFailure(ctx, "hooks"); err != nil {
		t.Fatal(err)
	}
	if l := mustLane(t, h, "hooks"); l.Failing != nil {
		t.Fatalf("failing after a step went through: %+v", l.Failing)
	}
	if err := h.Store.ClearLaneFailure(ctx, "hooks"); err != nil {
		t.Fatalf("clearing a lane not failing: %v", err)
	}
	mustErr(t, "a failure of no lane", h.Store.RecordLaneFailure(ctx, "nope", first, "x"), tidemark.ErrNotFound)
}
