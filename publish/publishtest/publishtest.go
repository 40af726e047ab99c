// Package publishtest is the conformance suite every publish.Store passes,
// in the manner of testing/fstest: an implementation's tests call Run with
// a way to open a fresh store. It holds the store-level promises (summary
// acceptance, the conditional mark, generations, listings); the service's
// races against object stores stay in publish's own tests.
package publishtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/summarize"
)

// Harness is a fresh, empty store, the ingest store that records the
// events it summarizes (the same database), and the fake clock both run on.
type Harness struct {
	Store  publish.Store
	Ingest ingest.Store
	Clock  *clock.Fake
	// MarkingWith returns Store such that its Mark also runs write inside
	// the mark's transaction (as the outbox drafts its intents there).
	MarkingWith func(write func(context.Context, tidemark.Publication) error) publish.Store
}

// Run runs the publish store conformance suite. open returns a fresh,
// empty store for each subtest.
func Run(t *testing.T, open func(t *testing.T) Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"AcceptIsIdempotentPerIdentity", testAcceptIdentity},
		{"AcceptRefusesBadInput", testAcceptInvalid},
		{"AcceptNeedsCurrentEvidence", testEvidenceMismatch},
		{"NewerRetiresOlderAndMovesPointer", testNewerRetires},
		{"RejectedNeverPublished", testRejected},
		{"MarkPublishes", testMark},
		{"PageStateAndPlanSayWhatIsPublished", testPageState},
		{"MarkMatchesNothingWhenSuperseded", testMarkSuperseded},
		{"MarkMatchesNothingWhenRefrozen", testMarkRefrozen},
		{"MarkMatchesNothingWhenRejected", testMarkRejected},
		{"GenerationsIncreaseOlderMarkRefused", testGenerations},
		{"FailingWriteRollsMarkBack", testFailingWrite},
		{"MarkManyFencesEachMark", testMarkMany},
		{"WithdrawOnlyWithoutCurrentSummary", testWithdraw},
		{"RestyleListsPagesOfAnotherFormat", testRestyle},
		{"AbsenceRecordedUntilPublishedAgain", testAbsence},
		{"ListingNewestFirstAndLimited", testListing},
		{"SummariesNewestFirstAndLimited", testSummaries},
		{"UnsummarizedPerModelAndPrompt", testUnsummarized},
		{"SwitchingBackReinstates", testReinstate},
		{"UnrejectBringsASummaryBack", testUnreject},
		{"SummaryFailuresCountHoldAndForget", testSummaryFailures},
		{"SummaryClaimsFenceOtherHolders", testSummaryClaims},
		{"SummarizedSinceAFirstFailure", testSummarizedSince},
		{"ObjectGenerationsNeverRestart", testObjects},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, &harness{Harness: open(t)}) })
	}
}

var ctx = context.Background()

type harness struct {
	Harness
	srcs map[string]tidemark.Source
	// bound is the store the wiki is bound to, which marks name.
	bound publish.StoreIdentity
}

// mustSource adds (once) a source named name.
func (h *harness) mustSource(t *testing.T, name string) tidemark.Source {
	t.Helper()
	if src, ok := h.srcs[name]; ok {
		return src
	}
	src, err := h.Ingest.AddSource(ctx, ingest.NewSource{Name: name, Kind: "git", Location: "/src/" + name, Interval: time.Hour, RetryBudget: 3})
	if err != nil {
		t.Fatalf("add source %s: %v", name, err)
	}
	if h.srcs == nil {
		h.srcs = map[string]tidemark.Source{}
	}
	h.srcs[name] = src
	return src
}

// mustEvent settles one item of source "repo" through a real claim and
// returns its event; settling the same key again re-freezes the event.
func (h *harness) mustEvent(t *testing.T, key, evidence string) tidemark.Event {
	t.Helper()
	return h.mustEventOf(t, "repo", key, evidence)
}

func (h *harness) mustEventOf(t *testing.T, source, key, evidence string) tidemark.Event {
	t.Helper()
	src := h.mustSource(t, source)
	c, err := h.Ingest.Claim(ctx, src.ID, "publishtest", time.Minute)
	if err != nil {
		t.Fatalf("claim %s: %v", source, err)
	}
	h.Clock.Advance(time.Second)
	rep, err := h.Ingest.Settle(ctx, c, ingest.Settlement{
		Items:     []tidemark.Item{{Key: key, Title: "change " + key, OccurredAt: h.Clock.Now(), Evidence: []byte(evidence)}},
		Cursor:    fmt.Sprintf("%s@%d", key, h.Clock.Now().UnixNano()),
		NextDueAt: h.Clock.Now(),
	})
	if err != nil {
		t.Fatalf("settle %s: %v", key, err)
	}
	if len(rep.EventIDs) != 1 {
		t.Fatalf("settle %s recorded %d events, want 1", key, len(rep.EventIDs))
	}
	evs, err := h.Ingest.Events(ctx, ingest.EventFilter{SourceID: src.ID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.ID == rep.EventIDs[0] {
			return ev
		}
	}
	t.Fatalf("settled event %s is not among source %s's events", rep.EventIDs[0], source)
	return tidemark.Event{}
}

func draft(text, model string) summarize.Draft {
	return summarize.Draft{Text: text, Model: model, PromptVersion: "p1"}
}

func (h *harness) mustAccept(t *testing.T, ev tidemark.Event, text, model string) publish.Summary {
	t.Helper()
	h.Clock.Advance(time.Millisecond)
	s, created, err := h.Store.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Draft: draft(text, model)})
	if err != nil {
		t.Fatalf("accept %q: %v", text, err)
	}
	if !created || !s.Current || s.ID == "" {
		t.Fatalf("accept %q: %+v created=%v, want a new current summary", text, s, created)
	}
	return s
}

func (h *harness) mustSummary(t *testing.T, id string) publish.Summary {
	t.Helper()
	s, err := h.Store.Summary(ctx, id)
	if err != nil {
		t.Fatalf("summary %s: %v", id, err)
	}
	return s
}

func (h *harness) mustPointer(t *testing.T, eventID, want string) {
	t.Helper()
	got, err := h.Store.CurrentSummary(ctx, eventID)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("event %s points at %q, want %q", eventID, got, want)
	}
}

func (h *harness) mustPrepare(t *testing.T, id string) publish.Plan {
	t.Helper()
	p, err := h.Store.Prepare(ctx, id)
	if err != nil {
		t.Fatalf("prepare %s: %v", id, err)
	}
	if p.Summary.ID != id || p.PageID == "" || p.Generation < 1 {
		t.Fatalf("prepare %s: plan %+v", id, p)
	}
	return p
}

func (h *harness) mustMark(t *testing.T, p publish.Plan, etag string) tidemark.Publication {
	t.Helper()
	pub, err := h.Store.Mark(ctx, p, publish.Written{ETag: etag, Store: h.bound})
	if err != nil {
		t.Fatalf("mark %s generation %d: %v", p.Summary.ID, p.Generation, err)
	}
	return pub
}

func (h *harness) mustPublish(t *testing.T, id string) tidemark.Publication {
	t.Helper()
	return h.mustMark(t, h.mustPrepare(t, id), "etag-"+id)
}

func (h *harness) mustPublishedCount(t *testing.T, want int) {
	t.Helper()
	n, err := h.Store.PublishedCount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("%d published pages, want %d", n, want)
	}
}

func (h *harness) pageStates(t *testing.T) map[string]publish.PageState {
	t.Helper()
	out := map[string]publish.PageState{}
	if err := h.Store.PageStates(ctx, func(ps publish.PageState) error { out[ps.EventID] = ps; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

func testAcceptIdentity(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence one")
	s1 := h.mustAccept(t, ev, "Summary one.", "m1")
	if s1.EventID != ev.ID || s1.EvidenceHash != ev.EvidenceHash || s1.Model != "m1" || s1.PromptVersion != "p1" ||
		s1.Text != "Summary one." || s1.TextHash == "" || s1.PublishedAt != nil || s1.RetiredAt != nil {
		t.Fatalf("accepted summary %+v", s1)
	}
	h.mustPointer(t, ev.ID, s1.ID)

	// The same identity and text is a harmless replay.
	again, created, err := h.Store.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Draft: draft("Summary one.", "m1")})
	if err != nil || created || again.ID != s1.ID {
		t.Fatalf("re-accept: %+v created=%v err=%v, want %s unchanged", again, created, err, s1.ID)
	}
	// The same identity with other text is refused and changes nothing.
	_, _, err = h.Store.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Draft: draft("Other text.", "m1")})
	mustErr(t, "accept other text under the same identity", err, publish.ErrIdentityConflict)
	mustErr(t, "accept other text under the same identity", err, tidemark.ErrConflict)
	if got := h.mustSummary(t, s1.ID); got.Text != "Summary one." || !got.Current {
		t.Fatalf("stored summary changed: %+v", got)
	}
	h.mustPointer(t, ev.ID, s1.ID)
	if all, err := h.Store.Summaries(ctx, publish.SummaryFilter{EventID: ev.ID}); err != nil || len(all) != 1 {
		t.Fatalf("summaries of the event: %d, %v; want 1", len(all), err)
	}

	// Each part of the identity makes a new summary: the model, the
	// prompt version.
	s2 := h.mustAccept(t, ev, "Summary one.", "m2")
	h.Clock.Advance(time.Millisecond)
	s3, created, err := h.Store.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash,
		Draft: summarize.Draft{Text: "Summary one.", Model: "m2", PromptVersion: "p2"}})
	if err != nil || !created || s3.ID == s2.ID || s3.ID == s1.ID {
		t.Fatalf("accept under a new prompt version: %+v created=%v err=%v", s3, created, err)
	}
	h.mustPointer(t, ev.ID, s3.ID)
	if _, err := h.Store.Summary(ctx, "no-such-summary"); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("missing summary: %v, want ErrNotFound", err)
	}
}

func testAcceptInvalid(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence one")
	for name, ns := range map[string]publish.NewSummary{
		"no event":         {EvidenceHash: ev.EvidenceHash, Draft: draft("x", "m1")},
		"empty text":       {EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Draft: draft("  ", "m1")},
		"no model":         {EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Draft: draft("x", "")},
		"no prompt":        {EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Draft: summarize.Draft{Text: "x", Model: "m1"}},
		"no evidence hash": {EventID: ev.ID, Draft: draft("x", "m1")},
	} {
		if _, _, err := h.Store.Accept(ctx, ns); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("accept with %s: %v, want ErrInvalid", name, err)
		}
	}
	_, _, err := h.Store.Accept(ctx, publish.NewSummary{EventID: "no-such-event", EvidenceHash: ev.EvidenceHash, Draft: draft("x", "m1")})
	mustErr(t, "accept for a missing event", err, tidemark.ErrNotFound)
	h.mustPointer(t, ev.ID, "")
}

func testEvidenceMismatch(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence v1")
	_, _, err := h.Store.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: tidemark.HashEvidence([]byte("other")), Draft: draft("x", "m1")})
	mustErr(t, "accept for other evidence", err, publish.ErrEvidenceMismatch)
	h.mustPointer(t, ev.ID, "")

	s := h.mustAccept(t, ev, "Summary of v1.", "m1")
	// Fresh evidence for the same item re-freezes the event: the old hash
	// is refused, the old summary cannot be prepared, the new hash is
	// accepted.
	ev2 := h.mustEvent(t, "c1", "evidence v2")
	if ev2.ID != ev.ID || ev2.EvidenceHash == ev.EvidenceHash {
		t.Fatalf("re-frozen event %+v, was %+v", ev2, ev)
	}
	_, _, err = h.Store.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Draft: draft("Late.", "m9")})
	mustErr(t, "accept for the old evidence", err, publish.ErrEvidenceMismatch)
	_, err = h.Store.Prepare(ctx, s.ID)
	mustErr(t, "prepare over re-frozen evidence", err, publish.ErrSuperseded)
	if ps := h.pageStates(t)[ev.ID]; ps.SummaryID != s.ID || ps.PointerFresh {
		t.Fatalf("page state after re-freeze %+v, want the pointer at %s and not fresh", ps, s.ID)
	}
	if un, err := h.Store.Unpublished(ctx, 0); err != nil || len(un) != 0 {
		t.Fatalf("unpublished over stale evidence: %v %v, want none", un, err)
	}
	s2 := h.mustAccept(t, ev2, "Summary of v2.", "m1")
	h.mustPointer(t, ev.ID, s2.ID)
	h.mustPrepare(t, s2.ID)
}

func testNewerRetires(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence")
	s1 := h.mustAccept(t, ev, "One.", "m1")
	s2 := h.mustAccept(t, ev, "Two.", "m2")
	if old := h.mustSummary(t, s1.ID); old.Current || old.RetiredAt == nil {
		t.Fatalf("previous summary not retired: %+v", old)
	}
	if cur := h.mustSummary(t, s2.ID); !cur.Current || cur.RetiredAt != nil {
		t.Fatalf("new summary not current: %+v", cur)
	}
	h.mustPointer(t, ev.ID, s2.ID)
	_, err := h.Store.Prepare(ctx, s1.ID)
	mustErr(t, "prepare the retired summary", err, publish.ErrSuperseded)
	if un, err := h.Store.Unpublished(ctx, 0); err != nil || len(un) != 1 || un[0] != s2.ID {
		t.Fatalf("unpublished = %v %v, want [%s]", un, err, s2.ID)
	}
	// Exactly one current summary per event.
	all, err := h.Store.Summaries(ctx, publish.SummaryFilter{EventID: ev.ID})
	if err != nil {
		t.Fatal(err)
	}
	current := 0
	for _, s := range all {
		if s.Current {
			current++
		}
	}
	if len(all) != 2 || current != 1 {
		t.Fatalf("%d summaries, %d current; want 2 and 1", len(all), current)
	}
}

func testRejected(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence")
	s := h.mustAccept(t, ev, "Made up.", "m1")
	if _, err := h.Store.Reject(ctx, s.ID, " "); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("reject without a reason: %v, want ErrInvalid", err)
	}
	if got := h.mustSummary(t, s.ID); got.Rejected() || !got.Current {
		t.Fatalf("a refused rejection changed the summary: %+v", got)
	}
	r, err := h.Store.Reject(ctx, s.ID, "hallucinated a file")
	if err != nil || !r.Rejected() || r.Current || r.RejectedReason != "hallucinated a file" || r.RejectedAt == nil {
		t.Fatalf("reject: %+v %v", r, err)
	}
	h.mustPointer(t, ev.ID, "")
	_, err = h.Store.Prepare(ctx, s.ID)
	mustErr(t, "prepare a rejected summary", err, publish.ErrRejected)
	if un, err := h.Store.Unpublished(ctx, 0); err != nil || len(un) != 0 {
		t.Fatalf("unpublished = %v %v, want none", un, err)
	}
	// Rejecting again for the same reason is a harmless replay; for
	// another reason it is a conflict that says when and why the first
	// rejection was made, and the first reason stays.
	if again, err := h.Store.Reject(ctx, s.ID, "hallucinated a file"); err != nil || again.RejectedReason != "hallucinated a file" ||
		again.RejectedAt == nil || !again.RejectedAt.Equal(*r.RejectedAt) {
		t.Fatalf("reject again for the same reason: %+v %v", again, err)
	}
	_, err = h.Store.Reject(ctx, s.ID, "other")
	mustErr(t, "reject again for another reason", err, publish.ErrRejectedAlready)
	mustErr(t, "reject again for another reason", err, tidemark.ErrConflict)
	for _, want := range []string{"rejected already", fieldtext.Day(*r.RejectedAt), `"hallucinated a file"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("reject again for another reason: %q does not say %q", err, want)
		}
	}
	if got := h.mustSummary(t, s.ID); got.RejectedReason != "hallucinated a file" || !got.RejectedAt.Equal(*r.RejectedAt) {
		t.Fatalf("a refused second rejection changed the first: %+v", got)
	}
	if _, err := h.Store.Reject(ctx, "no-such-summary", "x"); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("reject a missing summary: %v, want ErrNotFound", err)
	}
	h.mustPublishedCount(t, 0)
}

func testMark(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence")
	s := h.mustAccept(t, ev, "Adds a parser.", "m1")
	p := h.mustPrepare(t, s.ID)
	if p.Event.ID != ev.ID || p.Event.EvidenceHash != ev.EvidenceHash || p.Source.ID != ev.SourceID || p.Source.Name != "repo" {
		t.Fatalf("plan %+v", p)
	}
	p.Title = "A parser"
	pub := h.mustMark(t, p, "etag-1")
	if pub.PageID != p.PageID || pub.SummaryID != s.ID || pub.EventID != ev.ID || pub.Generation != p.Generation || pub.Title != "A parser" {
		t.Fatalf("publication %+v for plan %+v", pub, p)
	}
	got := h.mustSummary(t, s.ID)
	if got.PublishedAt == nil || got.PublishedGeneration != p.Generation {
		t.Fatalf("marked summary %+v, want published at generation %d", got, p.Generation)
	}
	ps := h.pageStates(t)[ev.ID]
	if ps.PageID != p.PageID || ps.PublishedSummaryID != s.ID || ps.PublishedETag != "etag-1" || ps.SummaryID != s.ID || !ps.PointerFresh {
		t.Fatalf("page state %+v", ps)
	}
	if un, err := h.Store.Unpublished(ctx, 0); err != nil || len(un) != 0 {
		t.Fatalf("unpublished after the mark = %v %v, want none", un, err)
	}
	h.mustPublishedCount(t, 1)
	srcs, err := h.Store.Sources(ctx)
	if err != nil || len(srcs) != 1 || srcs[0].ID != ev.SourceID || srcs[0].Pages != 1 || srcs[0].Stamp == "" {
		t.Fatalf("sources %+v %v", srcs, err)
	}
	// A newer summary is unpublished until it is marked; the page keeps
	// its ID and the source's stamp changes when it is.
	s2 := h.mustAccept(t, ev, "Adds a faster parser.", "m2")
	if un, err := h.Store.Unpublished(ctx, 0); err != nil || len(un) != 1 || un[0] != s2.ID {
		t.Fatalf("unpublished = %v %v, want [%s]", un, err, s2.ID)
	}
	h.Clock.Advance(time.Second)
	pub2 := h.mustPublish(t, s2.ID)
	if pub2.PageID != p.PageID || pub2.Generation <= p.Generation {
		t.Fatalf("republication %+v after %+v", pub2, pub)
	}
	srcs2, err := h.Store.Sources(ctx)
	if err != nil || len(srcs2) != 1 || srcs2[0].Stamp == srcs[0].Stamp {
		t.Fatalf("sources after republishing %+v %v: stamp did not change from %q", srcs2, err, srcs[0].Stamp)
	}
}

// PageState is what PageStates says of one page, read as it is now: a
// publisher overtaken by a newer generation decides by it whether another
// published its summary. A plan says what the page was published with
// when its pre-checks ran: a pass leaves a page another published since
// it listed it.
func testPageState(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence")
	s := h.mustAccept(t, ev, "Adds a parser.", "m1")
	p := h.mustPrepare(t, s.ID)
	ps, err := h.Store.PageState(ctx, p.PageID)
	if err != nil || ps.PageID != p.PageID || ps.EventID != ev.ID || ps.SummaryID != s.ID || !ps.PointerFresh ||
		ps.PublishedSummaryID != "" || ps.PublishedGeneration != 0 {
		t.Fatalf("page state before the mark: %+v, %v", ps, err)
	}
	h.mustMark(t, p, "etag-1")
	ps, err = h.Store.PageState(ctx, p.PageID)
	if err != nil || ps != h.pageStates(t)[ev.ID] || ps.PublishedSummaryID != s.ID || ps.PublishedGeneration != p.Generation ||
		ps.PublishedETag != "etag-1" {
		t.Fatalf("page state after the mark: %+v, %v; PageStates says %+v", ps, err, h.pageStates(t)[ev.ID])
	}
	// The pre-checks say what the page is published with.
	if p2 := h.mustPrepare(t, s.ID); p2.Published != (publish.PublishedAs{SummaryID: s.ID, Generation: p.Generation, ETag: "etag-1"}) {
		t.Fatalf("plan after the mark: published %+v, want %s at generation %d, etag-1", p2.Published, s.ID, p.Generation)
	}
	if p.Published != (publish.PublishedAs{}) {
		t.Fatalf("plan before the mark: published %+v, want none", p.Published)
	}
	// A newer summary moves the pointer; the published summary stays.
	s2 := h.mustAccept(t, ev, "Adds a faster parser.", "m2")
	if ps, err = h.Store.PageState(ctx, p.PageID); err != nil || ps.SummaryID != s2.ID || ps.PublishedSummaryID != s.ID {
		t.Fatalf("page state after a newer summary: %+v, %v", ps, err)
	}
	if _, err := h.Store.PageState(ctx, "no-such-page"); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("page state of no page: %v, want ErrNotFound", err)
	}
}

func testMarkSuperseded(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence")
	s1 := h.mustAccept(t, ev, "One.", "m1")
	p1 := h.mustPrepare(t, s1.ID)
	// A newer summary becomes current while s1's page is being written.
	s2 := h.mustAccept(t, ev, "Two.", "m2")
	_, err := h.Store.Mark(ctx, p1, publish.Written{ETag: "e1"})
	mustErr(t, "mark the superseded summary", err, publish.ErrLostRace)
	mustErr(t, "mark the superseded summary", err, tidemark.ErrConflict)
	if got := h.mustSummary(t, s1.ID); got.PublishedAt != nil {
		t.Fatalf("superseded summary marked published: %+v", got)
	}
	if ps := h.pageStates(t)[ev.ID]; ps.PublishedSummaryID != "" || ps.PublishedETag != "" {
		t.Fatalf("page records a lost mark: %+v", ps)
	}
	h.mustPublishedCount(t, 0)
	h.mustPublish(t, s2.ID)
}

func testMarkRefrozen(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence v1")
	s := h.mustAccept(t, ev, "One.", "m1")
	p := h.mustPrepare(t, s.ID)
	h.mustEvent(t, "c1", "evidence v2")
	_, err := h.Store.Mark(ctx, p, publish.Written{ETag: "e1"})
	mustErr(t, "mark over re-frozen evidence", err, publish.ErrLostRace)
	if got := h.mustSummary(t, s.ID); got.PublishedAt != nil {
		t.Fatalf("summary of stale evidence marked published: %+v", got)
	}
	h.mustPublishedCount(t, 0)
}

func testMarkRejected(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence")
	s := h.mustAccept(t, ev, "One.", "m1")
	p := h.mustPrepare(t, s.ID)
	if _, err := h.Store.Reject(ctx, s.ID, "wrong"); err != nil {
		t.Fatal(err)
	}
	_, err := h.Store.Mark(ctx, p, publish.Written{ETag: "e1"})
	mustErr(t, "mark a rejected summary", err, publish.ErrLostRace)
	if got := h.mustSummary(t, s.ID); got.PublishedAt != nil {
		t.Fatalf("rejected summary marked published: %+v", got)
	}
	h.mustPublishedCount(t, 0)
}

func testGenerations(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence")
	s := h.mustAccept(t, ev, "One.", "m1")
	older := h.mustPrepare(t, s.ID)
	newer := h.mustPrepare(t, s.ID)
	if newer.PageID != older.PageID || newer.Generation <= older.Generation {
		t.Fatalf("generations %d then %d of page %s/%s, want increasing on one page",
			older.Generation, newer.Generation, older.PageID, newer.PageID)
	}
	h.mustMark(t, newer, "etag-new")
	_, err := h.Store.Mark(ctx, older, publish.Written{ETag: "etag-old"})
	mustErr(t, "mark an older generation", err, publish.ErrNewerPublished)
	if ps := h.pageStates(t)[ev.ID]; ps.PublishedETag != "etag-new" {
		t.Fatalf("page records %q, want the newer generation's etag-new", ps.PublishedETag)
	}
	if got := h.mustSummary(t, s.ID); got.PublishedGeneration != newer.Generation {
		t.Fatalf("summary published at generation %d, want %d", got.PublishedGeneration, newer.Generation)
	}
	// The same generation twice is refused too: a generation is written once.
	_, err = h.Store.Mark(ctx, newer, publish.Written{ETag: "etag-again"})
	mustErr(t, "mark a generation twice", err, publish.ErrNewerPublished)
	// Generations keep increasing across summaries of the page.
	s2 := h.mustAccept(t, ev, "Two.", "m2")
	if p := h.mustPrepare(t, s2.ID); p.PageID != newer.PageID || p.Generation <= newer.Generation {
		t.Fatalf("next summary's plan %+v, want page %s after generation %d", p, newer.PageID, newer.Generation)
	}
}

// testFailingWrite: what another pipeline writes with a mark commits with
// it or not at all.
func testFailingWrite(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence")
	s := h.mustAccept(t, ev, "One.", "m1")
	p := h.mustPrepare(t, s.ID)
	boom := errors.New("outbox full")
	var seen tidemark.Publication
	st := h.MarkingWith(func(_ context.Context, pub tidemark.Publication) error { seen = pub; return boom })
	_, err := st.Mark(ctx, p, publish.Written{ETag: "e1"})
	mustErr(t, "mark with a failing write", err, boom)
	if seen.SummaryID != s.ID || seen.Generation != p.Generation {
		t.Fatalf("hook saw %+v", seen)
	}
	if got := h.mustSummary(t, s.ID); got.PublishedAt != nil {
		t.Fatalf("a failed hook left the summary marked: %+v", got)
	}
	h.mustPublishedCount(t, 0)
	// The plan is still good.
	h.mustMark(t, p, "e1")
}

// testMarkMany: marks written together (BatchMarker) keep their own
// conditions: a mark that loses its race, meets a newer generation or
// whose write fails is rolled back alone, with Mark's error, and the
// others commit with their writes.
func testMarkMany(t *testing.T, h *harness) {
	if _, ok := h.Store.(publish.BatchMarker); !ok {
		t.Skip("the store does not batch marks")
	}
	var plans []publish.Plan
	var sums []publish.Summary
	for i := range 5 {
		ev := h.mustEvent(t, fmt.Sprint("c", i), fmt.Sprint("evidence ", i))
		s := h.mustAccept(t, ev, fmt.Sprint("Change ", i, "."), "m1")
		sums = append(sums, s)
		plans = append(plans, h.mustPrepare(t, s.ID))
	}
	// 1: superseded while its page was written.
	newer := h.mustAccept(t, plans[1].Event, "Change 1, again.", "m2")
	// 2: a newer generation of its page is marked already.
	h.mustMark(t, h.mustPrepare(t, sums[2].ID), "etag-newer")
	// 3: the write composed into its mark fails.
	boom := errors.New("outbox full")
	var wrote []string
	st := h.MarkingWith(func(_ context.Context, pub tidemark.Publication) error {
		if pub.SummaryID == sums[3].ID {
			return boom
		}
		wrote = append(wrote, pub.SummaryID)
		return nil
	}).(publish.BatchMarker)
	// 0 and 4 are marked, 4 twice in the batch: the second is refused.
	batch := append(slices.Clone(plans), plans[4])
	ws := make([]publish.Written, len(batch))
	for i := range ws {
		ws[i] = publish.Written{ETag: fmt.Sprint("etag-", i), Store: h.bound}
	}
	pubs, errs := st.MarkMany(ctx, batch, ws)
	if len(pubs) != len(batch) || len(errs) != len(batch) {
		t.Fatalf("MarkMany returned %d publications and %d errors for %d plans", len(pubs), len(errs), len(batch))
	}
	for i, want := range []error{nil, publish.ErrLostRace, publish.ErrNewerPublished, boom, nil, publish.ErrNewerPublished} {
		if want == nil && errs[i] != nil || want != nil && !errors.Is(errs[i], want) {
			t.Errorf("mark %d: %v, want %v", i, errs[i], want)
		}
	}
	for _, i := range []int{0, 4} {
		if pubs[i].SummaryID != sums[i].ID || pubs[i].Generation != plans[i].Generation {
			t.Errorf("mark %d: publication %+v", i, pubs[i])
		}
	}
	if !slices.Equal(sorted(wrote), sorted([]string{sums[0].ID, sums[4].ID})) {
		t.Errorf("the composed write committed for %v, want only the marks that held (%s, %s)", wrote, sums[0].ID, sums[4].ID)
	}
	states := h.pageStates(t)
	for i, want := range []string{"etag-0", "", "etag-newer", "", "etag-4"} {
		if got := states[plans[i].Event.ID].PublishedETag; got != want {
			t.Errorf("page %d records etag %q, want %q", i, got, want)
		}
	}
	for i, published := range []bool{true, false, true, false, true} {
		if got := h.mustSummary(t, sums[i].ID); (got.PublishedAt != nil) != published {
			t.Errorf("summary %d published at %v, want published %v", i, got.PublishedAt, published)
		}
	}
	h.mustPublishedCount(t, 3)
	// The failed marks' plans are as good as before the batch.
	h.mustMark(t, plans[3], "etag-3")
	h.mustPublish(t, newer.ID)
}

func testWithdraw(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence")
	s := h.mustAccept(t, ev, "One.", "m1")
	pub := h.mustPublish(t, s.ID)
	// A page with a current summary is not withdrawn.
	if ok, _, err := h.Store.Withdraw(ctx, pub.PageID); err != nil || ok {
		t.Fatalf("withdraw a current page: %v %v, want false", ok, err)
	}
	h.mustPublishedCount(t, 1)
	if _, err := h.Store.Reject(ctx, s.ID, "wrong"); err != nil {
		t.Fatal(err)
	}
	ps := h.pageStates(t)[ev.ID]
	if ps.SummaryID != "" || ps.PointerFresh || ps.PublishedSummaryID != s.ID {
		t.Fatalf("page state after rejecting its summary %+v", ps)
	}
	if ok, _, err := h.Store.Withdraw(ctx, pub.PageID); err != nil || !ok {
		t.Fatalf("withdraw: %v %v, want true", ok, err)
	}
	h.mustPublishedCount(t, 0)
	if ps := h.pageStates(t)[ev.ID]; ps.PublishedSummaryID != "" || ps.PublishedETag != "" {
		t.Fatalf("withdrawn page state %+v", ps)
	}
	if ok, _, err := h.Store.Withdraw(ctx, pub.PageID); err != nil || ok {
		t.Fatalf("withdraw twice: %v %v, want false", ok, err)
	}
	if l, err := h.Store.Listing(ctx, publish.ListingQuery{}); err != nil || len(l) != 0 {
		t.Fatalf("listing after withdrawal %+v %v", l, err)
	}
}

func (h *harness) mustAbsent(t *testing.T, want ...string) {
	t.Helper()
	states := h.pageStatesByPage(t)
	var got []string
	if err := h.Store.AbsentPages(ctx, func(id, src string) error {
		got = append(got, id)
		if ps := states[id]; ps.SourceID != src || !ps.Absent {
			return fmt.Errorf("absent page %s of source %s; its state %+v", id, src, ps)
		}
		return nil
	}); err != nil || !slices.Equal(got, sorted(want)) {
		t.Fatalf("absent pages %v %v, want %v", got, err, sorted(want))
	}
	for id, ps := range states {
		if ps.Absent != slices.Contains(want, id) {
			t.Fatalf("page %s: state %+v, want absent %t", id, ps, !ps.Absent)
		}
	}
}

func (h *harness) pageStatesByPage(t *testing.T) map[string]publish.PageState {
	t.Helper()
	out := map[string]publish.PageState{}
	for _, ps := range h.pageStates(t) {
		out[ps.PageID] = ps
	}
	return out
}

// A page is recorded absent from the object store only at the published
// generation the sweep saw, and only for the store the wiki is bound to;
// it stays absent until it is published again or withdrawn; and every
// published page is absent after a rebind to another store (or the first
// binding a rebind makes), not after a rebind to the same one.
func testAbsence(t *testing.T, h *harness) {
	evs := []tidemark.Event{h.mustEvent(t, "c1", "one"), h.mustEvent(t, "c2", "two"), h.mustEvent(t, "c3", "three")}
	var pubs []tidemark.Publication
	var sums []publish.Summary
	for i, ev := range evs {
		sums = append(sums, h.mustAccept(t, ev, fmt.Sprintf("Summary %d.", i), "m1"))
		pubs = append(pubs, h.mustPublish(t, sums[i].ID))
	}
	h.mustAbsent(t)
	// Bound by a rebind, the first binding: no store is known to hold the
	// pages.
	first := publish.StoreIdentity{ID: "store-1", Location: "/wiki"}
	if _, err := h.Store.RebindStore(ctx, first); err != nil {
		t.Fatal(err)
	}
	h.bound = first
	h.mustAbsent(t, pubs[0].PageID, pubs[1].PageID, pubs[2].PageID)
	present := make([]publish.Absence, len(pubs))
	for i, p := range pubs {
		present[i] = publish.Absence{PageID: p.PageID, Generation: p.Generation}
	}
	if err := h.Store.RecordAbsence(ctx, first, present); err != nil {
		t.Fatal(err)
	}
	h.mustAbsent(t)
	if err := h.Store.RecordAbsence(ctx, first, nil); err != nil {
		t.Fatal(err)
	}
	// What a worker found in another store than the bound one is not
	// recorded.
	err := h.Store.RecordAbsence(ctx, publish.StoreIdentity{ID: "store-0", Location: "/old"},
		[]publish.Absence{{PageID: pubs[0].PageID, Generation: pubs[0].Generation, Absent: true}})
	mustErr(t, "record what another store holds", err, publish.ErrStoreMismatch)
	h.mustAbsent(t)
	// Found missing at the generations published: recorded; a generation
	// older than the published one (the page was published again after
	// the sweep looked) changes nothing.
	err = h.Store.RecordAbsence(ctx, first, []publish.Absence{
		{PageID: pubs[1].PageID, Generation: pubs[1].Generation, Absent: true},
		{PageID: pubs[0].PageID, Generation: pubs[0].Generation, Absent: true},
		{PageID: pubs[2].PageID, Generation: pubs[2].Generation - 1, Absent: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.mustAbsent(t, pubs[0].PageID, pubs[1].PageID)
	if ps := h.pageStatesByPage(t)[pubs[0].PageID]; ps.PublishedGeneration != pubs[0].Generation {
		t.Fatalf("page state %+v, want published generation %d", ps, pubs[0].Generation)
	}
	// Published again: its read-back proved it there. A worker that
	// wrote to another store than the bound one does not mark the page.
	h.Clock.Advance(time.Second)
	s := h.mustAccept(t, evs[0], "Summary 0, again.", "m2")
	p := h.mustPrepare(t, s.ID)
	_, err = h.Store.Mark(ctx, p, publish.Written{ETag: "e-old-store", Store: publish.StoreIdentity{ID: "store-0", Location: "/old"}})
	mustErr(t, "mark a page written to another store", err, publish.ErrStoreMismatch)
	_, err = h.Store.Mark(ctx, p, publish.Written{ETag: "e-no-store"})
	mustErr(t, "mark a page written to no store the wiki knows", err, publish.ErrStoreMismatch)
	h.mustAbsent(t, pubs[0].PageID, pubs[1].PageID)
	again := h.mustMark(t, p, "etag-again")
	h.mustAbsent(t, pubs[1].PageID)
	// Found there again at the sweep's generation; the stale record of the
	// page published since changes nothing.
	err = h.Store.RecordAbsence(ctx, first, []publish.Absence{
		{PageID: pubs[1].PageID, Generation: pubs[1].Generation, Absent: false},
		{PageID: pubs[0].PageID, Generation: pubs[0].Generation, Absent: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.mustAbsent(t)
	// Withdrawn: neither published nor absent, and a record found before
	// the withdrawal changes nothing.
	if err := h.Store.RecordAbsence(ctx, first, []publish.Absence{{PageID: pubs[2].PageID, Generation: pubs[2].Generation, Absent: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.Reject(ctx, sums[2].ID, "wrong"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := h.Store.Withdraw(ctx, pubs[2].PageID); err != nil || !ok {
		t.Fatalf("withdraw: %v %v", ok, err)
	}
	h.mustAbsent(t)
	if err := h.Store.RecordAbsence(ctx, first, []publish.Absence{{PageID: pubs[2].PageID, Generation: pubs[2].Generation, Absent: true}}); err != nil {
		t.Fatal(err)
	}
	h.mustAbsent(t)
	// Rebound: to the same store, nothing changes; to another, every
	// published page is absent until published again.
	if _, err := h.Store.RebindStore(ctx, first); err != nil {
		t.Fatal(err)
	}
	h.mustAbsent(t)
	moved := publish.StoreIdentity{ID: "store-1", Location: "/elsewhere"}
	if _, err := h.Store.RebindStore(ctx, moved); err != nil {
		t.Fatal(err)
	}
	h.bound = moved
	h.mustAbsent(t, again.PageID, pubs[1].PageID)
	h.Clock.Advance(time.Second)
	s = h.mustAccept(t, evs[1], "Summary 1, again.", "m2")
	h.mustPublish(t, s.ID)
	h.mustAbsent(t, again.PageID)
}

// Restyle lists the pages whose current summary is published in another
// page format than the one given: not a page whose newer summary awaits
// publication (that is Unpublished's), nor a withdrawn one.
func testRestyle(t *testing.T, h *harness) {
	restyle := func(format string, limit int) []string {
		t.Helper()
		ids, err := h.Store.Restyle(ctx, format, limit)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	var sums []publish.Summary
	for i := range 3 {
		ev := h.mustEvent(t, fmt.Sprintf("r%d", i), fmt.Sprintf("evidence %d", i))
		sums = append(sums, h.mustAccept(t, ev, fmt.Sprintf("Summary %d.", i), "m1"))
		p := h.mustPrepare(t, sums[i].ID)
		if _, err := h.Store.Mark(ctx, p, publish.Written{ETag: "e", Format: "f1"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := restyle("f1", 0); len(got) != 0 {
		t.Fatalf("restyle to the format every page has: %v", got)
	}
	if got := restyle("f2", 0); !slices.Equal(sorted(got), sorted([]string{sums[0].ID, sums[1].ID, sums[2].ID})) {
		t.Fatalf("restyle to f2: %v, want every page's summary", got)
	}
	if got := restyle("f2", 2); len(got) != 2 {
		t.Fatalf("restyle limited to 2: %v", got)
	}
	// A page whose event has fresh evidence (waiting to be summarized
	// again, or whose new summary waits to be published), and a withdrawn
	// page: none is restyled, for their current summary is not the one to
	// publish again.
	h.mustEvent(t, "r0", "evidence 0 again")
	h.mustAccept(t, h.mustEvent(t, "r1", "evidence 1 again"), "Summary 1, again.", "m1")
	if _, err := h.Store.Reject(ctx, sums[2].ID, "wrong"); err != nil {
		t.Fatal(err)
	}
	if got := restyle("f2", 0); len(got) != 0 {
		t.Fatalf("restyle with fresh evidence waiting, a newer summary waiting and a rejected one: %v, want none", got)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func testListing(t *testing.T, h *harness) {
	var pubs []tidemark.Publication
	for i, src := range []string{"a", "b", "a", "a"} {
		ev := h.mustEventOf(t, src, fmt.Sprintf("c%d", i), fmt.Sprintf("evidence %d", i))
		s := h.mustAccept(t, ev, fmt.Sprintf("Summary %d.", i), "m1")
		pubs = append(pubs, h.mustPublish(t, s.ID))
	}
	// An accepted but unpublished page is not listed.
	unlisted := h.mustEventOf(t, "a", "c9", "evidence 9")
	h.mustAccept(t, unlisted, "Not yet.", "m1")

	all, err := h.Store.Listing(ctx, publish.ListingQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Fatalf("listing has %d pages, want 4", len(all))
	}
	for i, e := range all {
		if want := pubs[len(pubs)-1-i]; e.PageID != want.PageID || e.EventID != want.EventID || e.SourceID != want.SourceID {
			t.Fatalf("listing[%d] = %+v, want page %s (newest first)", i, e, want.PageID)
		}
		if e.Summary != "" || e.PublishedAt.IsZero() {
			t.Fatalf("listing[%d] = %+v: summary text without Summaries, or no publication time", i, e)
		}
		if i > 0 && e.OccurredAt.After(all[i-1].OccurredAt) {
			t.Fatalf("listing not newest first: %v after %v", e.OccurredAt, all[i-1].OccurredAt)
		}
	}
	limited, err := h.Store.Listing(ctx, publish.ListingQuery{Limit: 2, Summaries: true})
	if err != nil || len(limited) != 2 || limited[0].PageID != all[0].PageID || limited[1].PageID != all[1].PageID {
		t.Fatalf("listing limited to 2: %+v %v", limited, err)
	}
	if limited[0].Summary != "Summary 3." {
		t.Fatalf("listing with summaries shows %q, want %q", limited[0].Summary, "Summary 3.")
	}
	b := h.mustSource(t, "b")
	onlyB, err := h.Store.Listing(ctx, publish.ListingQuery{SourceID: b.ID})
	if err != nil || len(onlyB) != 1 || onlyB[0].PageID != pubs[1].PageID {
		t.Fatalf("listing of source b: %+v %v, want page %s", onlyB, err, pubs[1].PageID)
	}
	srcs, err := h.Store.Sources(ctx)
	if err != nil || len(srcs) != 2 || srcs[0].Name != "a" || srcs[0].Pages != 3 || srcs[1].Name != "b" || srcs[1].Pages != 1 {
		t.Fatalf("sources %+v %v, want a with 3 pages and b with 1", srcs, err)
	}
}

func testSummaries(t *testing.T, h *harness) {
	ev1 := h.mustEvent(t, "c1", "evidence 1")
	ev2 := h.mustEvent(t, "c2", "evidence 2")
	var ids []string
	for i, ev := range []tidemark.Event{ev1, ev2, ev1, ev2, ev1} {
		ids = append(ids, h.mustAccept(t, ev, fmt.Sprintf("Summary %d.", i), fmt.Sprintf("m%d", i)).ID)
	}
	all, err := h.Store.Summaries(ctx, publish.SummaryFilter{})
	if err != nil || len(all) != 5 {
		t.Fatalf("summaries: %d %v, want 5", len(all), err)
	}
	for i, s := range all {
		if want := ids[len(ids)-1-i]; s.ID != want {
			t.Fatalf("summaries[%d] = %s, want %s (newest first)", i, s.ID, want)
		}
	}
	two, err := h.Store.Summaries(ctx, publish.SummaryFilter{Limit: 2})
	if err != nil || len(two) != 2 || two[0].ID != ids[4] || two[1].ID != ids[3] {
		t.Fatalf("summaries limited to 2: %+v %v", two, err)
	}
	of1, err := h.Store.Summaries(ctx, publish.SummaryFilter{EventID: ev1.ID})
	if err != nil || len(of1) != 3 || of1[0].ID != ids[4] || of1[1].ID != ids[2] || of1[2].ID != ids[0] {
		t.Fatalf("summaries of event 1: %+v %v", of1, err)
	}
	// Pages: each starts strictly after the last of the one before, by
	// (created at, ID), whatever was accepted meanwhile.
	var walked []string
	f := publish.SummaryFilter{Limit: 2}
	for range 4 {
		page, err := h.Store.Summaries(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, s := range page {
			walked = append(walked, s.ID)
		}
		last := page[len(page)-1]
		f.BeforeCreatedAt, f.BeforeID = last.CreatedAt, last.ID
		if len(walked) == 2 {
			h.mustAccept(t, ev2, "Summary 5.", "m5") // newer: not on a later page
		}
	}
	if want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}; !slices.Equal(walked, want) {
		t.Fatalf("summaries walked by pages of 2: %v, want %v", walked, want)
	}
	before, err := h.Store.Summaries(ctx, publish.SummaryFilter{EventID: ev1.ID, BeforeCreatedAt: all[1].CreatedAt, BeforeID: all[1].ID})
	if err != nil || len(before) != 2 || before[0].ID != ids[2] || before[1].ID != ids[0] {
		t.Fatalf("summaries of event 1 before %s: %+v %v", all[1].ID, before, err)
	}
}

func testUnsummarized(t *testing.T, h *harness) {
	ev1 := h.mustEvent(t, "c1", "evidence 1")
	ev2 := h.mustEvent(t, "c2", "evidence 2")
	ev3 := h.mustEvent(t, "c3", "evidence 3")
	h.mustAccept(t, ev2, "Two.", "m1")
	check := func(model, prompt string, limit int, want ...tidemark.Event) {
		t.Helper()
		evs, err := h.Store.Unsummarized(ctx, model, prompt, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != len(want) {
			t.Fatalf("unsummarized under %s/%s: %d events, want %d", model, prompt, len(evs), len(want))
		}
		for i := range want {
			if evs[i].ID != want[i].ID {
				t.Fatalf("unsummarized under %s/%s [%d] = %s, want %s (oldest first)", model, prompt, i, evs[i].ID, want[i].ID)
			}
		}
	}
	check("m1", "p1", 0, ev1, ev3)
	check("m1", "p1", 1, ev1)
	check("m2", "p1", 0, ev1, ev2, ev3)
	check("m1", "p2", 0, ev1, ev2, ev3)
	// A re-frozen event needs a summary of its new evidence (its place in
	// the order follows its occurred-at time, which is ingest's business).
	h.mustEvent(t, "c2", "evidence 2, again")
	evs, err := h.Store.Unsummarized(ctx, "m1", "p1", 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs {
		found = found || e.ID == ev2.ID
	}
	if len(evs) != 3 || !found {
		t.Fatalf("unsummarized after re-freezing %s: %d events, re-frozen listed %v; want 3 and true", ev2.ID, len(evs), found)
	}
}

// testReinstate: switching back to a model and prompt whose summary of the
// event's current evidence was superseded makes that summary current
// again (the identity is taken, so it cannot be accepted anew), and
// nothing is reinstated over a rejection or for other evidence.
func testReinstate(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence one")
	s1 := h.mustPublish(t, h.mustAccept(t, ev, "One.", "m1").ID)
	h.Clock.Advance(time.Millisecond)
	s2 := h.mustAccept(t, ev, "Two.", "m2")
	h.mustPublish(t, s2.ID)
	// Under m1 the event is to be summarized again: its current summary is
	// m2's.
	evs, err := h.Store.Unsummarized(ctx, "m1", "p1", 0)
	if err != nil || len(evs) != 1 || evs[0].ID != ev.ID {
		t.Fatalf("unsummarized under m1 after switching to m2: %v, %v; want %s", evs, err, ev.ID)
	}
	_, _, err = h.Store.Reinstate(ctx, ev.ID, ev.EvidenceHash, "m3", "p1")
	mustErr(t, "reinstate an identity never summarized", err, tidemark.ErrNotFound)
	_, _, err = h.Store.Reinstate(ctx, ev.ID, tidemark.HashEvidence([]byte("other")), "m1", "p1")
	mustErr(t, "reinstate for other evidence", err, publish.ErrEvidenceMismatch)

	h.Clock.Advance(time.Millisecond)
	first := h.mustSummary(t, s1.SummaryID).PublishedAt
	back, made, err := h.Store.Reinstate(ctx, ev.ID, ev.EvidenceHash, "m1", "p1")
	if err != nil || !made || back.ID != s1.SummaryID || !back.Current || back.RetiredAt != nil || first == nil || back.PublishedAt == nil || !back.PublishedAt.Equal(*first) {
		t.Fatalf("reinstate m1: %+v, %v; want %s current, not retired, first published at %v", back, err, s1.SummaryID, first)
	}
	h.mustPointer(t, ev.ID, s1.SummaryID)
	if got := h.mustSummary(t, s2.ID); got.Current || got.RetiredAt == nil {
		t.Fatalf("m2's summary after switching back: %+v, want retired", got)
	}
	if ids, err := h.Store.Unpublished(ctx, 0); err != nil || len(ids) != 1 || ids[0] != s1.SummaryID {
		t.Fatalf("unpublished after switching back: %v, %v; want [%s]", ids, err, s1.SummaryID)
	}
	if evs, err := h.Store.Unsummarized(ctx, "m1", "p1", 0); err != nil || len(evs) != 0 {
		t.Fatalf("unsummarized under m1 once reinstated: %v, %v; want none", evs, err)
	}
	// Reinstating the current summary again changes nothing, and says so.
	if again, made, err := h.Store.Reinstate(ctx, ev.ID, ev.EvidenceHash, "m1", "p1"); err != nil || made || again.ID != s1.SummaryID || !again.Current {
		t.Fatalf("reinstate the current summary: %+v, reinstated %v, %v; want it returned as it is", again, made, err)
	}
	h.mustPublish(t, s1.SummaryID)

	// Accepting the same text under a superseded identity reinstates it too.
	h.Clock.Advance(time.Millisecond)
	if s, created, err := h.Store.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Draft: draft("Two.", "m2")}); err != nil || created || s.ID != s2.ID || !s.Current {
		t.Fatalf("accept m2's text again: %+v created=%v err=%v; want %s reinstated", s, created, err, s2.ID)
	}
	h.mustPointer(t, ev.ID, s2.ID)

	// A rejected summary is not reinstated, and its event is not listed.
	if _, err := h.Store.Reject(ctx, s2.ID, "wrong"); err != nil {
		t.Fatal(err)
	}
	_, _, err = h.Store.Reinstate(ctx, ev.ID, ev.EvidenceHash, "m2", "p1")
	mustErr(t, "reinstate a rejected summary", err, publish.ErrRejected)
	if evs, err := h.Store.Unsummarized(ctx, "m2", "p1", 0); err != nil || len(evs) != 0 {
		t.Fatalf("unsummarized under m2 after its rejection: %v, %v; want none", evs, err)
	}
	h.mustPointer(t, ev.ID, "")
	// m1's summary, superseded by the rejected one, comes back under m1.
	if evs, err := h.Store.Unsummarized(ctx, "m1", "p1", 0); err != nil || len(evs) != 1 {
		t.Fatalf("unsummarized under m1 after m2's rejection: %v, %v; want the event", evs, err)
	}
}

// testUnreject: lifting a rejection needs a reason, is refused for a
// summary that is not rejected, keeps the rejection on record, and makes
// the summary of the event's current evidence current again.
func testUnreject(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence one")
	s1 := h.mustAccept(t, ev, "One.", "m1")
	_, err := h.Store.Unreject(ctx, s1.ID, "mistake")
	mustErr(t, "unreject a summary never rejected", err, publish.ErrNotRejected)
	mustErr(t, "unreject a summary never rejected", err, tidemark.ErrConflict)
	if _, err := h.Store.Reject(ctx, s1.ID, "hallucinated"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.Unreject(ctx, s1.ID, " "); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("unreject without a reason: %v, want ErrInvalid", err)
	}
	_, err = h.Store.Unreject(ctx, "no-such-summary", "x")
	mustErr(t, "unreject a missing summary", err, tidemark.ErrNotFound)
	h.Clock.Advance(time.Second)
	back, err := h.Store.Unreject(ctx, s1.ID, "it was right after all")
	if err != nil || back.Rejected() || !back.Current || back.RetiredAt != nil {
		t.Fatalf("unreject: %+v, %v; want current and not rejected", back, err)
	}
	if len(back.Lifted) != 1 || back.Lifted[0].RejectedReason != "hallucinated" || back.Lifted[0].Reason != "it was right after all" ||
		!back.Lifted[0].At.Equal(h.Clock.Now().Truncate(time.Millisecond)) {
		t.Fatalf("lifted rejections on record: %+v", back.Lifted)
	}
	h.mustPointer(t, ev.ID, s1.ID)
	h.mustPublish(t, s1.ID)
	if got := h.mustSummary(t, s1.ID); len(got.Lifted) != 1 {
		t.Fatalf("summary read back: %+v, want its lifted rejection", got)
	}

	// A summary of evidence the event no longer has is unrejected but
	// stays superseded.
	if _, err := h.Store.Reject(ctx, s1.ID, "again"); err != nil {
		t.Fatal(err)
	}
	ev2 := h.mustEvent(t, "c1", "evidence two")
	s2 := h.mustAccept(t, ev2, "Two.", "m1")
	old, err := h.Store.Unreject(ctx, s1.ID, "fine")
	if err != nil || old.Rejected() || old.Current || len(old.Lifted) != 2 {
		t.Fatalf("unreject of old evidence: %+v, %v; want not rejected, not current, 2 lifted", old, err)
	}
	h.mustPointer(t, ev.ID, s2.ID)
	// Removing the source removes the record with its summaries.
	if _, err := h.Ingest.RemoveSource(ctx, "repo", "test", true); err != nil {
		t.Fatalf("remove the source of a summary with lifted rejections: %v", err)
	}
}

func testObjects(t *testing.T, h *harness) {
	src := h.mustSource(t, "repo")
	alloc := func(key, kind, sourceID string) int64 {
		t.Helper()
		g, err := h.Store.AllocateObject(ctx, key, kind, sourceID)
		if err != nil {
			t.Fatalf("allocate %s: %v", key, err)
		}
		return g
	}
	objects := func() map[string]publish.WikiObject {
		t.Helper()
		os, err := h.Store.WikiObjects(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]publish.WikiObject{}
		for _, o := range os {
			out[o.Key] = o
		}
		return out
	}
	g1 := alloc("index.html", "index", "")
	g2 := alloc("index.html", "index", "")
	if g1 < 1 || g2 <= g1 {
		t.Fatalf("generations %d then %d, want increasing from 1", g1, g2)
	}
	card := alloc("sources/repo.html", "card", src.ID)
	if card != 1 {
		t.Fatalf("a new key's first generation is %d, want 1", card)
	}
	if err := h.Store.RecordObject(ctx, "index.html", g2, "etag-2", "hash-2", "stamp-2"); err != nil {
		t.Fatal(err)
	}
	// An older generation's write does not overwrite a newer record.
	if err := h.Store.RecordObject(ctx, "index.html", g1, "etag-1", "hash-1", "stamp-1"); err != nil {
		t.Fatal(err)
	}
	o := objects()["index.html"]
	if o.ETag != "etag-2" || o.ContentHash != "hash-2" || o.Stamp != "stamp-2" || o.Kind != "index" || o.SourceID != "" {
		t.Fatalf("index object %+v, want generation %d's record", o, g2)
	}
	if c := objects()["sources/repo.html"]; c.Kind != "card" || c.SourceID != src.ID || c.ETag != "" {
		t.Fatalf("card object %+v", c)
	}
	// A restamp records the stamp on objects whose record is the one
	// given, and leaves one written since as it is.
	cardRec := objects()["sources/repo.html"]
	if err := h.Store.RecordObject(ctx, "sources/repo.html", card, "etag-c", "hash-c", "stamp-1"); err != nil {
		t.Fatal(err)
	}
	stale := o
	stale.ETag = "etag-1"
	cardRec.ETag, cardRec.ContentHash = "etag-c", "hash-c"
	if err := h.Store.RestampObjects(ctx, "stamp-3", []publish.WikiObject{stale, cardRec}); err != nil {
		t.Fatal(err)
	}
	if o, c := objects()["index.html"], objects()["sources/repo.html"]; o.Stamp != "stamp-2" || c.Stamp != "stamp-3" || c.ETag != "etag-c" || c.ContentHash != "hash-c" {
		t.Fatalf("after a restamp: index %+v (its record changed since: want stamp-2), card %+v (want stamp-3)", o, c)
	}
	if err := h.Store.RestampObjects(ctx, "stamp-4", nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Store.ForgetObject(ctx, "index.html"); err != nil {
		t.Fatal(err)
	}
	if o := objects()["index.html"]; o.ETag != "" || o.ContentHash != "" || o.Stamp != "" {
		t.Fatalf("forgotten object %+v, want its record cleared", o)
	}
	// Generations never restart, so an old writer cannot pass a new one.
	if g3 := alloc("index.html", "index", ""); g3 <= g2 {
		t.Fatalf("generation after forgetting is %d, want more than %d", g3, g2)
	}
}

// An event's failures to be summarized are counted in a row per evidence,
// model and prompt version; a held event is left out of Unsummarized
// until its hold ends or its evidence moves; accepting a summary of it
// forgets its failures.
// testSummaryClaims: a claim on summarizing an event under a model and
// prompt keeps other holders off until it expires or is released; its
// holder claims it again.
func testSummaryClaims(t *testing.T, h *harness) {
	ev := h.mustEvent(t, "c1", "evidence 1")
	claim := func(holder, model string, want bool) {
		t.Helper()
		got, err := h.Store.ClaimSummary(ctx, publish.SummaryClaim{EventID: ev.ID, Model: model, PromptVersion: "p1", Holder: holder}, time.Minute)
		if err != nil || got.OK != want {
			t.Fatalf("claim by %s under %s: %+v, %v; want %v", holder, model, got, err, want)
		}
		// The answer names the claim that stands: the caller's, or the
		// one in its way, and until when.
		if got.OK && (got.Holder != holder || !got.Until.Equal(h.Clock.Now().Add(time.Minute).Truncate(time.Millisecond))) ||
			!got.OK && (got.Holder == holder || got.Holder == "" || !got.Until.After(h.Clock.Now())) || got.TookOver != "" {
			t.Fatalf("claim by %s under %s: %+v", holder, model, got)
		}
	}
	claim("a", "m1", true)
	claim("b", "m1", false)
	claim("b", "m2", true) // another model: another claim
	h.Clock.Advance(40 * time.Second)
	claim("a", "m1", true) // its holder again: extended
	h.Clock.Advance(40 * time.Second)
	claim("b", "m1", false)
	h.Clock.Advance(21 * time.Second)
	claim("b", "m1", true) // expired
	// Only its holder releases a claim.
	if err := h.Store.ReleaseSummary(ctx, publish.SummaryClaim{EventID: ev.ID, Model: "m1", PromptVersion: "p1", Holder: "a"}); err != nil {
		t.Fatal(err)
	}
	claim("a", "m1", false)
	if err := h.Store.ReleaseSummary(ctx, publish.SummaryClaim{EventID: ev.ID, Model: "m1", PromptVersion: "p1", Holder: "b"}); err != nil {
		t.Fatal(err)
	}
	claim("a", "m1", true)
	_, err := h.Store.ClaimSummary(ctx, publish.SummaryClaim{EventID: ev.ID, Model: "m1", PromptVersion: "p1"}, time.Minute)
	if !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("claim without a holder: %v, want ErrInvalid", err)
	}
	// Removing the source removes its claims.
	if _, err := h.Ingest.RemoveSource(ctx, "repo", "test", true); err != nil {
		t.Fatalf("remove the source of a claimed event: %v", err)
	}
}

// testSummarizedSince: whether another event was summarized under the
// failure's model and prompt since the event's first failure.
func testSummarizedSince(t *testing.T, h *harness) {
	ev1 := h.mustEvent(t, "c1", "evidence 1")
	ev2 := h.mustEvent(t, "c2", "evidence 2")
	ev3 := h.mustEvent(t, "c3", "evidence 3")
	h.mustAccept(t, ev2, "Before.", "m1")
	f := publish.SummaryFailure{EventID: ev1.ID, EvidenceHash: ev1.EvidenceHash, Model: "m1", PromptVersion: "p1", Err: "HTTP 400"}
	since := func(want bool) {
		t.Helper()
		got, err := h.Store.SummarizedSince(ctx, f)
		if err != nil || got != want {
			t.Fatalf("summarized since %s first failed: %v, %v; want %v", f.EventID, got, err, want)
		}
	}
	since(false) // no failure recorded
	h.Clock.Advance(time.Millisecond)
	if _, err := h.Store.SummaryFailed(ctx, f); err != nil {
		t.Fatal(err)
	}
	since(false) // ev2's summary is older
	h.mustAccept(t, ev3, "Other model.", "m2")
	since(false) // another model
	h.mustAccept(t, ev3, "After.", "m1")
	since(true)
}

func testSummaryFailures(t *testing.T, h *harness) {
	ev1 := h.mustEvent(t, "c1", "evidence 1")
	ev2 := h.mustEvent(t, "c2", "evidence 2")
	failure := func(ev tidemark.Event, model string) publish.SummaryFailure {
		return publish.SummaryFailure{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Model: model, PromptVersion: "p1", Err: "HTTP 500"}
	}
	failed := func(f publish.SummaryFailure, want int) {
		t.Helper()
		n, err := h.Store.SummaryFailed(ctx, f)
		if err != nil || n != want {
			t.Fatalf("failure of %s under %s: %d in a row, %v; want %d", f.EventID, f.Model, n, err, want)
		}
	}
	unsummarized := func(model string, want ...tidemark.Event) {
		t.Helper()
		evs, err := h.Store.Unsummarized(ctx, model, "p1", 0)
		if err != nil {
			t.Fatal(err)
		}
		var got, wantIDs []string
		for _, e := range evs {
			got = append(got, e.ID)
		}
		for _, e := range want {
			wantIDs = append(wantIDs, e.ID)
		}
		// (A re-frozen event's place follows its occurred-at time: ingest's
		// business.)
		slices.Sort(got)
		slices.Sort(wantIDs)
		if !slices.Equal(got, wantIDs) {
			t.Fatalf("unsummarized under %s: %v, want %v", model, got, wantIDs)
		}
	}
	// HeldSummaries lists the events Unsummarized leaves out as held,
	// with their count, last failure and until when.
	held := func(model string, want ...publish.Held) {
		t.Helper()
		got, err := h.Store.HeldSummaries(ctx, model, "p1", 10)
		if err != nil || !slices.EqualFunc(got, want, func(a, b publish.Held) bool {
			return a.EventID == b.EventID && a.Title == b.Title && a.Failures == b.Failures && a.Until.Equal(b.Until) && a.Err == b.Err
		}) {
			t.Fatalf("held under %s: %+v, %v; want %+v", model, got, err, want)
		}
	}
	failed(failure(ev1, "m1"), 1)
	failed(failure(ev1, "m1"), 2)
	failed(failure(ev1, "m2"), 1) // another model counts apart
	failed(failure(ev2, "m1"), 1)
	unsummarized("m1", ev1, ev2) // failing is not held
	held("m1")
	until, err := h.Store.HoldSummary(ctx, failure(ev1, "m1"), time.Hour)
	if err != nil || !until.Equal(h.Clock.Now().Add(time.Hour)) {
		t.Fatalf("hold: until %v, %v; want an hour from now", until, err)
	}
	unsummarized("m1", ev2)
	unsummarized("m2", ev1, ev2) // held under m1 only
	held("m1", publish.Held{EventID: ev1.ID, Title: ev1.Title, Failures: 2, Until: until, Err: "HTTP 500"})
	held("m2")
	h.Clock.Advance(time.Hour + time.Millisecond)
	unsummarized("m1", ev1, ev2) // the hold is over
	held("m1")
	failed(failure(ev1, "m1"), 3)
	if _, err := h.Store.HoldSummary(ctx, failure(ev1, "m1"), time.Hour); err != nil {
		t.Fatal(err)
	}
	// Fresh evidence is not held, and its failures start over.
	old := failure(ev1, "m1")
	ev1 = h.mustEvent(t, "c1", "evidence 1, again")
	unsummarized("m1", ev1, ev2)
	held("m1")
	if _, err := h.Store.HoldSummary(ctx, old, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	unsummarized("m1", ev1, ev2) // a hold of the old evidence holds nothing
	held("m1")
	failed(failure(ev1, "m1"), 1)
	failed(failure(ev1, "m1"), 2)
	// An accepted summary forgets the event's failures under its model and
	// prompt, not under another.
	h.mustAccept(t, ev1, "One.", "m1")
	failed(failure(ev1, "m1"), 1)
	failed(failure(ev1, "m2"), 1) // its evidence moved since m2's failure
	failed(failure(ev1, "m2"), 2)
	// A source removed with its events takes their failures along.
	if _, err := h.Ingest.RemoveSource(ctx, "repo", "publishtest", true); err != nil {
		t.Fatalf("remove the source of events with failures: %v", err)
	}
}
