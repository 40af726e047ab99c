package publish_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// mustChannel wires the outbox's hook into the fixture's publisher and
// delivers the source's pages to one channel.
func mustChannel(t *testing.T, f *fixture) *sqlstore.OutboxStore {
	t.Helper()
	ctx := context.Background()
	ob := f.db.Outbox()
	if _, err := ob.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "hook", Provider: "webhook"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ob.AddChannel(ctx, f.src.ID, "hook", "room-1", ""); err != nil {
		t.Fatal(err)
	}
	f.svc.Store = f.st.WithHooks(ob.PublishHook())
	return ob
}

// Two pages with the same title and the same summary, published to one
// channel: both marks commit, and each page has its own write to make
// (the default body names its page).
func TestTwoPagesWithTheSameTextBothPublish(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		ob := mustChannel(t, f)
		for _, key := range []string{"c1", "c2"} {
			ev := f.mustEvent(t, key, "bump dependencies", "evidence of "+key)
			s := f.mustAccept(t, ev, "Bumps dependencies.", "m1")
			if _, err := f.svc.Publish(ctx, s.ID); err != nil {
				t.Fatalf("publish %s: %v", key, err)
			}
			mustPublished(t, f.mustSummary(t, s.ID), true)
		}
		ins, err := ob.ListIntents(ctx, outbox.IntentFilter{Lane: "hook"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ins) != 2 || ins[0].State != outbox.StatePending || ins[1].State != outbox.StatePending || ins[0].Body == ins[1].Body {
			t.Fatalf("intents %+v: want two pending writes with different bodies", ins)
		}
	})
}

// A true collision (the same target and body as an intent drafted by
// hand) does not roll the publication back: the page's intent is kept,
// visibly, in collision and out of reconciliation; an operator retires it,
// or retires the other and revives it.
func TestACollidingDraftIsAVisibleReversibleState(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		ob := mustChannel(t, f)
		ev := f.mustEvent(t, "c1", "bump dependencies", "evidence")
		s := f.mustAccept(t, ev, "Bumps dependencies.", "m1")
		plan, err := f.st.Prepare(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		body := outbox.PublicationBody(tidemark.Publication{PageID: plan.PageID, Title: ev.Title, Summary: s.Text})
		manual, err := ob.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room-1", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Publish(ctx, s.ID); err != nil {
			t.Fatalf("publish over a colliding intent: %v", err)
		}
		mustPublished(t, f.mustSummary(t, s.ID), true)
		col, err := ob.ListIntents(ctx, outbox.IntentFilter{Lane: "hook", State: outbox.StateCollision})
		if err != nil || len(col) != 1 || col[0].PageID != plan.PageID || col[0].IdempotencyKey == manual.IdempotencyKey {
			t.Fatalf("collisions %+v %v", col, err)
		}
		// Publishing the same summary again drafts nothing new.
		if _, err := f.svc.Publish(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if all, _ := ob.ListIntents(ctx, outbox.IntentFilter{Lane: "hook"}); len(all) != 2 {
			t.Fatalf("%d intents after publishing again", len(all))
		}
		// Out of reconciliation's join: the lane's intents are the manual one.
		lease, err := ob.Acquire(ctx, "hook", "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		joined, err := ob.Intents(ctx, lease)
		if err != nil || len(joined) != 1 || joined[0].ID != manual.ID {
			t.Fatalf("reconciliation would join %+v %v", joined, err)
		}
		if err := ob.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
		// Reversible: not revivable while its twin lives; retired, revived
		// back to collision; sent once the twin is retired.
		if _, err := ob.Revive(ctx, col[0].ID, "ops", "post it"); err == nil {
			t.Fatal("a collision was revived while its twin is pending")
		}
		if got, err := ob.Retire(ctx, col[0].ID, "ops", "a duplicate"); err != nil || got.State != outbox.StateRetired {
			t.Fatalf("retire: %+v %v", got, err)
		}
		if got, err := ob.Revive(ctx, col[0].ID, "ops", "back"); err != nil || got.State != outbox.StateCollision {
			t.Fatalf("revive while the twin lives: %+v %v", got, err)
		}
		if _, err := ob.Retire(ctx, manual.ID, "ops", "the page's own is better"); err != nil {
			t.Fatal(err)
		}
		if got, err := ob.Revive(ctx, col[0].ID, "ops", "post it"); err != nil || got.State != outbox.StatePending {
			t.Fatalf("revive after the twin retired: %+v %v", got, err)
		}
	})
}

// A channel's template shapes what its lane is sent, in the lane's
// markup; a template that would fail on every change is refused when it
// is set, and the channel keeps the one it had.
func TestAChannelsTemplateShapesItsDraft(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		ob := f.db.Outbox()
		if _, err := ob.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "chat", Provider: "discord"}}); err != nil {
			t.Fatal(err)
		}
		c, err := ob.AddChannel(ctx, f.src.ID, "chat", "channel", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ob.SetChannelTemplate(ctx, c.ID, "{{.Author}}", "ada"); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("a template reading a field no change has: %v", err)
		}
		if c, err = ob.SetChannelTemplate(ctx, c.ID, "New in {{.Source}}: {{.Title}} ({{.Page}})", "ada"); err != nil || c.Template == "" {
			t.Fatalf("set template: %+v %v", c, err)
		}
		if cp, err := ob.ChannelPreview(ctx, c.ID); err != nil || !cp.Sample || cp.Message.Title == "" {
			t.Fatalf("a preview before any page is published: %+v %v", cp, err)
		}
		if _, err := ob.ChannelPreview(ctx, "no-such-channel"); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("the preview of a channel that is not there: %v", err)
		}
		f.svc.Store = f.st.WithHooks(ob.PublishHook())
		ev := f.mustEvent(t, "c1", "bump *all* deps", "evidence")
		s := f.mustAccept(t, ev, "Bumps dependencies.", "m1")
		p, err := f.svc.Publish(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		ins, err := ob.ListIntents(ctx, outbox.IntentFilter{Lane: "chat"})
		if err != nil || len(ins) != 1 {
			t.Fatalf("intents %+v %v", ins, err)
		}
		if want := "New in " + f.src.Name + ": bump \\*all\\* deps (" + p.PageID + ")"; ins[0].Body != want {
			t.Fatalf("drafted %q, want %q", ins[0].Body, want)
		}
		// The preview of the channel renders the same page the same way.
		cp, err := ob.ChannelPreview(ctx, c.ID)
		if err != nil || cp.Sample || cp.Kind != "discord" {
			t.Fatalf("preview %+v %v", cp, err)
		}
		r, err := outbox.Preview(cp.Kind, cp.Channel.Template, cp.Message)
		if err != nil || r.Body != ins[0].Body {
			t.Fatalf("the preview renders %q (%v), the draft was %q", r.Body, err, ins[0].Body)
		}
	})
}

// An intent drafted by a publication is sent only while what it announces
// stands: the writer retires, instead of sending, an intent whose summary
// was rejected, or whose source (and so its summary) was removed, and says
// why; nothing is journaled for it and the lane goes on.
func TestTheIntentOfARejectedOrRemovedSummaryIsNeverSent(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		ob := mustChannel(t, f)
		var sums []string
		for _, key := range []string{"c1", "c2"} {
			ev := f.mustEvent(t, key, "change "+key, "evidence of "+key)
			s := f.mustAccept(t, ev, "Change "+key+".", "m1")
			if _, err := f.svc.Publish(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
			sums = append(sums, s.ID)
		}
		ins, err := ob.ListIntents(ctx, outbox.IntentFilter{Lane: "hook", State: outbox.StatePending})
		if err != nil || len(ins) != 2 {
			t.Fatalf("pending intents %+v %v", ins, err)
		}
		if _, err := f.st.Reject(ctx, sums[0], "wrong"); err != nil {
			t.Fatal(err)
		}
		// Retired by the rejection itself, not when delivery reaches it.
		if got, err := ob.Intent(ctx, ins[0].ID); err != nil || got.State != outbox.StateRetired || !strings.Contains(got.StateReason, "rejected") {
			t.Fatalf("right after the rejection its intent is %+v %v, want retired saying why", got, err)
		}
		mustNotRevive(t, ob, ins[0].ID, "rejected")
		lease, err := ob.Acquire(ctx, "hook", "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ob.Begin(ctx, lease, outbox.NewAttempt{IntentID: ins[0].ID, Bound: time.Minute}); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("journaling the intent of a rejected summary: %v, want a conflict (not sent)", err)
		}
		got, err := ob.Intent(ctx, ins[0].ID)
		if err != nil || got.State != outbox.StateRetired || !strings.Contains(got.StateReason, "rejected") {
			t.Fatalf("the rejected summary's intent: %+v %v, want retired saying why", got, err)
		}
		acts, err := ob.Actions(ctx, ins[0].ID)
		if err != nil || len(acts) != 1 || acts[0].Action != "retire" || acts[0].Actor != "tidemark" {
			t.Fatalf("its audit: %+v %v", acts, err)
		}
		// The other page's intent stands: it is journaled as before.
		att, err := ob.Begin(ctx, lease, outbox.NewAttempt{IntentID: ins[1].ID, Bound: time.Minute})
		if err != nil {
			t.Fatalf("journal a standing intent: %v", err)
		}
		if err := ob.Finish(ctx, lease, att, outbox.Result{Outcome: outbox.OutcomeLanded, SentAt: f.env.Clock.Now()}); err != nil {
			t.Fatal(err)
		}
		// A third page, then its source removed: its intent is never sent.
		ev := f.mustEvent(t, "c3", "change c3", "evidence of c3")
		s := f.mustAccept(t, ev, "Change c3.", "m1")
		if _, err := f.svc.Publish(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		third, err := ob.ListIntents(ctx, outbox.IntentFilter{Lane: "hook", State: outbox.StatePending})
		if err != nil || len(third) != 1 {
			t.Fatalf("pending after the third page: %+v %v", third, err)
		}
		if rm, err := f.db.Ingest().RemoveSource(ctx, f.src.Name, "ops", true); err != nil || rm.IntentsRetired != 1 {
			t.Fatalf("remove the source: %+v %v, want its one intent not sent retired", rm, err)
		}
		if _, err := ob.Begin(ctx, lease, outbox.NewAttempt{IntentID: third[0].ID, Bound: time.Minute}); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("journaling the intent of a removed source's page: %v, want a conflict (not sent)", err)
		}
		if got, err := ob.Intent(ctx, third[0].ID); err != nil || got.State != outbox.StateRetired || !strings.Contains(got.StateReason, "was removed") {
			t.Fatalf("the removed source's intent: %+v %v, want retired saying why", got, err)
		}
		mustNotRevive(t, ob, third[0].ID, "was removed")
	})
}

// mustNotRevive checks that an operator cannot bring back an intent whose
// origin is withdrawn: the revive is refused, saying why, rather than
// accepted and undone by the writer.
func mustNotRevive(tb testing.TB, ob *sqlstore.OutboxStore, id, why string) {
	tb.Helper()
	ctx := context.Background()
	if got, err := ob.Revive(ctx, id, "ops", "oops"); !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), why) {
		tb.Fatalf("revive of an intent whose origin %s: %+v %v, want a conflict saying so", why, got, err)
	}
	if got, err := ob.Intent(ctx, id); err != nil || got.State != outbox.StateRetired {
		tb.Fatalf("after the refused revive: %+v %v, want still retired", got, err)
	}
}

// A channel announces what is published after it was added: a page
// published before is not announced when a later round republishes it
// (relinked beside a new change, restyled), only the new change is.
func TestAChannelDoesNotAnnounceOldPagesRepublished(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		f.settle(t, f.src, tidemark.Item{Key: "c1", Title: "an old change", Evidence: []byte("a")})
		f.mustSummarizeAndPublish(t)
		f.env.Clock.Advance(time.Minute)
		ob := mustChannel(t, f)
		f.env.Clock.Advance(time.Minute)
		f.settle(t, f.src, tidemark.Item{Key: "c2", Title: "a new change", Evidence: []byte("b")})
		rep := f.mustSummarizeAndPublish(t)
		if rep.Published != 1 || rep.Relinked != 1 {
			t.Fatalf("the round: %+v, want the new page published and the old one relinked", rep)
		}
		ins, err := ob.ListIntents(ctx, outbox.IntentFilter{Lane: "hook"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ins) != 1 || !strings.Contains(ins[0].Body, "a new change") {
			t.Fatalf("intents %+v: want the new change's only", ins)
		}
	})
}

// Switching back to a summarizer republishes the summary it made, which was
// published before: a channel added since does not announce it, as it does
// not announce any page published before it was added.
func TestAChannelDoesNotAnnounceAReinstatedSummary(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		f.settle(t, f.src, tidemark.Item{Key: "c1", Title: "a change", Evidence: []byte("a")})
		a, m := &counting{model: "a"}, &counting{model: "m"}
		round := func(sum *counting) {
			t.Helper()
			if _, err := f.svc.Summarize(ctx, sum, 100); err != nil {
				t.Fatal(err)
			}
			if _, err := f.svc.PublishPending(ctx, 100); err != nil {
				t.Fatal(err)
			}
			f.env.Clock.Advance(time.Minute)
		}
		round(a)
		ob := mustChannel(t, f)
		f.env.Clock.Advance(time.Minute)
		round(m) // a new summary: announced
		round(a) // a's, published before the channel: not announced
		ins, err := ob.ListIntents(ctx, outbox.IntentFilter{Lane: "hook"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ins) != 1 || !strings.Contains(ins[0].Body, "m says") {
			t.Fatalf("intents %+v: want m's summary's only", ins)
		}
	})
}

// A channel's preview is of its source's latest change, as the wiki lists
// them (by when each happened), not of the page written last: a new
// summary of an older change republishes that page later, and the newest
// change is still the one shown.
func TestAChannelsPreviewIsOfTheLatestChange(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		ob := f.db.Outbox()
		if _, err := ob.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "chat", Provider: "discord"}}); err != nil {
			t.Fatal(err)
		}
		c, err := ob.AddChannel(ctx, f.src.ID, "chat", "channel", "")
		if err != nil {
			t.Fatal(err)
		}
		old := f.mustEvent(t, "c1", "the older change", "evidence 1")
		newest := f.mustEvent(t, "c2", "the newest change", "evidence 2")
		for _, ev := range []tidemark.Event{old, newest} {
			if _, err := f.svc.Publish(ctx, f.mustAccept(t, ev, "Summary of "+ev.Title+".", "m1").ID); err != nil {
				t.Fatal(err)
			}
		}
		f.env.Clock.Advance(time.Hour)
		if _, err := f.svc.Publish(ctx, f.mustAccept(t, old, "A better summary of the older change.", "m2").ID); err != nil {
			t.Fatal(err)
		}
		cp, err := ob.ChannelPreview(ctx, c.ID)
		if err != nil || cp.Sample || cp.Message.Title != "the newest change" {
			t.Fatalf("preview of %q (%v), want the newest change", cp.Message.Title, err)
		}
	})
}
