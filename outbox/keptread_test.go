package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providertest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// newestFirst is a provider account whose listing of our own writes is
// newest first, a few writes a page, by a keyset cursor (the id of the last
// write a page showed, as Mastodon's max_id and Discord's before are), and
// rate-limited: budget pages a window, then 429 with the wait until the
// window ends. Writes go to the local receiver. Its listing can be resumed
// (provider.Resumable) under its scope.
type newestFirst struct {
	provider.Provider
	srv    *providertest.Server
	clk    *clock.Fake
	size   int
	budget int
	window time.Duration

	mu      sync.Mutex
	epoch   int // cursors given before the latest epoch have expired (400)
	scope   string
	used    int
	resets  time.Time
	cursors []string // the cursor of every page asked for, in order
}

func newNewestFirst(h *harness, size, budget int) *newestFirst {
	return &newestFirst{Provider: h.provider(), srv: h.srv, clk: h.env.Clock, size: size, budget: budget, window: time.Minute, scope: "account-1"}
}

func (p *newestFirst) ListScope() string { p.mu.Lock(); defer p.mu.Unlock(); return p.scope }

func (p *newestFirst) setScope(s string) { p.mu.Lock(); p.scope = s; p.mu.Unlock() }

// asked returns the cursors asked for since the last call.
func (p *newestFirst) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cursors
	p.cursors = nil
	return c
}

func (p *newestFirst) Probe(context.Context, provider.Write) (provider.Probed, error) {
	return provider.Probed{}, provider.ErrUnsupported
}

func (p *newestFirst) Count(context.Context) (int64, error) { return 0, provider.ErrUnsupported }

func (p *newestFirst) ListOwn(_ context.Context, q provider.ListQuery) (provider.Page, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	if !now.Before(p.resets) {
		p.used, p.resets = 0, now.Add(p.window)
	}
	if p.used >= p.budget {
		return provider.Page{}, &provider.StatusError{Method: "GET", URL: "https://account.example/statuses", Status: http.StatusTooManyRequests, Wait: p.resets.Sub(now)}
	}
	p.used++
	p.cursors = append(p.cursors, q.Cursor)
	if q.Cursor != "" && !strings.HasPrefix(q.Cursor, fmt.Sprintf("%d/", p.epoch)) {
		return provider.Page{}, &provider.StatusError{Method: "GET", URL: "https://account.example/statuses", Status: http.StatusBadRequest, Body: "cursor expired"}
	}
	ws := p.srv.Writes()
	slices.Reverse(ws) // newest first: by the time each was made, then by id
	if q.Cursor != "" {
		// Older than the cursor's write, wherever the newer ones are now.
		ws = slices.DeleteFunc(ws, func(w providertest.Write) bool { return !olderThan(w, q.Cursor) })
	}
	page := provider.Page{Meta: provider.Meta{RequestTime: now, Date: now.UTC().Format(http.TimeFormat), Age: "0"}}
	for _, w := range ws[:min(p.size, len(ws))] {
		page.Writes = append(page.Writes, provider.OwnWrite{RemoteID: w.ID, CreatedAt: w.CreatedAt, Target: w.Target, Parent: w.Parent, HasParent: true, BodySHA256: w.BodySHA256})
	}
	if len(ws) > p.size && !ws[p.size-1].CreatedAt.Before(q.Since) {
		last := ws[p.size-1]
		page.Next = fmt.Sprintf("%d/%d/%s", p.epoch, last.CreatedAt.UnixNano(), last.ID)
	}
	return page, nil
}

// olderThan reports whether w comes after the cursor's write, newest
// first: made before it, or at the same time with a lower id.
func olderThan(w providertest.Write, cursor string) bool {
	var (
		epoch int
		at    int64
		id    string
	)
	if _, err := fmt.Sscanf(strings.Replace(cursor, "/", " ", 2), "%d %d %s", &epoch, &at, &id); err != nil {
		panic("bad cursor " + cursor)
	}
	if n := w.CreatedAt.UnixNano(); n != at {
		return n < at
	}
	return w.ID < id
}

// mustOthers makes n writes on the account that are no intent's (another
// tool's), newest of all, a second apart.
func mustOthers(t *testing.T, h *harness, n int) {
	t.Helper()
	for i := range n {
		h.env.Clock.Advance(time.Second)
		if _, err := h.provider().Post(context.Background(), provider.Write{Target: "t1", Body: []byte(fmt.Sprintf("another tool's %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
}

// pass runs one pass of d and says whether it ended deferred; any other
// error fails the test.
func pass(t *testing.T, h *harness, d *outbox.Deliverer) (deferred bool) {
	t.Helper()
	_, err := d.RunOnce(context.Background(), func(_ context.Context, dur time.Duration) error {
		h.env.Clock.Advance(dur)
		return nil
	})
	var def *outbox.DeferredError
	if errors.As(err, &def) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// A reconciliation that a rate limit stops part-way through a long,
// newest-first listing goes on from where it stopped in the next pass,
// rather than from the newest page again: a write in doubt older than a
// rate limit's worth of pages is decided, and every page is read once.
func TestAReadDeferredPartWayGoesOnFromWhereItStopped(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true})
		a := h.draft("t1", "deep")
		d := h.deliverer("w1")
		p := newNewestFirst(h, 2, 2)
		d.Provider = p
		h.srv.LoseAnswers(1)
		if s := h.step(d); s.IntentID != a.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("step %+v: want a's outcome unknown", s)
		}
		mustOthers(t, h, 10) // a is the 11th newest: on the 6th page, three windows deep
		h.env.Clock.Advance(provider.DefaultTimeout)
		var all []string
		for range 10 {
			deferred := pass(t, h, d)
			all = append(all, p.asked()...)
			if !deferred {
				break
			}
			h.env.Clock.Advance(time.Minute)
		}
		if got := h.intent(a.ID); got.State != outbox.StateLanded || h.srv.CountOf(a.Target, "", a.BodySHA256) != 1 {
			t.Fatalf("a is %s (%s), written %d times; want landed once", got.State, got.StateReason, h.srv.CountOf(a.Target, "", a.BodySHA256))
		}
		seen := map[string]bool{}
		for _, c := range all {
			if seen[c] {
				t.Fatalf("pages asked for %q: page %q read twice", all, c)
			}
			seen[c] = true
		}
	})
}

// What a read kept is for the writes in doubt it was to decide: a write
// in doubt made since (its answer lost too) lands at the head of the
// listing, which the kept position is past, so the next pass reads from
// the head again. So does a read under another scope (the lane's account
// or the targets it lists changed).
func TestAKeptReadIsDroppedWhenTheWritesInDoubtOrTheScopeChange(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true})
		a := h.draft("t1", "deep")
		c := h.draft("t1", "later")
		d := h.deliverer("w1")
		p := newNewestFirst(h, 2, 2)
		d.Provider = p
		h.srv.LoseAnswers(1)
		h.step(d)
		mustOthers(t, h, 10)
		h.env.Clock.Advance(provider.DefaultTimeout)
		if !pass(t, h, d) {
			t.Fatal("the first pass was not deferred")
		}
		if got := p.asked(); len(got) != 2 || got[0] != "" {
			t.Fatalf("first pass asked for %q; want the head and one more", got)
		}
		// Same read: it goes on.
		h.env.Clock.Advance(time.Minute)
		if !pass(t, h, d) {
			t.Fatal("the second pass was not deferred")
		}
		if got := p.asked(); len(got) == 0 || got[0] == "" {
			t.Fatalf("second pass asked for %q; want it to go on from the kept position", got)
		}
		// Another write in doubt, made meanwhile (its answer lost): it
		// lands at the head.
		h.env.Clock.Advance(time.Minute + time.Second) // w1's lease runs out
		mustLeaveInDoubtAt(t, h, c, func() {
			if _, err := h.provider().Post(context.Background(), provider.Write{Target: c.Target, Body: []byte(c.Body)}); err != nil {
				t.Fatal(err)
			}
		})
		h.env.Clock.Advance(time.Minute + provider.DefaultTimeout)
		pass(t, h, d)
		if got := p.asked(); len(got) == 0 || got[0] != "" {
			t.Fatalf("after another write went in doubt the pass asked for %q; want the head first", got)
		}
		// Another scope: the head again.
		h.env.Clock.Advance(time.Minute)
		pass(t, h, d) // goes on
		p.asked()
		p.setScope("account-2")
		h.env.Clock.Advance(time.Minute)
		pass(t, h, d)
		if got := p.asked(); len(got) == 0 || got[0] != "" {
			t.Fatalf("under another scope the pass asked for %q; want the head first", got)
		}
		p.setScope("account-1")
		for range 10 {
			h.env.Clock.Advance(time.Minute)
			if !pass(t, h, d) {
				break
			}
		}
		for _, in := range []outbox.Intent{a, c} {
			if got := h.intent(in.ID); got.State != outbox.StateLanded || h.srv.CountOf(in.Target, "", in.BodySHA256) != 1 {
				t.Fatalf("%s is %s (%s), written %d times; want landed once", in.Body, got.State, got.StateReason, h.srv.CountOf(in.Target, "", in.BodySHA256))
			}
		}
	})
}

// mustLeaveInDoubtAt journals an attempt at in (through the lane's own
// store, as a writer would), lets write make it remotely, and records the
// answer as lost.
func mustLeaveInDoubtAt(t *testing.T, h *harness, in outbox.Intent, write func()) {
	t.Helper()
	ctx := context.Background()
	l, err := h.st.Acquire(ctx, h.lane, "w2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	att, err := h.st.Begin(ctx, l, outbox.NewAttempt{IntentID: in.ID, Bound: provider.DefaultTimeout})
	if err != nil {
		t.Fatal(err)
	}
	write()
	if err := h.st.Finish(ctx, l, att, outbox.Result{Outcome: outbox.OutcomeUnknown, SentAt: h.env.Clock.Now(), Error: "connection lost"}); err != nil {
		t.Fatal(err)
	}
	if err := h.st.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// A write in doubt that lands at the head of the listing after a pass
// read the head, and before its attempt's deadline, is on no page a later
// pass reads from the kept position: the listing the passes make together
// is as old as its oldest page, which was read before the deadline, so its
// absence decides nothing. It stays unresolved, never sent again, until a
// read from the head shows it.
func TestAKeptReadIsAsOldAsItsOldestPage(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true})
		a := h.draft("t1", "held")
		d := h.deliverer("w1")
		p := newNewestFirst(h, 2, 3)
		d.Provider = p
		h.srv.HoldNext() // a lands later, at the head: no read shows it until then
		if s := h.step(d); s.IntentID != a.ID || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("step %+v: want a's outcome unknown", s)
		}
		mustOthers(t, h, 10) // ten seconds: a's deadline is still ahead
		if !pass(t, h, d) {
			t.Fatal("the first pass was not deferred")
		}
		h.env.Clock.Advance(5 * time.Second)
		h.srv.Land() // before a's deadline
		h.env.Clock.Advance(time.Minute)
		for range 10 {
			pass(t, h, d)
			if got := h.intent(a.ID); got.State == outbox.StateLanded {
				break
			}
			if n := h.srv.CountOf(a.Target, "", a.BodySHA256); n != 1 {
				t.Fatalf("a written %d times", n)
			}
			h.env.Clock.Advance(time.Minute)
		}
		if got := h.intent(a.ID); got.State != outbox.StateLanded || h.srv.CountOf(a.Target, "", a.BodySHA256) != 1 {
			t.Fatalf("a is %s (%s), written %d times; want landed once", got.State, got.StateReason, h.srv.CountOf(a.Target, "", a.BodySHA256))
		}
	})
}

// A kept cursor the provider no longer takes (it expired, say) does not
// stop the lane: the pass drops it and reads from the head.
func TestAKeptCursorTheProviderRefusesIsDropped(t *testing.T) {
	h := newHarness(t, sqltest.Backends()[0], laneOpts{noCount: true})
	a := h.draft("t1", "deep")
	d := h.deliverer("w1")
	p := newNewestFirst(h, 2, 2)
	d.Provider = p
	h.srv.LoseAnswers(1)
	h.step(d)
	mustOthers(t, h, 10)
	h.env.Clock.Advance(provider.DefaultTimeout)
	if !pass(t, h, d) {
		t.Fatal("the first pass was not deferred")
	}
	p.asked()
	p.mu.Lock()
	p.epoch++ // every cursor given so far expires
	p.mu.Unlock()
	h.env.Clock.Advance(time.Minute)
	if !pass(t, h, d) { // any error but a wait fails the test
		t.Fatal("the second pass was not deferred")
	}
	if got := p.asked(); len(got) != 2 || got[0] == "" || got[1] != "" {
		t.Fatalf("the pass after the kept cursor expired asked for %q; want the kept cursor, then the head", got)
	}
	for range 10 {
		h.env.Clock.Advance(time.Minute)
		if !pass(t, h, d) {
			break
		}
	}
	if got := h.intent(a.ID); got.State != outbox.StateLanded || h.srv.CountOf(a.Target, "", a.BodySHA256) != 1 {
		t.Fatalf("a is %s (%s); want landed once", got.State, got.StateReason)
	}
}
