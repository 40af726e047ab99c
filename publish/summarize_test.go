package publish_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize"
)

// downAfter summarizes n events, then its endpoint is down.
type downAfter struct {
	n, calls int
}

func (d *downAfter) Identity() (string, string) { return "m", "p1" }
func (d *downAfter) Summarize(ctx context.Context, in summarize.Input) (summarize.Draft, error) {
	d.calls++
	if d.calls > d.n {
		return summarize.Draft{}, fmt.Errorf("summarize %s: %w: connection refused", in.Event.ID, tidemark.ErrUnavailable)
	}
	return summarize.Draft{Text: "summary of " + in.Event.Title, Model: "m", PromptVersion: "p1"}, nil
}

// A summarizer that cannot be reached stops the round at its first
// unavailable answer instead of failing every remaining event; what was
// accepted before stays accepted.
func TestSummarizeStopsWhenSummarizerUnavailable(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		f := mustFixture(t, b, mem.New())
		for i := range 5 {
			f.mustEvent(t, fmt.Sprintf("k%d", i), fmt.Sprintf("change %d", i), fmt.Sprintf("evidence %d", i))
		}
		sum := &downAfter{n: 2}
		rep, err := f.svc.Summarize(context.Background(), sum, 100)
		if !errors.Is(err, tidemark.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
		if sum.calls != 3 {
			t.Errorf("summarizer called %d times, want 3 (stop at the first unavailable answer)", sum.calls)
		}
		if rep.Accepted != 2 || rep.Failed != 1 || rep.Considered != 3 {
			t.Errorf("report %+v, want 2 accepted, 1 failed of 3 considered", rep)
		}
		pub, err := f.svc.PublishPending(context.Background(), 100)
		if err != nil || pub.Published != 2 {
			t.Fatalf("publish after the outage: %+v, %v; want the 2 accepted summaries published", pub, err)
		}
	})
}

// poisoned refuses the events whose title it names with an unavailable
// answer (a 500 for that input, a crash of a local model server), and
// summarizes every other; down refuses every event (an outage).
type poisoned struct {
	titles map[string]bool
	down   bool
	calls  int
}

func (p *poisoned) Identity() (string, string) { return "m", "p1" }
func (p *poisoned) Summarize(ctx context.Context, in summarize.Input) (summarize.Draft, error) {
	p.calls++
	if p.down || p.titles[in.Event.Title] {
		return summarize.Draft{}, fmt.Errorf("summarize %s: %w: HTTP 500", in.Event.ID, tidemark.ErrUnavailable)
	}
	return summarize.Draft{Text: "summary of " + in.Event.Title, Model: "m", PromptVersion: "p1"}, nil
}

// One event the endpoint always refuses does not hold back the newer ones
// for ever: the rounds stop at it, naming it, until it has failed
// publish.HoldAfter rounds in a row; then it is passed over, and once a
// later event is summarized it is held (left out of the rounds for a
// while) and reported by name. Its hold ends, it is tried again, and held
// longer if it fails again.
func TestSummarizeHoldsAnEventTheSummarizerAlwaysRefuses(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		var evs []tidemark.Event
		for i := range 5 {
			evs = append(evs, f.mustEvent(t, fmt.Sprintf("k%d", i), fmt.Sprintf("change %d", i), fmt.Sprintf("evidence %d", i)))
		}
		poison := evs[1]
		sum := &poisoned{titles: map[string]bool{poison.Title: true}}
		for round := 1; round < publish.HoldAfter; round++ {
			sum.calls = 0
			rep, err := f.svc.Summarize(ctx, sum, 100)
			if !errors.Is(err, tidemark.ErrUnavailable) || !strings.Contains(err.Error(), poison.ID) {
				t.Fatalf("round %d: %v; want ErrUnavailable naming event %s", round, err, poison.ID)
			}
			if want := fmt.Sprintf("%d rounds in a row", round); round > 1 && !strings.Contains(err.Error(), want) {
				t.Errorf("round %d: %v; want it to say %q", round, err, want)
			}
			want := 1 // the refused event, first of the events left
			if round == 1 {
				want = 2 // the event before it, then it
			}
			if sum.calls != want || len(rep.Held) != 0 {
				t.Fatalf("round %d: %d calls, held %v; want to stop at the refused event", round, sum.calls, rep.Held)
			}
		}
		rep, err := f.svc.Summarize(ctx, sum, 100)
		if err != nil {
			t.Fatalf("round %d: %v; want the refused event passed over", publish.HoldAfter, err)
		}
		if rep.Accepted != 3 || rep.Failed != 1 || len(rep.Held) != 1 || rep.Held[0].EventID != poison.ID ||
			rep.Held[0].Failures != publish.HoldAfter || rep.Held[0].Until.Sub(f.env.Clock.Now()) != publish.HoldMin {
			t.Fatalf("round %d: %+v; want 3 accepted and event %s held for %v", publish.HoldAfter, rep, poison.ID, publish.HoldMin)
		}
		if !strings.Contains(strings.Join(rep.Errors, "\n"), "held until") {
			t.Errorf("the report's errors do not say the event is held: %q", rep.Errors)
		}
		heldUntil := rep.Held[0].Until
		// Held: the next rounds leave it out, and say so: it is not
		// summarized, which a round that looked complete would hide.
		sum.calls = 0
		rep, err = f.svc.Summarize(ctx, sum, 100)
		if err != nil || rep.Considered != 0 || sum.calls != 0 {
			t.Fatalf("round while held: %+v, %v, %d calls; want nothing to do", rep, err, sum.calls)
		}
		if h := rep.Holding; len(h) != 1 || h[0].EventID != poison.ID || !h[0].Until.Equal(heldUntil) || h[0].Failures != publish.HoldAfter {
			t.Fatalf("round while held: holding %+v; want event %s until %v", h, poison.ID, heldUntil)
		}
		undone := publish.Round{Summarized: rep}.Totals().Undone()
		if len(undone) != 1 || !strings.Contains(undone[0], "1 event held until "+fieldtext.Day(heldUntil)) {
			t.Fatalf("round while held left undone %q; want the held event named", undone)
		}
		// A newer event arrives; the hold ends; the event fails again and
		// is held twice as long.
		f.mustEvent(t, "k5", "change 5", "evidence 5")
		f.env.Clock.Advance(publish.HoldMin)
		rep, err = f.svc.Summarize(ctx, sum, 100)
		if err != nil || rep.Accepted != 1 || len(rep.Held) != 1 || rep.Held[0].Until.Sub(f.env.Clock.Now()) != 2*publish.HoldMin {
			t.Fatalf("round after the hold: %+v, %v; want the new event accepted and %s held for %v", rep, err, poison.ID, 2*publish.HoldMin)
		}
		// Answered at last: summarized, and its failures forgotten.
		f.env.Clock.Advance(2 * publish.HoldMin)
		sum.titles = nil
		if rep, err := f.svc.Summarize(ctx, sum, 100); err != nil || rep.Accepted != 1 {
			t.Fatalf("round once answered: %+v, %v", rep, err)
		}
	})
}

// A whole-endpoint outage (every event refused) still stops every round
// at its first refusals: however long it lasts, a round asks about a few
// events at most and holds none, and the first round after it summarizes
// every event.
func TestSummarizeOutageHoldsNothing(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		for i := range 20 {
			f.mustEvent(t, fmt.Sprintf("k%d", i), fmt.Sprintf("change %d", i), fmt.Sprintf("evidence %d", i))
		}
		sum := &poisoned{down: true}
		for round := range 30 {
			sum.calls = 0
			rep, err := f.svc.Summarize(ctx, sum, 100)
			if !errors.Is(err, tidemark.ErrUnavailable) {
				t.Fatalf("outage round %d: %v, want ErrUnavailable", round, err)
			}
			if sum.calls > 1+publish.MaxPassedOver || len(rep.Held) != 0 {
				t.Fatalf("outage round %d: %d calls, held %v; want at most %d calls and nothing held", round, sum.calls, rep.Held, 1+publish.MaxPassedOver)
			}
			f.env.Clock.Advance(time.Minute)
		}
		sum.down = false
		if rep, err := f.svc.Summarize(ctx, sum, 100); err != nil || rep.Accepted != 20 {
			t.Fatalf("after the outage: %+v, %v; want every event accepted", rep, err)
		}
	})
}

// failing fails every event with err.
type failing struct {
	err   error
	calls int
}

func (f *failing) Identity() (string, string) { return "m", "p1" }
func (f *failing) Summarize(ctx context.Context, in summarize.Input) (summarize.Draft, error) {
	f.calls++
	return summarize.Draft{}, fmt.Errorf("summarize %s: %w", in.Event.ID, f.err)
}

// A summarizer whose configuration the endpoint refuses (a wrong key, an
// unknown model) stops the round at the first refusal, as configuration
// to fix (tidemark.ErrInvalid), instead of asking once per event; a round
// in which every event failed and none was accepted says so with an error
// (tidemark.ErrUnavailable), never a success.
func TestSummarizeRoundThatAcceptedNothingFails(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		for i := range 4 {
			f.mustEvent(t, fmt.Sprintf("k%d", i), fmt.Sprintf("change %d", i), fmt.Sprintf("evidence %d", i))
		}
		refused := &failing{err: tidemark.Invalidf("TIDEMARK_OPENAI_API_KEY", "", "the endpoint refused it (HTTP 401)")}
		rep, err := f.svc.Summarize(ctx, refused, 100)
		if !errors.Is(err, tidemark.ErrInvalid) || refused.calls != 1 || rep.Failed != 1 {
			t.Fatalf("refused key: %+v, %v, %d calls; want ErrInvalid after 1 call", rep, err, refused.calls)
		}
		empty := &failing{err: fmt.Errorf("the endpoint returned an empty summary: %w", summarize.ErrUnusable)}
		rep, err = f.svc.Summarize(ctx, empty, 100)
		if !errors.Is(err, tidemark.ErrUnavailable) || rep.Failed != 4 || rep.Accepted != 0 {
			t.Fatalf("every answer empty: %+v, %v; want ErrUnavailable with 4 failed", rep, err)
		}
		if !strings.Contains(err.Error(), "empty summary") {
			t.Errorf("the round's error does not say why: %v", err)
		}
	})
}

// counting summarizes every event under its model, with a text of its own
// each call (as a model's answers differ), and counts its calls.
type counting struct {
	model string
	calls int
}

func (c *counting) Identity() (string, string) { return c.model, "p1" }
func (c *counting) Summarize(ctx context.Context, in summarize.Input) (summarize.Draft, error) {
	c.calls++
	return summarize.Draft{Text: fmt.Sprintf("%s says %s (call %d)", c.model, in.Event.Title, c.calls), Model: c.model, PromptVersion: "p1"}, nil
}

// Switching summarizer makes new summaries that supersede the old ones,
// switching back too: the summary the first summarizer made is current
// again, without asking it again (its identity is taken, and a model
// would answer other text), and its page shows it.
func TestSummarizeSwitchingBackReinstates(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		ev := f.mustEvent(t, "k1", "change one", "evidence one")
		a, m := &counting{model: "a"}, &counting{model: "m"}
		round := func(sum *counting, wantReinstated int) publish.SummarizeReport {
			t.Helper()
			rep, err := f.svc.Summarize(ctx, sum, 100)
			if err != nil || rep.Considered != 1 || rep.Reinstated != wantReinstated {
				t.Fatalf("summarize with %s: %+v, %v; want 1 considered, %d reinstated", sum.model, rep, err, wantReinstated)
			}
			if _, err := f.svc.PublishPending(ctx, 100); err != nil {
				t.Fatal(err)
			}
			return rep
		}
		round(a, 0)
		round(m, 0)
		sums, err := f.st.Summaries(ctx, publish.SummaryFilter{EventID: ev.ID})
		if err != nil || len(sums) != 2 {
			t.Fatalf("summaries: %v, %v", sums, err)
		}
		first := sums[1]
		round(a, 1)
		if a.calls != 1 {
			t.Errorf("summarizer a called %d times, want 1: switching back reinstates its summary", a.calls)
		}
		got := f.mustSummary(t, first.ID)
		if !got.Current || got.PublishedAt == nil {
			t.Fatalf("a's summary after switching back: %+v, want current and published", got)
		}
		page, ok, err := f.st.PublishedPage(ctx, ev.ID)
		if err != nil || !ok {
			t.Fatalf("published page of %s: %v %v", ev.ID, ok, err)
		}
		f.mustPageShows(t, page, first.Text, "m says")
		var out strings.Builder
		if err := (publish.Round{Summarized: publish.SummarizeReport{Reinstated: 1}}).WriteText(&out); err != nil || !strings.Contains(out.String(), "1 reinstated") {
			t.Errorf("a round that reinstated a summary says %q, want it counted", out.String())
		}
		// Back to m: its summary is reinstated in turn, without a call.
		round(m, 1)
		if m.calls != 1 {
			t.Errorf("summarizer m called %d times, want 1", m.calls)
		}
	})
}

// hook summarizes every event under model "m", calling during first
// (once) before it answers.
type hook struct {
	text   string
	calls  int
	during func()
}

func (h *hook) Identity() (string, string) { return "m", "p1" }
func (h *hook) Summarize(ctx context.Context, in summarize.Input) (summarize.Draft, error) {
	h.calls++
	if h.during != nil {
		d := h.during
		h.during = nil
		d()
	}
	return summarize.Draft{Text: h.text + " " + in.Event.Title, Model: "m", PromptVersion: "p1"}, nil
}

// Concurrent publishers do not pay the model twice for one event: while
// one asks the summarizer about it, the others pass it over (claimed
// elsewhere, no failure); and a publisher whose claim expired while its
// model was slow, and which lost the race to another's summary of the same
// identity, counts it unchanged rather than failed.
func TestSummarizeConcurrentPublishersAskOnce(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		ev := f.mustEvent(t, "k1", "change one", "evidence one")
		other := &publish.Service{Store: f.st, Objects: f.objs, Holder: "worker-b"}
		f.svc.Holder = "worker-a"

		var during publish.SummarizeReport
		var duringErr error
		bsum := &hook{text: "B says"}
		asum := &hook{text: "A says", during: func() { during, duringErr = other.Summarize(ctx, bsum, 100) }}
		rep, err := f.svc.Summarize(ctx, asum, 100)
		if err != nil || rep.Accepted != 1 || rep.Failed != 0 {
			t.Fatalf("worker a: %+v, %v; want 1 accepted", rep, err)
		}
		if duringErr != nil || bsum.calls != 0 || during.ClaimedElsewhere != 1 || during.Failed != 0 || len(during.Errors) != 0 {
			t.Fatalf("worker b while a summarized: %+v, %v, %d calls; want the event claimed elsewhere, no call, no failure", during, duringErr, bsum.calls)
		}
		// It says whose claim it met, and until when.
		if e := during.Elsewhere; len(e) != 1 || e[0].EventID != ev.ID || e[0].Title != ev.Title || e[0].Holder != "worker-a" ||
			!e[0].Until.After(f.env.Clock.Now()) || e[0].Until.After(f.env.Clock.Now().Add(publish.SummaryClaimTTL)) {
			t.Fatalf("worker b's report names %+v, want worker-a's claim on %s until within %v", e, ev.ID, publish.SummaryClaimTTL)
		}

		// A claim that expired while the model was slow: both ask, and the
		// one that accepts second lost a race, which is no failure.
		ev2 := f.mustEvent(t, "k2", "change two", "evidence two")
		bsum = &hook{text: "B says"}
		asum = &hook{text: "A says", during: func() {
			f.env.Clock.Advance(publish.SummaryClaimTTL + time.Second)
			during, duringErr = other.Summarize(ctx, bsum, 100)
		}}
		rep, err = f.svc.Summarize(ctx, asum, 100)
		if duringErr != nil || during.Accepted != 1 || bsum.calls != 1 {
			t.Fatalf("worker b after a's claim expired: %+v, %v", during, duringErr)
		}
		if err != nil || rep.Failed != 0 || rep.Unchanged != 1 || len(rep.Errors) != 0 {
			t.Fatalf("worker a, which lost the race: %+v, %v; want it unchanged, not failed", rep, err)
		}
		cur, err := f.st.CurrentSummary(ctx, ev2.ID)
		if err != nil || f.mustSummary(t, cur).Text != "B says change two" {
			t.Fatalf("event two's summary: %s %v, want b's", cur, err)
		}
		_ = ev
	})
}

// refusing refuses the events whose title it names with an ordinary
// answer about that event (a 400, an unusable answer), and summarizes
// every other.
type refusing struct {
	titles map[string]bool
	calls  int
}

func (r *refusing) Identity() (string, string) { return "m", "p1" }
func (r *refusing) Summarize(ctx context.Context, in summarize.Input) (summarize.Draft, error) {
	r.calls++
	if r.titles[in.Event.Title] {
		return summarize.Draft{}, fmt.Errorf("summarize %s: HTTP 400 content filter: %w", in.Event.ID, summarize.ErrUnusable)
	}
	return summarize.Draft{Text: "summary of " + in.Event.Title, Model: "m", PromptVersion: "p1"}, nil
}

// An event the summarizer refuses with an ordinary answer about it (which
// fails that event only) is not asked about again every round for ever:
// once it has failed HoldAfter rounds in a row while the summarizer has
// summarized other events since its first failure, it is held as an
// unavailable one is, even when it is the only event left.
func TestSummarizeHoldsAnEventRefusedEveryRound(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		bad := f.mustEvent(t, "k0", "change 0", "evidence 0")
		f.mustEvent(t, "k1", "change 1", "evidence 1")
		sum := &refusing{titles: map[string]bool{bad.Title: true}}
		for round := 1; round <= publish.HoldAfter; round++ {
			f.env.Clock.Advance(time.Minute)
			rep, err := f.svc.Summarize(ctx, sum, 100)
			// Alone in its round, its failure is the round's: not a success.
			if (round == 1) != (err == nil) || rep.Failed != 1 || round > 1 && !errors.Is(err, publish.ErrNothingSummarized) {
				t.Fatalf("round %d: %+v, %v; want the event failed, the round going on", round, rep, err)
			}
			if wantHeld := round == publish.HoldAfter; (len(rep.Held) == 1) != wantHeld {
				t.Fatalf("round %d: held %+v, want held %v", round, rep.Held, wantHeld)
			}
		}
		sum.calls = 0
		f.env.Clock.Advance(time.Minute)
		if rep, err := f.svc.Summarize(ctx, sum, 100); err != nil || rep.Considered != 0 || sum.calls != 0 {
			t.Fatalf("round while held: %+v, %v, %d calls; want nothing asked", rep, err, sum.calls)
		}
		// Every event refused alike (the configuration, not the event):
		// nothing held.
		g := mustFixture(t, b, mem.New())
		var titles = map[string]bool{}
		for i := range 3 {
			titles[g.mustEvent(t, fmt.Sprintf("k%d", i), fmt.Sprintf("change %d", i), fmt.Sprintf("evidence %d", i)).Title] = true
		}
		all := &refusing{titles: titles}
		for round := 1; round <= publish.HoldAfter+1; round++ {
			g.env.Clock.Advance(time.Minute)
			rep, _ := g.svc.Summarize(ctx, all, 100)
			if len(rep.Held) != 0 || rep.Considered != 3 {
				t.Fatalf("round %d with every event refused: %+v; want all considered, none held", round, rep)
			}
		}
	})
}

// afterUnsummarized runs hook once, just after the first Unsummarized
// listing: a round has taken its list of events to summarize.
type afterUnsummarized struct {
	publish.Store
	hook func()
	done bool
}

func (a *afterUnsummarized) Unsummarized(ctx context.Context, model, prompt string, limit int) ([]tidemark.Event, error) {
	evs, err := a.Store.Unsummarized(ctx, model, prompt, limit)
	if !a.done {
		a.done = true
		a.hook()
	}
	return evs, err
}

// Another worker summarizes an event after this round listed it and
// before it takes it up: the round finds that summary current. It made
// nothing current again, so it counts the event unchanged (as a lost
// race), not reinstated, and does not ask the summarizer.
func TestSummarizeFindingAnotherWorkersSummaryIsNoReinstatement(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		f.mustEvent(t, "k1", "change one", "evidence one")
		other := &publish.Service{Store: f.st, Objects: f.objs, Holder: "worker-b"}
		bsum, asum := &counting{model: "m"}, &counting{model: "m"}
		svc := &publish.Service{Store: &afterUnsummarized{Store: f.st, hook: func() {
			if rep, err := other.Summarize(ctx, bsum, 100); err != nil || rep.Accepted != 1 {
				t.Errorf("worker b: %+v, %v", rep, err)
			}
		}}, Objects: f.objs, Holder: "worker-a"}
		rep, err := svc.Summarize(ctx, asum, 100)
		if err != nil || rep.Considered != 1 || rep.Reinstated != 0 || rep.Unchanged != 1 || rep.Accepted != 0 || asum.calls != 0 {
			t.Fatalf("worker a: %+v, %v, %d calls; want the event unchanged, not reinstated, no call", rep, err, asum.calls)
		}
	})
}
