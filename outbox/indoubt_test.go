package outbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// probeRecorder is a lane's provider that cannot list, so every write in
// doubt is probed, and that keeps the writes it was asked to probe.
type probeRecorder struct {
	provider.Provider
	probed []provider.Write
}

func (p *probeRecorder) ListOwn(context.Context, provider.ListQuery) (provider.Page, error) {
	return provider.Page{}, provider.ErrUnsupported
}

func (p *probeRecorder) Probe(ctx context.Context, w provider.Write) (provider.Probed, error) {
	p.probed = append(p.probed, w)
	return p.Provider.Probe(ctx, w)
}

// A probe is told when the write in doubt can have been made at the
// earliest (its attempt's start less the lane's skew), so a provider can
// read from there on instead of the whole target.
func TestProbeIsToldWhenTheAttemptStarted(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true, skew: 3 * time.Second})
		c := h.draft("t1", "one")
		rec := &probeRecorder{Provider: h.provider()}
		d := h.deliverer("w1")
		d.Provider = rec
		h.srv.LoseAnswers(1)
		if s := h.step(d); s.IntentID != c.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("step %+v: want c's outcome unknown", s)
		}
		start := *h.intent(c.ID).LastAttemptAt
		h.env.Clock.Advance(provider.DefaultTimeout + time.Minute)
		h.step(d)
		if len(rec.probed) == 0 {
			t.Fatal("the write in doubt was not probed")
		}
		if got, want := rec.probed[0].NotBefore, start.Add(-3*time.Second); !got.Equal(want) {
			t.Fatalf("probe NotBefore %v, want the (first) attempt's start less the skew %v", got, want)
		}
	})
}

// keyedBlind is a lane whose server honours the idempotency key for
// keyWindow from the first request that used it, and whose writes cannot
// be read back: only the key may decide a write in doubt.
type keyedBlind struct {
	provider.Provider
	keyWindow time.Duration
	scope     string // the key's memory on the server: an account, a token
}

func (p keyedBlind) KeyScope() string { return p.scope }

func (p keyedBlind) ListOwn(context.Context, provider.ListQuery) (provider.Page, error) {
	return provider.Page{}, provider.ErrUnsupported
}

func (p keyedBlind) Probe(context.Context, provider.Write) (provider.Probed, error) {
	return provider.Probed{}, provider.ErrUnsupported
}

func (p keyedBlind) LaneGuarantee() provider.LaneGuarantee {
	return provider.LaneGuarantee{Guarantee: provider.ExactlyOnce, ResendInDoubt: true, KeyWindow: tidemark.Duration(p.keyWindow)}
}

// A server remembers a key from the first request that used it; a resend
// does not extend that. So the window in which a write in doubt may be
// resent on the key's strength runs from the intent's first attempt, not
// its latest: two crashes within the window must not stretch it.
func TestKeyWindowRunsFromTheFirstAttempt(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true})
		c := h.draft("t1", "one")
		d := h.deliverer("w1")
		d.Provider = keyedBlind{Provider: h.provider(), keyWindow: 30 * time.Minute, scope: "token-1"}
		h.srv.LoseAnswers(1)
		if s := h.step(d); s.IntentID != c.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("first attempt %+v: want its outcome unknown", s)
		}
		first := *h.intent(c.ID).LastAttemptAt
		// 20 minutes on: within the key's window, resent with the key.
		h.env.Clock.Advance(20 * time.Minute)
		h.srv.LoseAnswers(1)
		for i := 0; i < 4 && h.srv.Posts() < 2; i++ {
			h.step(d)
		}
		if h.srv.Posts() != 2 {
			t.Fatalf("%d posts: the write in doubt was not resent within the key's window", h.srv.Posts())
		}
		if got := h.intent(c.ID); !got.LastAttemptAt.After(first) || got.FirstAttemptAt == nil || !got.FirstAttemptAt.Equal(first) {
			t.Fatalf("after the resend: first attempt %v, latest %v; want first %v", got.FirstAttemptAt, got.LastAttemptAt, first)
		}
		// 40 minutes after the first attempt, 20 after the latest: the
		// server has forgotten the key, so nothing may be sent again.
		h.env.Clock.Advance(20 * time.Minute)
		for i := 0; i < 4; i++ {
			h.step(d)
		}
		if h.srv.Posts() != 2 {
			t.Fatalf("%d posts: resent with a key the server forgot %s after its first use", h.srv.Posts(), 40*time.Minute)
		}
		if got := h.intent(c.ID); got.State != outbox.StateUnresolved {
			t.Fatalf("c is %s, want unresolved", got.State)
		}
	})
}

// An intent attempted more than once (a write deferred, then one in
// doubt) is probed from its first attempt: whatever an earlier attempt
// may have made is read too, not only what the latest could have.
func TestProbeReadsFromTheFirstAttempt(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true, skew: 3 * time.Second})
		c := h.draft("t1", "one")
		rec := &probeRecorder{Provider: h.provider()}
		d := h.deliverer("w1")
		d.Provider = rec
		h.srv.RetryAfterNext(time.Minute)
		if s := h.step(d); s.Outcome != outbox.OutcomeDeferred {
			t.Fatalf("first attempt %+v: want it deferred", s)
		}
		first := *h.intent(c.ID).LastAttemptAt
		h.env.Clock.Advance(2 * time.Minute)
		h.srv.LoseAnswers(1)
		if s := h.step(d); s.IntentID != c.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("second attempt %+v: want its outcome unknown", s)
		}
		if !h.intent(c.ID).LastAttemptAt.After(first) {
			t.Fatal("no second attempt")
		}
		h.env.Clock.Advance(provider.DefaultTimeout + time.Minute)
		h.step(d)
		if len(rec.probed) == 0 {
			t.Fatal("the write in doubt was not probed")
		}
		if got, want := rec.probed[0].NotBefore, first.Add(-3*time.Second); !got.Equal(want) {
			t.Fatalf("probe NotBefore %v, want the first attempt's start less the skew %v", got, want)
		}
	})
}

// A server keeps idempotency keys per token (Matrix) or account
// (Mastodon). A write in doubt sent under one token and resent under
// another is a second write: the key decides a write in doubt only when
// every attempt of it was sent in the scope the lane sends in now.
func TestAKeyDecidesOnlyInTheScopeItWasSentIn(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true})
		c := h.draft("t1", "one")
		d := h.deliverer("w1")
		d.Provider = keyedBlind{Provider: h.provider(), keyWindow: time.Hour, scope: "token-1"}
		h.srv.LoseAnswers(1)
		if s := h.step(d); s.IntentID != c.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("first attempt %+v: want its outcome unknown", s)
		}
		// The operator gives the lane a new token (a new login, a new
		// device) while the write is in doubt.
		h.env.Clock.Advance(5 * time.Minute)
		d.Provider = keyedBlind{Provider: h.provider(), keyWindow: time.Hour, scope: "token-2"}
		for i := 0; i < 4; i++ {
			h.step(d)
		}
		if h.srv.Posts() != 1 {
			t.Fatalf("%d posts: a write in doubt under one token was resent under another", h.srv.Posts())
		}
		got := h.intent(c.ID)
		if got.State != outbox.StateUnresolved {
			t.Fatalf("c is %s, want unresolved", got.State)
		}
		checks, err := h.st.Checks(context.Background(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(checks) == 0 || !strings.Contains(checks[len(checks)-1].Evidence, "token or account changed") {
			t.Fatalf("checks %+v: the evidence does not say the key was sent under another token", checks)
		}
		// Back to the first token: its only attempt was sent under it,
		// and nothing was sent under the second, so the key decides again.
		d.Provider = keyedBlind{Provider: h.provider(), keyWindow: time.Hour, scope: "token-1"}
		if _, err := d.Reconcile(context.Background()); err != nil { // the operator's outbox reconcile
			t.Fatal(err)
		}
		for i := 0; i < 4 && h.srv.Posts() < 2; i++ {
			h.step(d)
		}
		if h.srv.Posts() != 2 {
			t.Fatalf("%d posts: under the token its only attempt was sent with, the key decides and the write is resent", h.srv.Posts())
		}
	})
}

// An intent attempted under two scopes is never resent on its key:
// neither scope's memory has seen every attempt (the journal does not
// tell a key the server kept from one it refused before keeping).
func TestAKeyDecidesNothingForAnIntentSentInTwoScopes(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true})
		c := h.draft("t1", "one")
		d := h.deliverer("w1")
		d.Provider = keyedBlind{Provider: h.provider(), keyWindow: time.Hour, scope: "token-1"}
		h.srv.RetryAfterNext(time.Minute)
		if s := h.step(d); s.Outcome != outbox.OutcomeDeferred {
			t.Fatalf("first attempt %+v: want it deferred", s)
		}
		h.env.Clock.Advance(2 * time.Minute)
		d.Provider = keyedBlind{Provider: h.provider(), keyWindow: time.Hour, scope: "token-2"}
		h.srv.LoseAnswers(1)
		if s := h.step(d); s.IntentID != c.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("second attempt %+v: want its outcome unknown", s)
		}
		for _, scope := range []string{"token-2", "token-1"} {
			d.Provider = keyedBlind{Provider: h.provider(), keyWindow: time.Hour, scope: scope}
			if _, err := d.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				h.step(d)
			}
		}
		if n := h.srv.Posts(); n != 2 {
			t.Fatalf("%d posts: an intent attempted under two tokens was resent on its key", n)
		}
	})
}

// aLongHistory lists the lane's own writes as the receiver does, followed
// by pages of writes older than any intent, which the provider will not
// read now (429): a busy account whose history is long.
type aLongHistory struct {
	provider.Provider
	olderThan time.Time // every write past the first page was made before it
	reads     int
}

func (p *aLongHistory) ListOwn(ctx context.Context, q provider.ListQuery) (provider.Page, error) {
	p.reads++
	if q.Cursor == "older" {
		return provider.Page{}, &provider.StatusError{Method: "GET", URL: "https://receiver.example/list?page=older", Status: 429}
	}
	pg, err := p.Provider.ListOwn(ctx, q)
	if err != nil || pg.Next != "" {
		return pg, err
	}
	if q.Since.IsZero() || q.Since.Before(p.olderThan) {
		pg.Next = "older" // the older pages hold writes the caller may need
	}
	return pg, nil
}

// Reconciliation reads the lane's own writes back only as far as the
// oldest attempt in doubt (less the skew): a listing is newest first, and
// what is older cannot be a write in doubt. Reading a whole history made a
// busy account's lane wait on pages that decide nothing, and one refused
// page (429) threw the read away, pass after pass.
func TestAReconciliationReadsBackOnlyToTheOldestWriteInDoubt(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true, skew: time.Second})
		c := h.draft("t1", "one")
		lister := &aLongHistory{Provider: h.provider(), olderThan: h.env.Clock.Now().Add(-time.Hour)}
		d := h.deliverer("w1")
		d.Provider = lister
		h.srv.LoseAnswers(1) // it lands; its answer is lost
		if s := h.step(d); s.IntentID != c.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("step %+v: want c's outcome unknown", s)
		}
		h.env.Clock.Advance(provider.DefaultTimeout + time.Minute)
		if _, err := d.Step(context.Background()); err != nil {
			t.Fatalf("reconcile: %v (after %d reads)", err, lister.reads)
		}
		if got := h.intent(c.ID); got.State != outbox.StateLanded || h.srv.Posts() != 1 {
			t.Fatalf("c is %s after %d posts, want landed once", got.State, h.srv.Posts())
		}
		if lister.reads != 1 {
			t.Fatalf("%d pages read: the listing went on past the oldest write in doubt", lister.reads)
		}
	})
}

// waitToRead is a lane whose listing the remote refuses for now (429)
// and says for how long.
type waitToRead struct {
	provider.Provider
	wait time.Duration
}

func (p waitToRead) ListOwn(context.Context, provider.ListQuery) (provider.Page, error) {
	return provider.Page{}, &provider.StatusError{Method: "GET", URL: "https://receiver.example/list", Status: 429, Wait: p.wait}
}

// A reconciliation whose read the remote asks to wait for ends the pass
// with the time to come back, as a write it asks to wait for does: the
// delivery loop waits that long instead of reading again at once.
func TestAReadTheRemoteAsksToWaitForDefersTheLane(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true})
		c := h.draft("t1", "one")
		d := h.deliverer("w1")
		h.srv.LoseAnswers(1)
		if s := h.step(d); s.IntentID != c.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("step %+v: want c's outcome unknown", s)
		}
		d.Provider = waitToRead{Provider: h.provider(), wait: 2 * time.Minute}
		_, err := d.Step(context.Background())
		var def *outbox.DeferredError
		if !errors.As(err, &def) || !def.Until.Equal(h.env.Clock.Now().Add(2*time.Minute)) || !errors.Is(err, tidemark.ErrUnavailable) {
			t.Fatalf("reconcile: %v, want it deferred for 2m", err)
		}
		if !strings.Contains(err.Error(), "429") {
			t.Fatalf("%v: the error does not say what the remote answered", err)
		}
	})
}

// refusingReads is a lane whose provider refuses the reads it needs for a
// reason that is the lane's (Slack's missing_scope).
type refusingReads struct{ provider.Provider }

func (p refusingReads) ListOwn(context.Context, provider.ListQuery) (provider.Page, error) {
	return provider.Page{}, &provider.ReadRefusedError{Op: "conversations.history of C0AAAA1", Reason: "missing_scope: the token lacks channels:history"}
}

// A listing the provider refuses for the lane's reason leaves the lane
// broken with the refusal as its problem, not in doubt with none, and the
// pass fails as unavailable (exit 5); once a reconciliation goes through,
// the problem is gone.
func TestAReadRefusalBreaksTheLaneWithItsReason(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true})
		c := h.draft("t1", "one")
		d := h.deliverer("w1")
		h.srv.LoseAnswers(1)
		if s := h.step(d); s.IntentID != c.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("step %+v: want c's outcome unknown", s)
		}
		h.env.Clock.Advance(provider.DefaultTimeout + time.Minute)
		good := d.Provider
		d.Provider = refusingReads{good}
		_, err := d.RunOnce(context.Background(), nil)
		if tidemark.ExitCode(err) != tidemark.ExitUnavailable || !strings.Contains(err.Error(), "channels:history") {
			t.Fatalf("a pass whose listing is refused: %v (exit %d), want unavailable naming the scope", err, tidemark.ExitCode(err))
		}
		v := outbox.LaneView{Lane: h.laneDetail()}
		v.Judge(nil)
		if v.Health != outbox.HealthBroken || !strings.Contains(v.Problem, "channels:history") {
			t.Fatalf("after a refused read: health %q, problem %q; want broken naming the scope", v.Health, v.Problem)
		}
		d.Provider = good
		if _, err := d.RunOnce(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		v = outbox.LaneView{Lane: h.laneDetail()}
		v.Judge(nil)
		if v.Health == outbox.HealthBroken {
			t.Fatalf("after a reconciliation went through: still broken: %s", v.Problem)
		}
		if got := h.intent(c.ID); got.State != outbox.StateLanded {
			t.Fatalf("c is %s, want landed", got.State)
		}
	})
}

// blind is a lane at most once: nothing can read its writes back and its
// server takes no key.
type blind struct{ provider.Provider }

func (p blind) ListOwn(context.Context, provider.ListQuery) (provider.Page, error) {
	return provider.Page{}, provider.ErrUnsupported
}

func (p blind) Probe(context.Context, provider.Write) (provider.Probed, error) {
	return provider.Probed{}, provider.ErrUnsupported
}

func (p blind) LaneGuarantee() provider.LaneGuarantee {
	return provider.LaneGuarantee{Guarantee: provider.AtMostOnce}
}

// On a lane at most once no fresh answer will ever come: an unresolved
// intent says it cannot be decided, not that it waits for an answer.
func TestAnAtMostOnceLanesUnresolvedIntentSaysItCannotBeDecided(t *testing.T) {
	h := newHarness(t, sqltest.Backends()[0], laneOpts{noCount: true})
	c := h.draft("t1", "one")
	d := h.deliverer("w1")
	d.Provider = blind{h.provider()}
	h.srv.LoseAnswers(1)
	h.step(d)
	h.env.Clock.Advance(provider.DefaultTimeout + time.Minute)
	h.step(d)
	got := h.intent(c.ID)
	if got.State != outbox.StateUnresolved || !strings.Contains(got.StateReason, "cannot be decided") || !strings.Contains(got.StateReason, "at most once") {
		t.Fatalf("intent %s: %q; want unresolved, saying it cannot be decided on an at-most-once lane", got.State, got.StateReason)
	}
}
