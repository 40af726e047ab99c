// Package ingesttest is the conformance suite every ingest.Store passes, in
// the manner of testing/fstest: an implementation's tests call Run with a
// way to open a fresh store. It holds the store's promises: one active run
// per source, re-entry by the same holder, lost leases, fenced settlement
// that moves the cursor with its data or not at all, retry budgets and
// terminal windows, skips, pauses, and due claims under concurrency.
package ingesttest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/ingest"
)

// Harness is a fresh store and the fake clock it runs on.
type Harness struct {
	Store ingest.Store
	Clock *clock.Fake
	// AuditRows counts the audit rows of a run.
	AuditRows func(t *testing.T, runID string) int
	// ActiveRuns counts the source's runs with status active.
	ActiveRuns func(t *testing.T, sourceID string) int
}

const ttl = time.Minute

// Key is the key function (ingest.KeyFunc) the stores under test are
// opened with: the kind, the location and the config (values trimmed, an
// empty one unset), every key of the config counting.
func Key(ns ingest.NewSource) string {
	parts := []string{ns.Kind, ns.Location}
	for _, k := range slices.Sorted(maps.Keys(ns.Config)) {
		if v := strings.TrimSpace(ns.Config[k]); v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Run runs the ingest store conformance suite. open returns a fresh, empty
// store for each subtest, keying sources with Key.
func Run(t *testing.T, open func(t *testing.T) Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"AddSourceDuplicateName", testAddSourceDuplicate},
		{"AddSourceRefusesAKeyTaken", testAddSourceKeyTaken},
		{"ConcurrentAddsOfOneKeyOneWins", testConcurrentAddKey},
		{"AddSourceRefusesBadInput", testAddSourceInvalid},
		{"ClaimAdmitsOneHolder", testClaimAdmitsOne},
		{"ReentrySameHolder", testReentry},
		{"ExpiredLeaseMarksLost", testExpiredLeaseLost},
		{"StaleTokenChangesNothing", testStaleToken},
		{"OlderCursorVersionChangesNothing", testOlderCursorVersion},
		{"SettleAdvancesCursorAtomically", testSettle},
		{"SettleRecordsTheFetchNotes", testSettleNotes},
		{"ReReadIsEmptyChangedIsRevision", testRevisions},
		{"FailureLeavesCursor", testFailureLeavesCursor},
		{"ShortReadRefused", testShortRead},
		{"FailureRecordsDeclaredAndAdmitted", testFailureCounts},
		{"HeartbeatExtendsLease", testHeartbeat},
		{"BudgetExhaustionTerminal", testBudgetTerminal},
		{"OutageStartRecordedAndCleared", testFailingSince},
		{"InterruptedRunLeavesTheLastOutcome", testInterrupted},
		{"SameKeyTwiceInOneFetch", testSameKeyTwice},
		{"LargeSettlementsFreezeEachItemOnce", testLargeSettlements},
		{"BatchedSettlementFencesEachRun", testSettleMany},
		{"LostFinalWorkerTerminal", testLostFinalTerminal},
		{"LostRunDuringOutageLeavesPolicyToDecide", testLostDuringOutage},
		{"SkipIsAuditedCursorMove", testSkip},
		{"PauseRefusesClaims", testPause},
		{"ClaimDueRespectsDueAndHeld", testClaimDue},
		{"ClaimDueReentersOwnClaims", testClaimDueReenters},
		{"ConcurrentClaimersOneWins", testConcurrentClaim},
		{"ConcurrentClaimDueNoDoubleClaim", testConcurrentClaimDue},
		{"UnservedPassedOverUntilItExpires", testUnservedPassedOver},
		{"UnservedClearedWhenServed", testUnservedCleared},
		{"UnservedClearedInABatch", testUnservedClearedInBatch},
		{"LiveUnservedListsHoldsNotOver", testLiveUnserved},
		{"SetIsAuditedAndClearsUnserved", testSet},
		{"SetConfigKeepsTheCursor", testSetConfig},
		{"SetConfigKeysTheSourceAnew", testSetConfigRekeys},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var ctx = context.Background()

func mustAdd(t *testing.T, h Harness, name string, budget int) tidemark.Source {
	t.Helper()
	src, err := h.Store.AddSource(ctx, ingest.NewSource{Name: name, Kind: "test", Location: "mem://" + name, Interval: time.Minute, RetryBudget: budget})
	if err != nil {
		t.Fatalf("add source %s: %v", name, err)
	}
	return src
}

func mustClaim(t *testing.T, h Harness, src tidemark.Source, holder string) tidemark.Claim {
	t.Helper()
	c, err := h.Store.Claim(ctx, src.ID, holder, ttl)
	if err != nil {
		t.Fatalf("claim %s by %s: %v", src.Name, holder, err)
	}
	return c
}

func mustSource(t *testing.T, h Harness, ref string) tidemark.Source {
	t.Helper()
	s, err := h.Store.Source(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func item(key, evidence string) tidemark.Item {
	return tidemark.Item{Key: key, Title: "item " + key, Evidence: []byte(evidence)}
}

func settle(t *testing.T, h Harness, c tidemark.Claim, cursor string, items ...tidemark.Item) ingest.SettleReport {
	t.Helper()
	rep, err := h.Store.Settle(ctx, c, ingest.Settlement{Items: items, Cursor: cursor, NextDueAt: h.Clock.Now()})
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	return rep
}

func failure(h Harness, o tidemark.Outcome) ingest.Failure {
	return ingest.Failure{Outcome: o, Reason: "test " + string(o), NextDueAt: h.Clock.Now()}
}

func events(t *testing.T, h Harness, src tidemark.Source) []tidemark.Event {
	t.Helper()
	evs, err := h.Store.Events(ctx, ingest.EventFilter{SourceID: src.ID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func wantErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

// assertUnmoved checks that a source's cursor value and version are exactly
// as before.
func assertUnmoved(t *testing.T, h Harness, before tidemark.Source) {
	t.Helper()
	after := mustSource(t, h, before.ID)
	if after.Cursor != before.Cursor || after.CursorVersion != before.CursorVersion {
		t.Fatalf("cursor moved: %q v%d → %q v%d", before.Cursor, before.CursorVersion, after.Cursor, after.CursorVersion)
	}
}

func testAddSourceDuplicate(t *testing.T, h Harness) {
	mustAdd(t, h, "a", 3)
	_, err := h.Store.AddSource(ctx, ingest.NewSource{Name: "a", Kind: "test", Location: "x", Interval: time.Minute, RetryBudget: 3})
	wantErr(t, err, tidemark.ErrConflict, "second source named a")
	if srcs, err := h.Store.Sources(ctx); err != nil || len(srcs) != 1 {
		t.Fatalf("%d sources (err %v), want 1", len(srcs), err)
	}
}

// A source's duplicate key (NewSource.Key) is one source's at a time:
// a second source with it is refused, naming the first, and changes
// nothing; sources without a key never conflict; a removed source's key
// is free again.
func testAddSourceKeyTaken(t *testing.T, h Harness) {
	add := func(name, key string) (tidemark.Source, error) {
		return h.Store.AddSource(ctx, ingest.NewSource{Name: name, Kind: "test", Location: "mem://x", Key: key, Interval: time.Minute, RetryBudget: 3})
	}
	a, err := add("a", "k1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = add("b", "k1")
	wantErr(t, err, tidemark.ErrConflict, "a second source of key k1")
	var dup *ingest.DuplicateError
	if !errors.As(err, &dup) || dup.Source.Name != "a" || dup.Source.ID != a.ID {
		t.Fatalf("the refusal %v does not name source a", err)
	}
	if _, err := add("a", "k2"); !errors.Is(err, tidemark.ErrConflict) || errors.As(err, &dup) {
		t.Fatalf("a second source named a: %v, want a conflict of names, not of keys", err)
	}
	for _, name := range []string{"c", "d"} {
		if _, err := add(name, ""); err != nil {
			t.Fatalf("a source without a key: %v", err)
		}
	}
	if srcs, err := h.Store.Sources(ctx); err != nil || len(srcs) != 3 {
		t.Fatalf("%d sources (err %v), want a, c and d", len(srcs), err)
	}
	if _, err := h.Store.RemoveSource(ctx, "a", "ops", true); err != nil {
		t.Fatal(err)
	}
	if _, err := add("b", "k1"); err != nil {
		t.Fatalf("k1 after its source was removed: %v", err)
	}
}

// Concurrent adds of sources sharing a key: exactly one is added, every
// other is refused as a duplicate of it.
func testConcurrentAddKey(t *testing.T, h Harness) {
	const n = 8
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		wins  []string
		other []error
		start = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			src, err := h.Store.AddSource(ctx, ingest.NewSource{Name: fmt.Sprintf("s%d", i), Kind: "test", Location: "mem://same",
				Key: "same", Interval: time.Minute, RetryBudget: 3})
			mu.Lock()
			defer mu.Unlock()
			var dup *ingest.DuplicateError
			switch {
			case err == nil:
				wins = append(wins, src.Name)
			case !errors.Is(err, tidemark.ErrConflict) || !errors.As(err, &dup):
				other = append(other, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(other) > 0 {
		t.Fatalf("unexpected errors: %v", other)
	}
	if len(wins) != 1 {
		t.Fatalf("%d sources of one key were added (%v), want exactly 1", len(wins), wins)
	}
	if srcs, err := h.Store.Sources(ctx); err != nil || len(srcs) != 1 {
		t.Fatalf("%d sources (err %v), want 1", len(srcs), err)
	}
}

func testClaimAdmitsOne(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	c := mustClaim(t, h, src, "w1")
	if c.Token == "" || c.RunID == "" || c.Attempt != 1 || c.CursorVersion != 0 {
		t.Fatalf("claim = %+v", c)
	}
	_, err := h.Store.Claim(ctx, src.ID, "w2", ttl)
	wantErr(t, err, tidemark.ErrClaimHeld, "second holder")
	if n := h.ActiveRuns(t, src.ID); n != 1 {
		t.Fatalf("%d active runs, want 1", n)
	}
	s := mustSource(t, h, src.ID)
	if s.ClaimHolder != "w1" || s.ClaimRunID != c.RunID || s.LeaseExpiresAt == nil || !s.LeaseExpiresAt.Equal(h.Clock.Now().Add(ttl)) {
		t.Fatalf("source claim fields: holder %q run %q lease %v", s.ClaimHolder, s.ClaimRunID, s.LeaseExpiresAt)
	}
}

func testReentry(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	c := mustClaim(t, h, src, "w1")
	h.Clock.Advance(ttl / 2)
	again := mustClaim(t, h, src, "w1")
	if !again.Reentered || again.RunID != c.RunID || again.Token != c.Token {
		t.Fatalf("re-entry returned %+v, want run %s token %s", again, c.RunID, c.Token)
	}
	if !again.LeaseExpiresAt.Equal(h.Clock.Now().Add(ttl)) {
		t.Fatalf("re-entry lease %v, want extended to %v", again.LeaseExpiresAt, h.Clock.Now().Add(ttl))
	}
	_, err := h.Store.Claim(ctx, src.ID, "w2", ttl)
	wantErr(t, err, tidemark.ErrClaimHeld, "another identity before the lease expires")
	if n := h.ActiveRuns(t, src.ID); n != 1 {
		t.Fatalf("%d active runs, want 1", n)
	}
	// The re-entered claim settles like the original.
	settle(t, h, again, "c1", item("k", "e"))
}

func testExpiredLeaseLost(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	old := mustClaim(t, h, src, "w1")
	h.Clock.Advance(ttl + time.Millisecond)
	c := mustClaim(t, h, src, "w2")
	if c.RunID == old.RunID || c.Attempt != 2 {
		t.Fatalf("new claim %+v: want a new run at attempt 2", c)
	}
	runs, err := h.Store.Runs(ctx, ingest.RunFilter{SourceID: src.ID})
	if err != nil {
		t.Fatal(err)
	}
	var lost *tidemark.Run
	for i := range runs {
		if runs[i].ID == old.RunID {
			lost = &runs[i]
		}
	}
	if lost == nil || lost.Status != tidemark.RunFailed || lost.Outcome != tidemark.OutcomeLost {
		t.Fatalf("old run = %+v, want failed/lost", lost)
	}
	if n := h.AuditRows(t, old.RunID); n != 1 {
		t.Fatalf("lost run has %d audit rows, want 1", n)
	}
}

func testStaleToken(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 5)
	old := mustClaim(t, h, src, "w1")
	h.Clock.Advance(ttl + time.Millisecond)
	cur := mustClaim(t, h, src, "w2")
	before := mustSource(t, h, src.ID)

	_, err := h.Store.Settle(ctx, old, ingest.Settlement{Items: []tidemark.Item{item("k", "e")}, Cursor: "stale", NextDueAt: h.Clock.Now()})
	wantErr(t, err, tidemark.ErrStaleClaim, "settle with the old token")
	_, err = h.Store.Fail(ctx, old, failure(h, tidemark.OutcomeUnreachable))
	wantErr(t, err, tidemark.ErrStaleClaim, "fail with the old token")
	_, err = h.Store.Heartbeat(ctx, old, ttl)
	wantErr(t, err, tidemark.ErrStaleClaim, "heartbeat with the old token")

	assertUnmoved(t, h, before)
	if evs := events(t, h, src); len(evs) != 0 {
		t.Fatalf("stale settle wrote %d events", len(evs))
	}
	after := mustSource(t, h, src.ID)
	if after.ClaimRunID != cur.RunID || after.WindowAttempts != before.WindowAttempts || after.LastOutcome != before.LastOutcome {
		t.Fatalf("stale calls changed the source: %+v", after)
	}
	// The current holder is unaffected.
	settle(t, h, cur, "c1", item("k", "e"))
	if n := h.AuditRows(t, cur.RunID); n != 1 {
		t.Fatalf("%d audit rows, want 1", n)
	}
}

func testOlderCursorVersion(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 5)
	settle(t, h, mustClaim(t, h, src, "w1"), "c0")
	c := mustClaim(t, h, src, "w1")
	if c.CursorVersion != 1 {
		t.Fatalf("cursor version %d after one settlement, want 1", c.CursorVersion)
	}
	forged := c
	forged.CursorVersion--
	before := mustSource(t, h, src.ID)
	_, err := h.Store.Settle(ctx, forged, ingest.Settlement{Items: []tidemark.Item{item("k", "e")}, Cursor: "x", NextDueAt: h.Clock.Now()})
	wantErr(t, err, tidemark.ErrStaleClaim, "settle with an older cursor version")
	_, err = h.Store.Fail(ctx, forged, failure(h, tidemark.OutcomeError))
	wantErr(t, err, tidemark.ErrStaleClaim, "fail with an older cursor version")
	_, err = h.Store.Heartbeat(ctx, forged, ttl)
	wantErr(t, err, tidemark.ErrStaleClaim, "heartbeat with an older cursor version")
	assertUnmoved(t, h, before)
	settle(t, h, c, "c1")
}

func testSettle(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	c := mustClaim(t, h, src, "w1")
	rep := settle(t, h, c, "c1", item("k1", "e1"), item("k2", "e2"))
	if rep.Run.Outcome != tidemark.OutcomeItems || rep.Run.Status != tidemark.RunSettled || rep.EventsNew != 2 || len(rep.EventIDs) != 2 {
		t.Fatalf("report %+v", rep)
	}
	s := mustSource(t, h, src.ID)
	if s.Cursor != "c1" || s.CursorVersion != 1 || s.ClaimHolder != "" || s.LastOutcome != tidemark.OutcomeItems {
		t.Fatalf("source after settle: %+v", s)
	}
	// The settlement's report is what the store holds.
	runs, err := h.Store.Runs(ctx, ingest.RunFilter{SourceID: src.ID})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %+v %v", runs, err)
	}
	stored := runs[0]
	if stored.FinishedAt == nil || rep.Run.FinishedAt == nil || !stored.FinishedAt.Equal(*rep.Run.FinishedAt) || !stored.StartedAt.Equal(rep.Run.StartedAt) {
		t.Fatalf("reported times %v–%v, stored %v–%v", rep.Run.StartedAt, rep.Run.FinishedAt, stored.StartedAt, stored.FinishedAt)
	}
	rep.Run.FinishedAt, stored.FinishedAt = nil, nil
	if rep.Run != stored {
		t.Fatalf("reported run\n%+v\nstored run\n%+v", rep.Run, stored)
	}
	if n := h.AuditRows(t, c.RunID); n != 1 {
		t.Fatalf("%d audit rows, want 1", n)
	}
	// The claim is spent: settling it again changes nothing.
	_, err = h.Store.Settle(ctx, c, ingest.Settlement{Items: []tidemark.Item{item("k3", "e3")}, Cursor: "c2", NextDueAt: h.Clock.Now()})
	wantErr(t, err, tidemark.ErrStaleClaim, "second settle of one claim")
	if n := h.AuditRows(t, c.RunID); n != 1 {
		t.Fatalf("%d audit rows after a second settle, want 1", n)
	}
	if evs := events(t, h, src); len(evs) != 2 {
		t.Fatalf("%d events, want 2", len(evs))
	}
	ev, hash, err := h.Store.Evidence(ctx, rep.EventIDs[0], 0)
	if err != nil || string(ev) != "e1" || hash != tidemark.HashEvidence([]byte("e1")) {
		t.Fatalf("evidence = %q %s %v", ev, hash, err)
	}
}

// testSettleNotes: what the fetch noticed (a git remote's HEAD that
// moved) is on the run's record, as reported, with and without items.
func testSettleNotes(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	for i, items := range [][]tidemark.Item{{item("k1", "e1")}, nil} {
		c := mustClaim(t, h, src, "w1")
		notes := []string{fmt.Sprintf("HEAD moved %d", i), "and more"}
		rep, err := h.Store.Settle(ctx, c, ingest.Settlement{Items: items, Cursor: fmt.Sprint("c", i), Notes: notes, NextDueAt: h.Clock.Now()})
		if err != nil {
			t.Fatalf("settle: %v", err)
		}
		want := notes[0] + "; and more"
		if rep.Run.Note != want {
			t.Fatalf("reported note %q, want %q", rep.Run.Note, want)
		}
		runs, err := h.Store.Runs(ctx, ingest.RunFilter{SourceID: src.ID, Limit: 1})
		if err != nil || len(runs) != 1 || runs[0].ID != c.RunID || runs[0].Note != want {
			t.Fatalf("stored runs %+v, %v: want run %s noting %q", runs, err, c.RunID, want)
		}
	}
}

func testRevisions(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	settle(t, h, mustClaim(t, h, src, "w"), "c1", item("k", "v1"))
	rep := settle(t, h, mustClaim(t, h, src, "w"), "c2", item("k", "v1"))
	if rep.Run.Outcome != tidemark.OutcomeEmpty || rep.EventsNew+rep.EventsChanged != 0 {
		t.Fatalf("re-reading the same evidence: %+v, want empty", rep)
	}
	rep = settle(t, h, mustClaim(t, h, src, "w"), "c3", item("k", "v2"))
	if rep.Run.Outcome != tidemark.OutcomeItems || rep.EventsChanged != 1 || rep.EventsNew != 0 {
		t.Fatalf("changed evidence: %+v, want one changed", rep)
	}
	evs := events(t, h, src)
	if len(evs) != 1 || evs[0].Revision != 2 || evs[0].EvidenceHash != tidemark.HashEvidence([]byte("v2")) {
		t.Fatalf("events = %+v, want one event at revision 2", evs)
	}
	old, _, err := h.Store.Evidence(ctx, evs[0].ID, 1)
	if err != nil || string(old) != "v1" {
		t.Fatalf("revision 1 evidence = %q, %v; the old evidence must be kept", old, err)
	}
	// One fetch naming an item twice: the same evidence once, other
	// evidence as a further revision.
	rep = settle(t, h, mustClaim(t, h, src, "w"), "c3b", item("dup", "d1"), item("dup", "d1"), item("dup2", "x1"), item("dup2", "x2"))
	if rep.EventsNew != 2 || rep.EventsChanged != 1 {
		t.Fatalf("duplicates in one fetch: %+v", rep)
	}
	for _, e := range events(t, h, src) {
		if (e.ItemKey == "dup" && e.Revision != 1) || (e.ItemKey == "dup2" && (e.Revision != 2 || e.EvidenceHash != tidemark.HashEvidence([]byte("x2")))) {
			t.Fatalf("duplicates in one fetch froze %s at revision %d", e.ItemKey, e.Revision)
		}
	}
	// Back to the first content: a change, frozen as revision 3.
	settle(t, h, mustClaim(t, h, src, "w"), "c4", item("k", "v1"))
	var k tidemark.Event
	for _, e := range events(t, h, src) {
		if e.ItemKey == "k" {
			k = e
		}
	}
	if k.Revision != 3 || k.EvidenceHash != tidemark.HashEvidence([]byte("v1")) {
		t.Fatalf("revert: %+v", k)
	}
}

func testFailureLeavesCursor(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 10)
	settle(t, h, mustClaim(t, h, src, "w"), "c1", item("k", "v1"))
	for _, o := range []tidemark.Outcome{tidemark.OutcomeUnreachable, tidemark.OutcomeInvalid, tidemark.OutcomeError} {
		before := mustSource(t, h, src.ID)
		c := mustClaim(t, h, src, "w")
		run, err := h.Store.Fail(ctx, c, failure(h, o))
		if err != nil {
			t.Fatalf("fail %s: %v", o, err)
		}
		assertUnmoved(t, h, before)
		after := mustSource(t, h, src.ID)
		if run.Outcome != o || run.Status != tidemark.RunFailed || after.LastOutcome != o {
			t.Fatalf("%s recorded as run %s/%s, source %s", o, run.Status, run.Outcome, after.LastOutcome)
		}
		if after.WindowAttempts != before.WindowAttempts+1 {
			t.Fatalf("%s: attempts %d → %d", o, before.WindowAttempts, after.WindowAttempts)
		}
		if n := h.AuditRows(t, c.RunID); n != 1 {
			t.Fatalf("%d audit rows", n)
		}
	}
	// Unreachable is never recorded as empty, and empty never as unreachable.
	runs, err := h.Store.Runs(ctx, ingest.RunFilter{SourceID: src.ID, Outcome: tidemark.OutcomeEmpty})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 0 {
		t.Fatalf("a failure was recorded as empty: %+v", runs)
	}
	rep := settle(t, h, mustClaim(t, h, src, "w"), "c1")
	if rep.Run.Outcome != tidemark.OutcomeEmpty {
		t.Fatalf("a reached source with nothing new recorded as %s", rep.Run.Outcome)
	}
	unreach, err := h.Store.Runs(ctx, ingest.RunFilter{SourceID: src.ID, Outcome: tidemark.OutcomeUnreachable})
	if err != nil {
		t.Fatal(err)
	}
	if len(unreach) != 1 {
		t.Fatalf("%d unreachable runs, want exactly the one that was", len(unreach))
	}
	// A failure may not claim a success outcome.
	c := mustClaim(t, h, src, "w")
	_, err = h.Store.Fail(ctx, c, failure(h, tidemark.OutcomeEmpty))
	wantErr(t, err, tidemark.ErrInvalid, "failing with outcome empty")
	_, err = h.Store.Fail(ctx, c, failure(h, tidemark.OutcomeLost))
	wantErr(t, err, tidemark.ErrInvalid, "failing with outcome lost")
}

func testAddSourceInvalid(t *testing.T, h Harness) {
	ctx := context.Background()
	good := ingest.NewSource{Name: "a", Kind: "test", Location: "x", Interval: time.Minute, RetryBudget: 3}
	for name, bad := range map[string]func(*ingest.NewSource){
		"zero interval":     func(ns *ingest.NewSource) { ns.Interval = 0 },
		"negative interval": func(ns *ingest.NewSource) { ns.Interval = -time.Minute },
		"no retry budget":   func(ns *ingest.NewSource) { ns.RetryBudget = 0 },
		"no name":           func(ns *ingest.NewSource) { ns.Name = " " },
		"no kind":           func(ns *ingest.NewSource) { ns.Kind = "" },
	} {
		ns := good
		bad(&ns)
		_, err := h.Store.AddSource(ctx, ns)
		wantErr(t, err, tidemark.ErrInvalid, name)
	}
	srcs, err := h.Store.Sources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 0 {
		t.Fatalf("refused sources were stored: %+v", srcs)
	}
}

func testShortRead(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	c := mustClaim(t, h, src, "w")
	before := mustSource(t, h, src.ID)
	_, err := h.Store.Settle(ctx, c, ingest.Settlement{Items: []tidemark.Item{item("k", "e")}, Declared: 50, Cursor: "far", NextDueAt: h.Clock.Now()})
	wantErr(t, err, tidemark.ErrShortRead, "40 of 50")
	assertUnmoved(t, h, before)
	if evs := events(t, h, src); len(evs) != 0 {
		t.Fatalf("short read wrote %d events", len(evs))
	}
	// The claim is still held and can fail honestly.
	if _, err := h.Store.Fail(ctx, c, failure(h, tidemark.OutcomeInvalid)); err != nil {
		t.Fatal(err)
	}
}

// A failed run records what its fetch declared and admitted, in the same
// fenced transaction, and the cursor stays: the numbers of a short read
// are what the operator needs, on exactly the run that failed.
func testFailureCounts(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	c := mustClaim(t, h, src, "w")
	before := mustSource(t, h, src.ID)
	f := failure(h, tidemark.OutcomeInvalid)
	f.Declared, f.Admitted = 3, 2
	run, err := h.Store.Fail(ctx, c, f)
	if err != nil {
		t.Fatal(err)
	}
	assertUnmoved(t, h, before)
	stored, err := h.Store.Run(ctx, c.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for what, r := range map[string]tidemark.Run{"returned": run, "stored": stored} {
		if r.Status != tidemark.RunFailed || r.Outcome != tidemark.OutcomeInvalid || r.Declared != 3 || r.Admitted != 2 {
			t.Fatalf("%s run: %s/%s declared %d admitted %d, want failed/invalid declared 3 admitted 2", what, r.Status, r.Outcome, r.Declared, r.Admitted)
		}
	}
	if n := h.AuditRows(t, c.RunID); n != 1 {
		t.Fatalf("%d audit rows", n)
	}
	// A stale claim records nothing, counts included.
	_, err = h.Store.Fail(ctx, c, f)
	wantErr(t, err, tidemark.ErrStaleClaim, "second failure of a released claim")
}

func testHeartbeat(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	c := mustClaim(t, h, src, "w1")
	h.Clock.Advance(ttl - time.Second)
	c, err := h.Store.Heartbeat(ctx, c, ttl)
	if err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(ttl - time.Second) // past the original lease, within the extended one
	_, err = h.Store.Claim(ctx, src.ID, "w2", ttl)
	wantErr(t, err, tidemark.ErrClaimHeld, "claim over a heartbeated lease")
	settle(t, h, c, "c1")
}

func testBudgetTerminal(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 2)
	for i := 0; i < 2; i++ {
		f := failure(h, tidemark.OutcomeUnreachable)
		f.Terminal, f.Why = i == 1, "budget of 2 attempts spent"
		if _, err := h.Store.Fail(ctx, mustClaim(t, h, src, "w"), f); err != nil {
			t.Fatal(err)
		}
	}
	s := mustSource(t, h, src.ID)
	if s.Window != tidemark.WindowTerminal || !strings.HasPrefix(s.TerminalReason, "budget of 2 attempts spent; last: unreachable") {
		t.Fatalf("after the budget: window %s (%q)", s.Window, s.TerminalReason)
	}
	h.Clock.Advance(24 * time.Hour)
	_, err := h.Store.Claim(ctx, src.ID, "w", ttl)
	wantErr(t, err, tidemark.ErrNotClaimable, "claim of a terminal window")
	if cs, err := h.Store.ClaimDue(ctx, "w", ttl, 10); err != nil || len(cs) != 0 {
		t.Fatalf("ClaimDue offered a terminal window: %v %v", cs, err)
	}
	if _, ok, err := h.Store.NextDue(ctx, ""); err != nil || ok {
		t.Fatalf("a terminal window counts as due (err %v)", err)
	}
	if _, err := h.Store.Retry(ctx, src.Name, "op", "upstream fixed"); err != nil {
		t.Fatal(err)
	}
	s = mustSource(t, h, src.ID)
	if s.Window != tidemark.WindowOpen || s.WindowAttempts != 0 {
		t.Fatalf("after retry: %s %d", s.Window, s.WindowAttempts)
	}
	settle(t, h, mustClaim(t, h, src, "w"), "c1")
	acts, err := h.Store.Actions(ctx, src.ID, 10)
	if err != nil || len(acts) != 1 || acts[0].Action != "retry" || acts[0].Actor != "op" {
		t.Fatalf("actions = %+v, %v", acts, err)
	}
}

// testSameKeyTwice: one fetch that names an item twice freezes the first
// and re-freezes it with the second, as two fetches would.
func testSameKeyTwice(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 1)
	items := []tidemark.Item{item("x", "one"), item("k", "v1"), item("y", "two"), item("k", "v2"), item("k", "v2")}
	rep := settle(t, h, mustClaim(t, h, src, "w"), "c1", items...)
	if rep.EventsNew != 3 || rep.EventsChanged != 1 {
		t.Fatalf("new %d, changed %d; want 3 and 1", rep.EventsNew, rep.EventsChanged)
	}
	for _, e := range events(t, h, src) {
		if e.ItemKey == "k" && (e.Revision != 2 || e.EvidenceHash != tidemark.HashEvidence([]byte("v2"))) {
			t.Fatalf("k: revision %d, hash %s", e.Revision, e.EvidenceHash)
		}
	}
}

// testLargeSettlements: settlements of hundreds of items (the size a store
// may write in bulk) freeze exactly what small ones do: new items as new
// events, a re-read as nothing, changed evidence as a revision wherever it
// sits in the batch (not only where a store might look first), a key named
// twice once per distinct evidence; and a stale claim writes none of them.
func testLargeSettlements(t *testing.T, h Harness) {
	const n = 300
	src := mustAdd(t, h, "bulk", 3)
	batch := func(prefix string, from, to int, evidence func(i int) string) []tidemark.Item {
		var out []tidemark.Item
		for i := from; i < to; i++ {
			out = append(out, item(fmt.Sprintf("%s%04d", prefix, i), evidence(i)))
		}
		return out
	}
	same := func(i int) string { return fmt.Sprintf("evidence %d", i) }
	rep := settle(t, h, mustClaim(t, h, src, "w"), "c1", batch("k", 0, n, same)...)
	if rep.EventsNew != n || rep.EventsChanged != 0 || len(rep.EventIDs) != n {
		t.Fatalf("first settlement: new %d, changed %d, ids %d; want %d new", rep.EventsNew, rep.EventsChanged, len(rep.EventIDs), n)
	}
	// The same items again: nothing new.
	rep = settle(t, h, mustClaim(t, h, src, "w"), "c2", batch("k", 0, n, same)...)
	if rep.EventsNew+rep.EventsChanged != 0 || rep.Run.Outcome != tidemark.OutcomeEmpty {
		t.Fatalf("re-read: %+v, want empty", rep)
	}
	// New keys at both ends, an existing key with new evidence in the
	// middle, an existing key unchanged, and a new key named twice.
	items := batch("m", 0, n/2, same)
	items = append(items, item("k0150", "changed"), item("k0151", same(151)), item("twice", "a"), item("twice", "b"))
	items = append(items, batch("z", 0, n/2, same)...)
	rep = settle(t, h, mustClaim(t, h, src, "w"), "c3", items...)
	if rep.EventsNew != n+1 || rep.EventsChanged != 2 {
		t.Fatalf("mixed settlement: new %d, changed %d; want %d new, 2 changed", rep.EventsNew, rep.EventsChanged, n+1)
	}
	evs, err := h.Store.Events(ctx, ingest.EventFilter{SourceID: src.ID, Limit: 10 * n})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2*n+1 {
		t.Fatalf("%d events, want %d", len(evs), 2*n+1)
	}
	for _, e := range evs {
		want := 1
		if e.ItemKey == "k0150" || e.ItemKey == "twice" {
			want = 2
		}
		if e.Revision != want {
			t.Fatalf("%s at revision %d, want %d", e.ItemKey, e.Revision, want)
		}
	}
	// A stale claim's large settlement writes nothing.
	c := mustClaim(t, h, src, "w")
	settle(t, h, c, "c4")
	before := mustSource(t, h, src.ID)
	_, err = h.Store.Settle(ctx, c, ingest.Settlement{Items: batch("stale", 0, n, same), Cursor: "c5", NextDueAt: h.Clock.Now()})
	wantErr(t, err, tidemark.ErrStaleClaim, "stale large settlement")
	assertUnmoved(t, h, before)
	if evs, err := h.Store.Events(ctx, ingest.EventFilter{SourceID: src.ID, Limit: 10 * n}); err != nil || len(evs) != 2*n+1 {
		t.Fatalf("after a stale settlement: %d events, %v; want %d", len(evs), err, 2*n+1)
	}
}

// testSettleMany: runs settled together are fenced one by one: a stale
// claim in the batch fails alone and writes nothing, the others settle
// with one audit row each.
func testSettleMany(t *testing.T, h Harness) {
	bs, ok := h.Store.(ingest.BatchSettler)
	if !ok {
		t.Skip("the store does not batch settlements")
	}
	var cs []tidemark.Claim
	var sts []ingest.Settlement
	for _, name := range []string{"a", "b", "c"} {
		src := mustAdd(t, h, name, 3)
		cs = append(cs, mustClaim(t, h, src, "w"))
		sts = append(sts, ingest.Settlement{Cursor: name + "1", NextDueAt: h.Clock.Now().Add(time.Hour)})
	}
	// b's worker lost its lease and another holder took the source over.
	h.Clock.Advance(ttl + time.Millisecond)
	taken := mustClaim(t, h, mustSource(t, h, "b"), "w2")
	_, errs := bs.SettleMany(ctx, cs, sts)
	for i, name := range []string{"a", "b", "c"} {
		s := mustSource(t, h, name)
		if name == "b" {
			wantErr(t, errs[i], tidemark.ErrStaleClaim, "stale claim in a batch")
			if s.Cursor != "" || s.ClaimRunID != taken.RunID {
				t.Fatalf("the stale settlement moved b: %+v", s)
			}
			if n := h.AuditRows(t, cs[i].RunID); n != 1 { // the lost run's own
				t.Fatalf("stale run: %d audit rows, want the loss's 1", n)
			}
			continue
		}
		if errs[i] != nil {
			t.Fatalf("%s: %v", name, errs[i])
		}
		if s.Cursor != name+"1" || s.CursorVersion != 1 || s.ClaimHolder != "" || s.LastOutcome != tidemark.OutcomeEmpty {
			t.Fatalf("%s after a batched settlement: %+v", name, s)
		}
		if n := h.AuditRows(t, cs[i].RunID); n != 1 {
			t.Fatalf("%s: %d audit rows", name, n)
		}
	}
	// Settling the same claims again changes nothing.
	_, errs = bs.SettleMany(ctx, cs[:1], sts[:1])
	wantErr(t, errs[0], tidemark.ErrStaleClaim, "a batched settlement replayed")
	if n := h.AuditRows(t, cs[0].RunID); n != 1 {
		t.Fatalf("replay: %d audit rows", n)
	}
}

// testInterrupted: a run our own shutdown cut short is recorded on the
// run, but the source keeps the outcome, error and time of its last run:
// a clean stop says nothing about the source, so its health stays as it
// was (and a source never run is still new).
func testInterrupted(t *testing.T, h Harness) {
	interrupted := func(c tidemark.Claim) {
		t.Helper()
		f := failure(h, tidemark.OutcomeError)
		f.NoCharge, f.Interrupted, f.Reason = true, true, "interrupted: worker shutting down"
		run, err := h.Store.Fail(ctx, c, f)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != tidemark.RunFailed || run.Outcome != tidemark.OutcomeError || run.Error != f.Reason {
			t.Fatalf("the interrupted run: %+v", run)
		}
	}
	fresh := mustAdd(t, h, "fresh", 3)
	interrupted(mustClaim(t, h, fresh, "w"))
	if s := mustSource(t, h, fresh.ID); s.LastOutcome != "" || s.LastRunAt != nil || s.ClaimHolder != "" || s.WindowAttempts != 0 {
		t.Fatalf("a source whose first run was interrupted: outcome %q, last run %v, holder %q, %d attempts",
			s.LastOutcome, s.LastRunAt, s.ClaimHolder, s.WindowAttempts)
	}
	src := mustAdd(t, h, "a", 3)
	settle(t, h, mustClaim(t, h, src, "w"), "c1", item("k", "e"))
	before := mustSource(t, h, src.ID)
	h.Clock.Advance(time.Minute)
	interrupted(mustClaim(t, h, src, "w"))
	s := mustSource(t, h, src.ID)
	if s.LastOutcome != before.LastOutcome || s.LastError != before.LastError || s.LastRunAt == nil || !s.LastRunAt.Equal(*before.LastRunAt) {
		t.Fatalf("after an interrupted run: outcome %q (%q) at %v, want %q (%q) at %v",
			s.LastOutcome, s.LastError, s.LastRunAt, before.LastOutcome, before.LastError, before.LastRunAt)
	}
}

// testFailingSince: the first charged failure of a window records when the
// outage began, later failures keep it, every claim carries it, and a
// window stays open past its budget until the policy says terminal; a
// settlement clears it.
func testFailingSince(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 2)
	start := h.Clock.Now().Truncate(time.Millisecond)
	nc := failure(h, tidemark.OutcomeError)
	nc.NoCharge = true
	if _, err := h.Store.Fail(ctx, mustClaim(t, h, src, "w"), nc); err != nil {
		t.Fatal(err)
	}
	if s := mustSource(t, h, src.ID); s.FailingSince != nil {
		t.Fatalf("an uncharged failure started an outage at %v", s.FailingSince)
	}
	for i := 0; i < 4; i++ {
		c := mustClaim(t, h, src, "w")
		if (i == 0) != (c.FailingSince == nil) || (i > 0 && !c.FailingSince.Equal(start)) {
			t.Fatalf("claim %d: failing since %v, want %v", i, c.FailingSince, start)
		}
		if _, err := h.Store.Fail(ctx, c, failure(h, tidemark.OutcomeUnreachable)); err != nil {
			t.Fatal(err)
		}
		h.Clock.Advance(time.Hour)
	}
	s := mustSource(t, h, src.ID)
	if s.Window != tidemark.WindowOpen || s.WindowAttempts != 4 || s.FailingSince == nil || !s.FailingSince.Equal(start) {
		t.Fatalf("after 4 failures not decided terminal: window %s, %d attempts, failing since %v", s.Window, s.WindowAttempts, s.FailingSince)
	}
	settle(t, h, mustClaim(t, h, src, "w"), "c1")
	if s := mustSource(t, h, src.ID); s.FailingSince != nil || s.WindowAttempts != 0 {
		t.Fatalf("after a settlement: failing since %v, %d attempts", s.FailingSince, s.WindowAttempts)
	}
}

func testLostFinalTerminal(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 1)
	c := mustClaim(t, h, src, "w1")
	h.Clock.Advance(ttl + time.Millisecond)
	_, err := h.Store.Claim(ctx, src.ID, "w2", ttl)
	wantErr(t, err, tidemark.ErrNotClaimable, "claim after the final worker was lost")
	s := mustSource(t, h, src.ID)
	if s.Window != tidemark.WindowTerminal || s.LastOutcome != tidemark.OutcomeLost || s.ClaimHolder != "" {
		t.Fatalf("source %+v: want terminal, lost, unclaimed", s)
	}
	if n := h.AuditRows(t, c.RunID); n != 1 {
		t.Fatalf("lost run: %d audit rows", n)
	}
	if n := h.ActiveRuns(t, src.ID); n != 0 {
		t.Fatalf("%d active runs", n)
	}
}

// testLostDuringOutage: a run lost while its window rides out an outage
// (a deploy restarted the daemon) spends its attempt, but does not make the
// window terminal even past the budget: outages are not terminal, and the
// retry policy decides on the next failure whether the outage has lasted
// long enough. A loss that follows a loss is a worker that crashes on this
// source, and past the budget it is terminal as before.
func testLostDuringOutage(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 2)
	if _, err := h.Store.Fail(ctx, mustClaim(t, h, src, "w1"), failure(h, tidemark.OutcomeUnreachable)); err != nil {
		t.Fatal(err)
	}
	c := mustClaim(t, h, src, "w1")
	h.Clock.Advance(ttl + time.Millisecond)
	c2, err := h.Store.Claim(ctx, src.ID, "w2", ttl)
	if err != nil {
		t.Fatalf("claim after a run lost during an outage: %v", err)
	}
	s := mustSource(t, h, src.ID)
	if s.Window != tidemark.WindowOpen || s.WindowAttempts != 2 || s.FailingSince == nil {
		t.Fatalf("after the lost run: window %s (%s), %d attempts, failing since %v; want open, 2, kept",
			s.Window, s.TerminalReason, s.WindowAttempts, s.FailingSince)
	}
	if n := h.AuditRows(t, c.RunID); n != 1 {
		t.Fatalf("lost run: %d audit rows", n)
	}
	// The next worker is lost too: past the budget, that is terminal.
	h.Clock.Advance(ttl + time.Millisecond)
	_, err = h.Store.Claim(ctx, src.ID, "w3", ttl)
	wantErr(t, err, tidemark.ErrNotClaimable, "claim after a second lost run past the budget")
	s = mustSource(t, h, src.ID)
	if s.Window != tidemark.WindowTerminal || s.LastOutcome != tidemark.OutcomeLost {
		t.Fatalf("after two lost runs: window %s, last %s; want terminal, lost", s.Window, s.LastOutcome)
	}
	if n := h.AuditRows(t, c2.RunID); n != 1 {
		t.Fatalf("second lost run: %d audit rows", n)
	}

	// The same through ClaimDue, which finds expired leases itself.
	b := mustAdd(t, h, "b", 1)
	if _, err := h.Store.Fail(ctx, mustClaim(t, h, b, "w1"), failure(h, tidemark.OutcomeUnreachable)); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, h, b, "w1")
	h.Clock.Advance(ttl + time.Millisecond)
	cs, err := h.Store.ClaimDue(ctx, "w2", ttl, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].SourceID != b.ID {
		t.Fatalf("ClaimDue after a run lost during an outage claimed %d sources, want b", len(cs))
	}
}

func testSkip(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 1)
	settle(t, h, mustClaim(t, h, src, "w"), "c1", item("k", "v"))
	c := mustClaim(t, h, src, "w")
	_, err := h.Store.Skip(ctx, src.ID, 1, "c9", "op", "")
	wantErr(t, err, tidemark.ErrClaimHeld, "skip under a live claim")
	if _, err := h.Store.Fail(ctx, c, failure(h, tidemark.OutcomeInvalid)); err != nil {
		t.Fatal(err)
	}
	_, err = h.Store.Skip(ctx, src.ID, 1, "", "op", "")
	wantErr(t, err, tidemark.ErrInvalid, "skip without a target")
	// A skip decided against the cursor as it was before a run moved it
	// (version 0 here) moves nothing: it may point behind the cursor now.
	_, err = h.Store.Skip(ctx, src.ID, 0, "c9", "op", "")
	wantErr(t, err, tidemark.ErrConflict, "skip decided against an older cursor")
	if got := mustSource(t, h, src.ID); got.Cursor != "c1" || got.CursorVersion != 1 {
		t.Fatalf("a refused skip moved the cursor: %+v", got)
	}
	s, err := h.Store.Skip(ctx, src.ID, 1, "c9", "op", "poison commit")
	if err != nil {
		t.Fatal(err)
	}
	if s.Cursor != "c9" || s.CursorVersion != 2 || s.Window != tidemark.WindowOpen {
		t.Fatalf("after skip: %+v", s)
	}
	// The stale claim from before the skip cannot settle over it.
	_, err = h.Store.Settle(ctx, c, ingest.Settlement{Cursor: "c2", NextDueAt: h.Clock.Now()})
	wantErr(t, err, tidemark.ErrStaleClaim, "settle after skip")
	acts, err := h.Store.Actions(ctx, src.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1 || acts[0].Action != "skip" || acts[0].CursorBefore != "c1" || acts[0].CursorAfter != "c9" || acts[0].Note != "poison commit" {
		t.Fatalf("skip audit = %+v", acts)
	}
}

func testPause(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	if _, err := h.Store.SetState(ctx, src.Name, tidemark.SourcePaused, "op"); err != nil {
		t.Fatal(err)
	}
	_, err := h.Store.Claim(ctx, src.ID, "w", ttl)
	wantErr(t, err, tidemark.ErrNotClaimable, "claim of a paused source")
	if cs, err := h.Store.ClaimDue(ctx, "w", ttl, 5); err != nil || len(cs) != 0 {
		t.Fatalf("ClaimDue offered a paused source: %v %v", cs, err)
	}
	if _, err := h.Store.SetState(ctx, src.Name, tidemark.SourceActive, "op"); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, h, src, "w")
}

func testClaimDue(t *testing.T, h Harness) {
	a := mustAdd(t, h, "a", 3)
	b := mustAdd(t, h, "b", 3)
	mustAdd(t, h, "c", 3)
	held := mustClaim(t, h, a, "other")
	settle(t, h, mustClaim(t, h, b, "w"), "c1") // next due = now, by settle's helper
	h.Clock.Advance(time.Second)
	cs, err := h.Store.ClaimDue(ctx, "w", ttl, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("ClaimDue claimed %d, want b and c", len(cs))
	}
	for _, c := range cs {
		if c.SourceID == a.ID {
			t.Fatal("ClaimDue took a source held under a live lease")
		}
	}
	h.Clock.Advance(ttl)
	cs, err = h.Store.ClaimDue(ctx, "w", ttl, 10)
	if err != nil {
		t.Fatal(err)
	}
	// a's lease expired: it is claimed anew and its old run is lost; b and
	// c's leases expired too (their holder is w itself: re-entered).
	var gotA bool
	for _, c := range cs {
		if c.SourceID == a.ID {
			gotA = true
			if c.RunID == held.RunID {
				t.Fatal("claim over an expired lease reused the old run")
			}
		}
	}
	if !gotA {
		t.Fatalf("expired source not claimed: %+v", cs)
	}
}

// A worker that comes back under the same identity re-enters, through
// ClaimDue, the runs it held, at once and fenced as Claim's re-entry is:
// the same run, token and cursor version, the lease extended. Re-entries
// count against the limit; another holder's live claim is still passed
// over.
func testClaimDueReenters(t *testing.T, h Harness) {
	a := mustAdd(t, h, "a", 3)
	mustAdd(t, h, "b", 3)
	c := mustAdd(t, h, "c", 3)
	before, err := h.Store.ClaimDue(ctx, "w1", ttl, 2)
	if err != nil || len(before) != 2 {
		t.Fatalf("first ClaimDue: %v (%v), want a and b", claimedIDs(before), err)
	}
	other := mustClaim(t, h, c, "w2")
	// w1 restarts: it holds a and b, whose leases have half a minute left.
	h.Clock.Advance(ttl / 2)
	cs, err := h.Store.ClaimDue(ctx, "w1", ttl, 1)
	if err != nil || len(cs) != 1 || cs[0].SourceID != a.ID {
		t.Fatalf("ClaimDue by the same holder, limit 1: %v (%v), want a re-entered", claimedIDs(cs), err)
	}
	cs2, err := h.Store.ClaimDue(ctx, "w1", ttl, 10, cs[0].RunID) // a now in flight
	if err != nil {
		t.Fatal(err)
	}
	cs = append(cs, cs2...)
	if len(cs) != 2 {
		t.Fatalf("ClaimDue by the same holder: %v, want a and b re-entered, and not c (held by w2)", claimedIDs(cs))
	}
	for i, c := range cs {
		was := before[i]
		if !c.Reentered || c.SourceID != was.SourceID || c.RunID != was.RunID || c.Token != was.Token ||
			c.CursorVersion != was.CursorVersion || c.Attempt != was.Attempt || c.Holder != "w1" {
			t.Fatalf("re-entry returned %+v, want run %s token %s at cursor version %d", c, was.RunID, was.Token, was.CursorVersion)
		}
		if !c.LeaseExpiresAt.Equal(h.Clock.Now().Add(ttl)) || !c.StartedAt.Equal(was.StartedAt) {
			t.Fatalf("re-entry lease %v started %v, want the lease extended to %v and the run's start %v",
				c.LeaseExpiresAt, c.StartedAt, h.Clock.Now().Add(ttl), was.StartedAt)
		}
		if s := mustSource(t, h, c.SourceID); s.LeaseExpiresAt == nil || !s.LeaseExpiresAt.Equal(c.LeaseExpiresAt) {
			t.Fatalf("source %s lease %v, want %v", s.Name, s.LeaseExpiresAt, c.LeaseExpiresAt)
		}
		if n := h.ActiveRuns(t, c.SourceID); n != 1 {
			t.Fatalf("%d active runs, want 1", n)
		}
	}
	// Runs the caller has in flight are never re-entered: they would run
	// twice.
	if again, err := h.Store.ClaimDue(ctx, "w1", ttl, 10, cs[0].RunID, cs[1].RunID); err != nil || len(again) != 0 {
		t.Fatalf("ClaimDue with a and b in flight: %v (%v), want nothing", claimedIDs(again), err)
	}
	if again, err := h.Store.ClaimDue(ctx, "w1", ttl, 10, cs[1].RunID); err != nil || len(again) != 1 || again[0].RunID != cs[0].RunID {
		t.Fatalf("ClaimDue with b in flight: %v (%v), want a re-entered", claimedIDs(again), err)
	}
	// The re-entered claims settle like the originals; w2's claim stands.
	settle(t, h, cs[0], "c1", item("k", "e"))
	settle(t, h, cs[1], "c1")
	if s := mustSource(t, h, c.ID); s.ClaimRunID != other.RunID {
		t.Fatalf("c's claim is %q, want w2's run %s", s.ClaimRunID, other.RunID)
	}
}

func testConcurrentClaim(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	const n = 16
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins []tidemark.Claim
		errs = map[string]int{}
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := h.Store.Claim(ctx, src.ID, fmt.Sprintf("w%d", i), ttl)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins = append(wins, c)
				return
			}
			if !errors.Is(err, tidemark.ErrClaimHeld) {
				errs[err.Error()]++
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
	if len(wins) != 1 {
		t.Fatalf("%d claimers won, want exactly 1", len(wins))
	}
	if n := h.ActiveRuns(t, src.ID); n != 1 {
		t.Fatalf("%d active runs, want 1", n)
	}
}

func testConcurrentClaimDue(t *testing.T, h Harness) {
	const sources, workers = 40, 8
	for i := 0; i < sources; i++ {
		mustAdd(t, h, fmt.Sprintf("s%02d", i), 3)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		claimed = map[string]string{}
		dup     []string
		errs    []error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := fmt.Sprintf("w%d", w)
			var mine []string // this worker's runs, all still in flight
			for {
				cs, err := h.Store.ClaimDue(ctx, holder, ttl, 3, mine...)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				for _, c := range cs {
					if prev, ok := claimed[c.SourceID]; ok {
						dup = append(dup, c.SourceID+" by "+prev+" and "+holder)
					}
					claimed[c.SourceID] = holder
					mine = append(mine, c.RunID)
				}
				mu.Unlock()
				if len(cs) == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(dup) > 0 {
		t.Fatalf("sources claimed twice: %v", dup)
	}
	if len(claimed) != sources {
		t.Fatalf("%d of %d sources claimed", len(claimed), sources)
	}
}

// mustUnserved records that holder could not serve src, for d from now.
func mustUnserved(t *testing.T, h Harness, src tidemark.Source, holder string, d time.Duration) {
	t.Helper()
	now := h.Clock.Now()
	if err := h.Store.RecordUnserved(ctx, ingest.Unserved{SourceID: src.ID, Holder: holder, Reason: "not here", At: now, Until: now.Add(d)}); err != nil {
		t.Fatal(err)
	}
}

// unservedBy lists the holders recorded as unable to serve src.
func unservedBy(t *testing.T, h Harness, src tidemark.Source) []string {
	t.Helper()
	us, err := h.Store.Unserved(ctx, src.ID)
	if err != nil {
		t.Fatal(err)
	}
	var holders []string
	for _, u := range us {
		holders = append(holders, u.Holder)
	}
	return holders
}

// LiveUnserved lists every source's records that still keep their worker
// away at now, and none that has ended.
func testLiveUnserved(t *testing.T, h Harness) {
	a := mustAdd(t, h, "a", 3)
	b := mustAdd(t, h, "b", 3)
	mustAdd(t, h, "c", 3)
	mustUnserved(t, h, a, "w1", time.Hour)
	mustUnserved(t, h, a, "w2", time.Minute)
	mustUnserved(t, h, b, "w1", 2*time.Hour)
	h.Clock.Advance(time.Minute) // w2's record on a ends now
	live, err := h.Store.LiveUnserved(ctx, h.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range live {
		got = append(got, u.SourceID+"/"+u.Holder+"/"+u.Reason)
		if u.Until.Sub(u.At) < time.Hour {
			t.Errorf("record %+v has lost its times", u)
		}
	}
	slices.Sort(got)
	if want := []string{a.ID + "/w1/not here", b.ID + "/w1/not here"}; !slices.Equal(got, want) {
		t.Fatalf("live records %v, want %v", got, want)
	}
	h.Clock.Advance(2 * time.Hour)
	if live, err := h.Store.LiveUnserved(ctx, h.Clock.Now()); err != nil || len(live) != 0 {
		t.Fatalf("after every record ended: %+v, %v", live, err)
	}
}

func claimedIDs(cs []tidemark.Claim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.SourceID)
	}
	return out
}

// A worker that recorded it could not serve a source does not claim it
// through ClaimDue, nor wake for it, until the record expires; other
// workers claim it meanwhile; an explicit claim is not refused.
func testUnservedPassedOver(t *testing.T, h Harness) {
	a := mustAdd(t, h, "a", 3)
	b := mustAdd(t, h, "b", 3)
	mustUnserved(t, h, a, "w1", time.Hour)
	until := h.Clock.Now().Add(time.Hour)
	cs, err := h.Store.ClaimDue(ctx, "w1", ttl, 10)
	if err != nil || len(cs) != 1 || cs[0].SourceID != b.ID {
		t.Fatalf("w1 claimed %v (%v), want b only", claimedIDs(cs), err)
	}
	settle(t, h, cs[0], "c1")
	// b paused: only a is left, due now.
	if _, err := h.Store.SetState(ctx, b.ID, tidemark.SourcePaused, "op"); err != nil {
		t.Fatal(err)
	}
	if at, ok, err := h.Store.NextDue(ctx, "w1"); err != nil || !ok || !at.Equal(until) {
		t.Fatalf("next due for w1: %v %v %v, want %v, when its record expires", at, ok, err, until)
	}
	if at, ok, err := h.Store.NextDue(ctx, ""); err != nil || !ok || at.After(h.Clock.Now()) {
		t.Fatalf("next due for any worker: %v %v %v, want now", at, ok, err)
	}
	h.Clock.Advance(time.Hour - time.Millisecond)
	if cs, err := h.Store.ClaimDue(ctx, "w1", ttl, 10); err != nil || len(cs) != 0 {
		t.Fatalf("w1 claimed %v (%v) before its record expired", claimedIDs(cs), err)
	}
	// Another worker takes it; its claim, held and then expired, does not
	// make w1 wake for it either.
	cs, err = h.Store.ClaimDue(ctx, "w2", ttl, 10)
	if err != nil || len(cs) != 1 || cs[0].SourceID != a.ID {
		t.Fatalf("w2 claimed %v (%v), want a", claimedIDs(cs), err)
	}
	if _, err := h.Store.Fail(ctx, cs[0], ingest.Failure{Outcome: tidemark.OutcomeError, Reason: "x", NextDueAt: h.Clock.Now(), NoCharge: true}); err != nil {
		t.Fatal(err)
	}
	// Expired: w1 tries again.
	h.Clock.Advance(time.Millisecond)
	cs, err = h.Store.ClaimDue(ctx, "w1", ttl, 10)
	if err != nil || len(cs) != 1 || cs[0].SourceID != a.ID {
		t.Fatalf("w1 claimed %v (%v) after its record expired, want a", claimedIDs(cs), err)
	}
	if got := unservedBy(t, h, a); len(got) != 1 || got[0] != "w1" {
		t.Fatalf("unserved by %v after a claim: the record stays until the run is served", got)
	}
	// An explicit claim (an operator's run) is not refused by a live record.
	settle(t, h, cs[0], "c1")
	mustUnserved(t, h, a, "w1", time.Hour)
	mustClaim(t, h, a, "w1")
}

// A run its worker serves deletes that worker's record, and only that
// worker's: a settlement, or a failure charged to the source; an uncharged
// failure (cannot serve, interrupted) keeps it.
func testUnservedCleared(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 5)
	mustUnserved(t, h, src, "w1", time.Hour)
	mustUnserved(t, h, src, "w2", time.Hour)
	f := failure(h, tidemark.OutcomeError)
	f.NoCharge = true
	if _, err := h.Store.Fail(ctx, mustClaim(t, h, src, "w1"), f); err != nil {
		t.Fatal(err)
	}
	if got := unservedBy(t, h, src); len(got) != 2 {
		t.Fatalf("an uncharged failure cleared a record: %v", got)
	}
	if _, err := h.Store.Fail(ctx, mustClaim(t, h, src, "w1"), failure(h, tidemark.OutcomeUnreachable)); err != nil {
		t.Fatal(err)
	}
	if got := unservedBy(t, h, src); len(got) != 1 || got[0] != "w2" {
		t.Fatalf("after w1's charged failure: unserved by %v, want w2", got)
	}
	settle(t, h, mustClaim(t, h, src, "w2"), "c1")
	if got := unservedBy(t, h, src); len(got) != 0 {
		t.Fatalf("after w2 settled: unserved by %v, want none", got)
	}
	// A stale settlement clears nothing.
	c := mustClaim(t, h, src, "w3")
	mustUnserved(t, h, src, "w3", time.Hour)
	h.Clock.Advance(ttl + time.Millisecond)
	settle(t, h, mustClaim(t, h, src, "w4"), "c2")
	if _, err := h.Store.Settle(ctx, c, ingest.Settlement{Cursor: "c3", NextDueAt: h.Clock.Now()}); !errors.Is(err, tidemark.ErrStaleClaim) {
		t.Fatalf("stale settle: %v", err)
	}
	if got := unservedBy(t, h, src); len(got) != 1 || got[0] != "w3" {
		t.Fatalf("after a stale settlement: unserved by %v, want w3", got)
	}
}

// A batched settlement clears its holders' records too.
func testUnservedClearedInBatch(t *testing.T, h Harness) {
	bs, ok := h.Store.(ingest.BatchSettler)
	if !ok {
		t.Skip("the store does not batch settlements")
	}
	var cs []tidemark.Claim
	var sts []ingest.Settlement
	var srcs []tidemark.Source
	for _, name := range []string{"a", "b"} {
		src := mustAdd(t, h, name, 3)
		srcs = append(srcs, src)
		mustUnserved(t, h, src, "w", time.Hour)
		mustUnserved(t, h, src, "other", time.Hour)
		cs = append(cs, mustClaim(t, h, src, "w"))
		sts = append(sts, ingest.Settlement{Cursor: name + "1", NextDueAt: h.Clock.Now().Add(time.Hour)})
	}
	if _, errs := bs.SettleMany(ctx, cs, sts); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	for _, src := range srcs {
		if got := unservedBy(t, h, src); len(got) != 1 || got[0] != "other" {
			t.Fatalf("%s after a batched settlement: unserved by %v, want other", src.Name, got)
		}
	}
}

// Set changes a setting, records who set what, and clears the records of
// workers that could not serve the source: the change may let them.
func testSet(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	if _, err := h.Store.Set(ctx, src.Name, ingest.Settings{}, "op"); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("set nothing: %v, want ErrInvalid", err)
	}
	mustUnserved(t, h, src, "w1", time.Hour)
	allow := true
	got, err := h.Store.Set(ctx, src.Name, ingest.Settings{AllowPrivate: &allow}, "op")
	if err != nil {
		t.Fatal(err)
	}
	if !got.AllowPrivate || !mustSource(t, h, src.ID).AllowPrivate {
		t.Fatalf("allow_private not set: %+v", got)
	}
	acts, err := h.Store.Actions(ctx, src.Name, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1 || acts[0].Action != "set" || acts[0].Actor != "op" || acts[0].Note != "allow_private: false -> true" ||
		acts[0].CursorVersionBefore != acts[0].CursorVersionAfter {
		t.Fatalf("actions after set: %+v", acts)
	}
	if got := unservedBy(t, h, src); len(got) != 0 {
		t.Fatalf("unserved by %v after the source was set, want none", got)
	}
	if cs, err := h.Store.ClaimDue(ctx, "w1", ttl, 10); err != nil || len(cs) != 1 {
		t.Fatalf("w1 claimed %v (%v) after the source was set, want it", claimedIDs(cs), err)
	}
	if _, err := h.Store.Set(ctx, "nope", ingest.Settings{AllowPrivate: &allow}, "op"); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("set an unknown source: %v", err)
	}
}

// Set changes config keys (an empty value unsets one), audited with each
// value before and after; the cursor and its version stay, so nothing
// read is read again and nothing unread is passed over.
func testSetConfig(t *testing.T, h Harness) {
	src := mustAdd(t, h, "a", 3)
	settle(t, h, mustClaim(t, h, src, "w1"), "c1", item("k1", "e1"))
	before := mustSource(t, h, src.ID)
	got, err := h.Store.Set(ctx, src.Name, ingest.Settings{Config: map[string]string{"branch": "main"}}, "op")
	if err != nil {
		t.Fatal(err)
	}
	stored := mustSource(t, h, src.ID)
	for _, s := range []tidemark.Source{got, stored} {
		if s.Config["branch"] != "main" || s.Cursor != before.Cursor || s.CursorVersion != before.CursorVersion {
			t.Fatalf("after set config: %+v, want branch=main and cursor %q v%d", s, before.Cursor, before.CursorVersion)
		}
	}
	if _, err := h.Store.Set(ctx, src.Name, ingest.Settings{Config: map[string]string{"branch": ""}}, "op"); err != nil {
		t.Fatal(err)
	}
	if c := mustSource(t, h, src.ID).Config; len(c) != 0 {
		t.Fatalf("config after unsetting branch: %v, want none", c)
	}
	acts, err := h.Store.Actions(ctx, src.Name, 10)
	if err != nil || len(acts) != 2 {
		t.Fatalf("actions %+v %v", acts, err)
	}
	// Newest first.
	if acts[1].Note != `config branch: (unset) -> "main"` || acts[0].Note != `config branch: "main" -> (unset)` {
		t.Fatalf("notes %q, %q", acts[1].Note, acts[0].Note)
	}
}

// A change of config keys the source anew, as an add of what the change
// leaves would be keyed: the old key is free for a new source, the new one
// is the source's. A change that would take another source's key is
// refused, naming that source, and changes nothing. A source without a key
// (added before keys were kept) takes one only when the change changes
// what it watches.
func testSetConfigRekeys(t *testing.T, h Harness) {
	add := func(name, loc, branch string, keyed bool) (tidemark.Source, error) {
		ns := ingest.NewSource{Name: name, Kind: "test", Location: loc, Interval: time.Minute, RetryBudget: 3}
		if branch != "" {
			ns.Config = map[string]string{"branch": branch}
		}
		if keyed {
			ns.Key = Key(ns)
		}
		return h.Store.AddSource(ctx, ns)
	}
	mustDuplicateOf := func(t *testing.T, err error, of tidemark.Source, what string) {
		t.Helper()
		var dup *ingest.DuplicateError
		if !errors.Is(err, tidemark.ErrConflict) || !errors.As(err, &dup) || dup.Source.ID != of.ID {
			t.Fatalf("%s: %v, want a duplicate of %s", what, err, of.Name)
		}
	}
	a, err := add("a", "mem://r", "main", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.Set(ctx, "a", ingest.Settings{Config: map[string]string{"branch": "dev"}}, "op"); err != nil {
		t.Fatal(err)
	}
	b, err := add("b", "mem://r", "main", true)
	if err != nil {
		t.Fatalf("an add of the branch a left: %v, want it added", err)
	}
	_, err = add("c", "mem://r", "dev", true)
	mustDuplicateOf(t, err, a, "an add of the branch a watches now")

	acts, err := h.Store.Actions(ctx, "b", 10)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Store.Set(ctx, "b", ingest.Settings{Config: map[string]string{"branch": "dev"}}, "op")
	mustDuplicateOf(t, err, a, "b set to the branch a watches")
	if got := mustSource(t, h, b.ID); got.Config["branch"] != "main" {
		t.Fatalf("b after a refused set: config %v, want branch main", got.Config)
	}
	if after, err := h.Store.Actions(ctx, "b", 10); err != nil || len(after) != len(acts) {
		t.Fatalf("b's actions after a refused set: %+v (%v), want none added", after, err)
	}
	if _, err := add("d", "mem://r", "main", true); err == nil {
		t.Fatal("b lost its key to a refused set: a second source of its branch was added")
	}

	// A source without a key keeps none through a change of what does not
	// key it, and takes one when its config changes what it watches.
	legacy, err := add("legacy", "mem://l", "", false)
	if err != nil {
		t.Fatal(err)
	}
	twin, err := add("twin", "mem://l", "", true)
	if err != nil {
		t.Fatal(err)
	}
	hour := time.Hour
	if _, err := h.Store.Set(ctx, "legacy", ingest.Settings{Interval: &hour}, "op"); err != nil {
		t.Fatalf("legacy's interval, beside a keyed twin: %v", err)
	}
	if _, err := h.Store.Set(ctx, "legacy", ingest.Settings{Config: map[string]string{"branch": "x"}}, "op"); err != nil {
		t.Fatal(err)
	}
	_, err = add("e", "mem://l", "x", true)
	mustDuplicateOf(t, err, legacy, "an add of what legacy watches now")
	_, err = h.Store.Set(ctx, "legacy", ingest.Settings{Config: map[string]string{"branch": ""}}, "op")
	mustDuplicateOf(t, err, twin, "legacy set back to what twin watches")
}
