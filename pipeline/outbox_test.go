package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/outbox/providertest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func openBackend(t *testing.T, b sqltest.Backend) *Pipeline {
	t.Helper()
	cfg := Defaults()
	cfg.Home, cfg.Database = t.TempDir(), b.NewURL(t)
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func mustAddLane(t *testing.T, p *Pipeline, name, kind string, ch outbox.LaneChange) outbox.LaneView {
	t.Helper()
	v, err := p.AddLane(context.Background(), name, kind, ch, "ada")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// mustHookChannel adds a webhook lane "hook", a source "docs" and a channel
// of docs to "room" on hook, added by ada.
func mustHookChannel(t *testing.T, p *Pipeline) outbox.Channel {
	t.Helper()
	ctx := context.Background()
	mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/h"}})
	if _, err := p.DB().Ingest().AddSource(ctx, ingest.NewSource{Name: "docs", Kind: "git", Location: "/tmp/docs", Interval: DefaultInterval, RetryBudget: 3}); err != nil {
		t.Fatal(err)
	}
	c, err := p.AddChannel(ctx, outbox.ChannelRef{Source: "docs", Lane: "hook", Target: "room"}, "ada")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func actions(t *testing.T, p *Pipeline, lane string) []string {
	t.Helper()
	as, err := p.LaneActions(context.Background(), lane)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(as) - 1; i >= 0; i-- {
		out = append(out, as[i].Action+" by "+as[i].Actor+": "+as[i].Detail)
	}
	return out
}

// A lane with intents not yet delivered or decided is not removed unless
// forced; the refusal says what would be lost, and changes nothing.
func TestRemoveLaneRefusesWhatWouldBeLost(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/h"}})
		src, err := p.DB().Ingest().AddSource(ctx, ingest.NewSource{Name: "docs", Kind: "git", Location: "/tmp/docs", Interval: DefaultInterval, RetryBudget: 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.AddChannel(ctx, outbox.ChannelRef{Source: src.Name, Lane: "hook", Target: "room"}, "ada"); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, body := range []string{"one", "two"} {
			in, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: body})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, in.ID)
		}
		_, err = p.RemoveLane(ctx, "hook", false, "bob")
		if !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), "2 pending") || !strings.Contains(err.Error(), "remove it anyway with force") {
			t.Fatalf("remove with 2 pending intents: %v, want a conflict naming 2 pending and force", err)
		}
		if v, err := p.Lane(ctx, "hook"); err != nil || v.Counts[outbox.StatePending] != 2 {
			t.Fatalf("after a refused removal: %+v, %v; want the lane with its 2 pending intents", v.Counts, err)
		}
		if _, err := p.RetireIntent(ctx, ids[0], "bob", "wrong room"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.RemoveLane(ctx, "hook", false, "bob"); !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), "1 pending") {
			t.Fatalf("remove with 1 pending intent: %v", err)
		}
		if _, err := p.RetireIntent(ctx, ids[1], "bob", "wrong room"); err != nil {
			t.Fatal(err)
		}
		r, err := p.RemoveLane(ctx, "hook", false, "bob")
		if err != nil {
			t.Fatalf("remove with only retired intents: %v", err)
		}
		if r.Intents[outbox.StateRetired] != 2 || r.Channels != 1 {
			t.Fatalf("removal = %+v, want 2 retired intents and 1 channel", r)
		}
		if _, err := p.Lane(ctx, "hook"); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("removed lane: %v, want not found", err)
		}
		if cs, err := p.Channels(ctx); err != nil || len(cs) != 0 {
			t.Fatalf("channels after removal: %v, %v", cs, err)
		}
		got := strings.Join(actions(t, p, "hook"), "\n")
		for _, want := range []string{"lane add by ada: provider webhook", "channel add by ada: source docs → room", "lane remove by bob: removed with 1 channel(s) and intents: 2 retired"} {
			if !strings.Contains(got, want) {
				t.Errorf("audit:\n%s\nwant a line with %q", got, want)
			}
		}
	})
}

func TestRemoveLaneForcedSaysWhatItLost(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/h"}})
		if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "one"}); err != nil {
			t.Fatal(err)
		}
		r, err := p.RemoveLane(ctx, "hook", true, "bob")
		if err != nil || r.Loss() != "1 pending" {
			t.Fatalf("forced removal = %+v (loss %q), %v", r, r.Loss(), err)
		}
		if ins, err := p.Intents(ctx, outbox.IntentFilter{}); err != nil || len(ins) != 0 {
			t.Fatalf("intents after forced removal: %v, %v", ins, err)
		}
		// Its intents went with it: its name finds no lane to list.
		if _, err := p.Intents(ctx, outbox.IntentFilter{Lane: "hook"}); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("intents of the removed lane: %v, want not found", err)
		}
		if got := strings.Join(actions(t, p, "hook"), "\n"); !strings.Contains(got, "forced, losing 1 pending") {
			t.Fatalf("audit:\n%s\nwant the forced loss", got)
		}
		// The name is free again.
		mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/h"}})
	})
}

// A lane's history outlives it, and a name that never had a lane has none
// to list: it is not found, as a listing of its intents is, never an empty
// history that reads as "nobody changed it". A lane added before its
// changes were audited has a row and no history: none is listed.
func TestLaneHistoryOfANameThatNeverHadALaneIsNotFound(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		if as, err := p.LaneActions(ctx, "nope"); !errors.Is(err, tidemark.ErrNotFound) || !strings.Contains(err.Error(), `lane "nope"`) {
			t.Fatalf("history of a name that never had a lane: %v, %v; want not found, naming it", as, err)
		}
		mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/h"}})
		if _, err := p.RemoveLane(ctx, "hook", false, "bob"); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(actions(t, p, "hook"), "\n"); !strings.Contains(got, "lane add by ada") || !strings.Contains(got, "lane remove by bob") {
			t.Fatalf("history of the removed lane:\n%s", got)
		}
		mustAddLane(t, p, "old", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/h"}})
		if _, err := p.DB().SQL().ExecContext(ctx, `DELETE FROM outbox_lane_actions WHERE lane = 'old'`); err != nil {
			t.Fatal(err)
		}
		if as, err := p.LaneActions(ctx, "old"); err != nil || len(as) != 0 {
			t.Fatalf("history of a lane older than its audit: %v, %v; want none", as, err)
		}
	})
}

// lane set merges settings, keeps secrets apart (a secret given again
// replaces the one kept; one not given is kept), audits setting names and
// never values, and the lane then shows the guarantee its new settings give.
func TestSetLaneKeepsSecretsApartAndShowsItsGuarantee(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		v := mustAddLane(t, p, "alerts", "discord", outbox.LaneChange{Settings: map[string]string{"url": "https://discord.example/api/webhooks/1/tok-one-secret"}})
		if v.Guarantee == nil || v.Guarantee.Guarantee != provider.AtMostOnce || v.Health != outbox.HealthOK {
			t.Fatalf("discord lane without a bot token: %+v %s %s", v.Guarantee, v.Health, v.Problem)
		}
		gap := tidemark.Duration(0)
		set, err := p.SetLane(ctx, "alerts", outbox.LaneChange{Settings: map[string]string{"bot_token": "tok-bot-secret"}, MinGap: &gap}, "ada")
		if err != nil {
			t.Fatal(err)
		}
		v = set.LaneView
		if v.Guarantee == nil || v.Guarantee.Guarantee != provider.ExactlyOnce || v.MinGap != 0 {
			t.Fatalf("discord lane with a bot token: %+v, gap %s; want exactly once, gap 0", v.Guarantee, v.MinGap.Std())
		}
		if strings.Contains(v.Settings["url"]+v.Settings["bot_token"], "tok-") {
			t.Fatalf("shown settings hold a secret: %v", v.Settings)
		}
		secrets, err := p.DB().Outbox().LaneSecrets(ctx, "alerts")
		if err != nil || !strings.HasSuffix(secrets["url"], "tok-one-secret") || secrets["bot_token"] != "tok-bot-secret" {
			t.Fatalf("secrets after a set that did not name the url: %v, %v", secrets, err)
		}
		if _, err := p.SetLane(ctx, "alerts", outbox.LaneChange{Settings: map[string]string{"url": "https://discord.example/api/webhooks/1/tok-two-secret"}}, "ada"); err != nil {
			t.Fatal(err)
		}
		if secrets, _ := p.DB().Outbox().LaneSecrets(ctx, "alerts"); !strings.HasSuffix(secrets["url"], "tok-two-secret") {
			t.Fatalf("secret not replaced: kept %q", secrets["url"])
		}
		// A form that sends back the shown form of a secret does not
		// replace the secret with its marker.
		if _, err := p.SetLane(ctx, "alerts", outbox.LaneChange{Settings: map[string]string{"url": v.Settings["url"]}}, "ada"); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("set to the shown form %q: %v, want invalid", v.Settings["url"], err)
		}
		if _, err := p.SetLane(ctx, "alerts", outbox.LaneChange{Unset: []string{"nope"}}, "ada"); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("unset of a missing setting: %v, want invalid", err)
		}
		if _, err := p.SetLane(ctx, "alerts", outbox.LaneChange{Settings: map[string]string{"resend_in_doubt": "perhaps"}}, "ada"); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("bad resend_in_doubt: %v, want invalid", err)
		}
		if _, err := p.SetLane(ctx, "nope", outbox.LaneChange{Unset: []string{"x"}}, "ada"); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("set of a missing lane: %v, want not found", err)
		}
		got := strings.Join(actions(t, p, "alerts"), "\n")
		if strings.Contains(got, "tok-") {
			t.Fatalf("the audit holds a secret:\n%s", got)
		}
		for _, want := range []string{"lane set by ada: set bot_token, min gap", "lane set by ada: changed url"} {
			if !strings.Contains(got, want) {
				t.Errorf("audit:\n%s\nwant %q", got, want)
			}
		}
	})
}

// A lane whose secret kept apart has gone missing, or whose provider cannot
// be built, shows as broken with the reason, never as healthy.
func TestLaneIsBrokenWhenItsProviderCannotBeBuilt(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "https://hooks.example/T0/secret-path", "secret": "sign-me"}})
		mustAddLane(t, p, "toot", "mastodon", outbox.LaneChange{Settings: map[string]string{"base_url": "https://m.example", "token_env": "TIDEMARK_TEST_UNSET_TOKEN"}})
		if v, err := p.Lane(ctx, "hook"); err != nil || v.Health != outbox.HealthOK {
			t.Fatalf("hook with its secrets: %s %s %v", v.Health, v.Problem, err)
		}
		if _, err := p.DB().SQL().ExecContext(ctx, `DELETE FROM outbox_lane_secrets WHERE lane = 'hook'`); err != nil {
			t.Fatal(err)
		}
		ls, err := p.Lanes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range ls {
			if v.Health != outbox.HealthBroken || v.Problem == "" {
				t.Errorf("lane %s: health %q (%s), want broken with a reason", v.Name, v.Health, v.Problem)
			}
			if strings.Contains(v.Problem, "sign-me") || strings.Contains(v.Problem, "secret-path") {
				t.Errorf("lane %s: the problem shows a secret: %s", v.Name, v.Problem)
			}
		}
	})
}

func TestChannelRemoveIsAudited(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/h"}})
		if _, err := p.DB().Ingest().AddSource(ctx, ingest.NewSource{Name: "docs", Kind: "git", Location: "/tmp/docs", Interval: DefaultInterval, RetryBudget: 3}); err != nil {
			t.Fatal(err)
		}
		ref := outbox.ChannelRef{Source: "docs", Lane: "hook", Target: "room", Parent: "42"}
		c, err := p.AddChannel(ctx, ref, "ada")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.RemoveChannel(ctx, outbox.ChannelRef{Source: "docs", Lane: "hook", Target: "room"}, "bob"); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("remove without its parent: %v, want not found", err)
		}
		got, err := p.RemoveChannel(ctx, ref, "bob")
		if err != nil || got.ID != c.ID {
			t.Fatalf("remove = %+v, %v; want channel %s", got, err, c.ID)
		}
		if _, err := p.RemoveChannel(ctx, outbox.ChannelRef{ID: c.ID}, "bob"); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("second remove: %v, want not found", err)
		}
		if a := actions(t, p, "hook"); len(a) != 3 || !strings.HasPrefix(a[2], "channel remove by bob: source docs → room ↳ 42") {
			t.Fatalf("audit: %q", a)
		}
	})
}

// A running delivery loop takes up a lane's new settings: after lane set
// moves the lane to another receiver, the next write goes there, not to
// the provider the loop built before.
func TestDeliverLoopTakesUpALaneChange(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := openBackend(t, sqltest.Backends()[0])
	a, b := providertest.New(t, clock.System{}, []byte("k")), providertest.New(t, clock.System{}, []byte("k"))
	settings := func(s *providertest.Server) map[string]string {
		m := s.Settings()
		m["secret"] = "k"
		return m
	}
	gap := tidemark.Duration(0)
	mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: settings(a), MinGap: &gap})
	if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "one"}); err != nil {
		t.Fatal(err)
	}
	fakeSleep(t, func(waits []time.Duration) {
		switch {
		case len(waits) == 1:
			if _, err := p.SetLane(ctx, "hook", outbox.LaneChange{Settings: settings(b)}, "ada"); err != nil {
				t.Error(err)
			}
			if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "two"}); err != nil {
				t.Error(err)
			}
		case len(waits) > 6:
			cancel()
		}
	})
	if err := p.DeliverLoop(ctx, "", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("loop ended with %v", err)
	}
	if a.Count() != 1 || b.Count() != 1 {
		t.Fatalf("writes: %d to the old receiver, %d to the new; want 1 and 1", a.Count(), b.Count())
	}
}

// A reconciliation an operator asks for is recorded in the lane's history
// with who asked and what the plan found.
func TestReconcileIsAudited(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		srv := providertest.New(t, clock.System{}, []byte("k"))
		s := srv.Settings()
		s["secret"] = "k"
		mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: s})
		if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "one"}); err != nil {
			t.Fatal(err)
		}
		r, err := p.Reconcile(ctx, "hook", "ada")
		if err != nil || r.Plan == nil || r.Requests == 0 {
			t.Fatalf("reconcile = %+v, %v", r, err)
		}
		got := actions(t, p, "hook")
		if want := "reconcile by ada: 1 provider request(s); 0 landed, 1 to replay, 0 unexecutable, 0 unresolved of 1"; got[len(got)-1] != want {
			t.Fatalf("audit %q, want last %q", got, want)
		}
	})
}

// A lane removed and added again under its name, while a delivery loop
// runs, is delivered with its new provider, not the one the loop built for
// the lane that was removed.
func TestDeliverLoopForgetsARemovedLane(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := openBackend(t, sqltest.Backends()[0])
	a, b := providertest.New(t, clock.System{}, []byte("k")), providertest.New(t, clock.System{}, []byte("k"))
	settings := func(s *providertest.Server) outbox.LaneChange {
		m := s.Settings()
		m["secret"] = "k"
		gap := tidemark.Duration(0)
		return outbox.LaneChange{Settings: m, MinGap: &gap}
	}
	mustAddLane(t, p, "hook", "webhook", settings(a))
	if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "one"}); err != nil {
		t.Fatal(err)
	}
	fakeSleep(t, func(waits []time.Duration) {
		switch {
		case len(waits) == 1:
			if _, err := p.RemoveLane(ctx, "hook", false, "ada"); err != nil {
				t.Error(err)
			}
			mustAddLane(t, p, "hook", "webhook", settings(b))
			if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "two"}); err != nil {
				t.Error(err)
			}
		case len(waits) > 6:
			cancel()
		}
	})
	if err := p.DeliverLoop(ctx, "", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("loop ended with %v", err)
	}
	if a.Count() != 1 || b.Count() != 1 {
		t.Fatalf("writes: %d to the removed lane's receiver, %d to the new one's; want 1 and 1", a.Count(), b.Count())
	}
}

// channel test renders what a channel would send, with its template or one
// to try, and sends nothing.
func TestChannelTestRendersWithoutSending(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		c := mustHookChannel(t, p)
		r, err := p.TestChannel(ctx, c.ID, "")
		if err != nil || !r.Sample || r.Body == "" || r.Channel.ID != c.ID {
			t.Fatalf("test = %+v, %v", r, err)
		}
		r, err = p.TestChannel(ctx, c.ID, "changed: {{.Source}}")
		if err != nil || r.Body != "changed: docs" {
			t.Fatalf("with a template: %q, %v", r.Body, err)
		}
		if _, err := p.TestChannel(ctx, c.ID, "{{.Nope}}"); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("a template reading no field: %v, want invalid", err)
		}
		if _, err := p.TestChannel(ctx, "nope", ""); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("no such channel: %v", err)
		}
		if ins, _ := p.Intents(ctx, outbox.IntentFilter{}); len(ins) != 0 {
			t.Fatalf("a test drafted %d intents", len(ins))
		}
	})
}

// A channel's template is set, previewed and reset through one audited
// operation; a template that would fail on every change is refused and
// the channel keeps the one it had.
func TestChannelTemplateIsSetCheckedAndAudited(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		c := mustHookChannel(t, p)
		got, err := p.SetChannelTemplate(ctx, c.ID, "new in {{.Source}}: {{.Title}}", "bob")
		if err != nil || got.Template != "new in {{.Source}}: {{.Title}}" || got.ID != c.ID {
			t.Fatalf("set = %+v, %v", got, err)
		}
		if r, err := p.TestChannel(ctx, c.ID, ""); err != nil || !strings.HasPrefix(r.Body, "new in docs: ") {
			t.Fatalf("the channel's preview after the set: %q, %v", r.Body, err)
		}
		if _, err := p.SetChannelTemplate(ctx, c.ID, "{{.Author}}", "eve"); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("a template reading no field: %v, want invalid", err)
		}
		if _, err := p.SetChannelTemplate(ctx, "nope", "{{.Title}}", "eve"); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("no such channel: %v, want not found", err)
		}
		cs, err := p.Channels(ctx)
		if err != nil || len(cs) != 1 || cs[0].Template != "new in {{.Source}}: {{.Title}}" {
			t.Fatalf("after the refusals: %+v, %v", cs, err)
		}
		if got, err := p.SetChannelTemplate(ctx, c.ID, " \n", "bob"); err != nil || got.Template != "" {
			t.Fatalf("reset = %+v, %v", got, err)
		}
		a := actions(t, p, "hook")
		if len(a) != 4 || !strings.HasPrefix(a[2], "channel template by bob: source docs → room (channel "+c.ID+"): its own template (") ||
			!strings.HasPrefix(a[3], "channel template by bob: source docs → room (channel "+c.ID+"): the provider's default") {
			t.Fatalf("audit: %q", a)
		}
	})
}

// A lane that failed and was removed leaves no pause behind: added again
// under its name, it is delivered at once, not after the removed lane's
// backoff.
func TestDeliverLoopForgetsARemovedLanesBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := openBackend(t, sqltest.Backends()[0])
	b := providertest.New(t, clock.System{}, []byte("k"))
	gap := tidemark.Duration(0)
	down := b.Settings()
	for k, v := range down {
		down[k] = strings.Replace(v, strings.TrimPrefix(b.URL, "http://"), "127.0.0.1:1", 1) // nothing listens there
	}
	down["secret"] = "k"
	mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: down, MinGap: &gap})
	if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "one"}); err != nil {
		t.Fatal(err)
	}
	fakeSleep(t, func(waits []time.Duration) {
		switch {
		case len(waits) == 1:
			if _, err := p.RemoveLane(ctx, "hook", true, "ada"); err != nil {
				t.Error(err)
			}
			up := b.Settings()
			up["secret"] = "k"
			mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: up, MinGap: &gap})
			if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "two"}); err != nil {
				t.Error(err)
			}
		case len(waits) > 6:
			cancel()
		}
	})
	if err := p.DeliverLoop(ctx, "", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("loop ended with %v", err)
	}
	if b.Count() != 1 {
		t.Fatalf("writes to the lane added again: %d, want 1", b.Count())
	}
}

// A lane whose provider cannot be built here (a secret's variable unset
// on this worker) is a lane that failed, not a command given bad input:
// deliver --once, run --once and reconcile say so as unavailable (exit 5),
// name the lane once, and still deliver the other lanes.
func TestABrokenLaneIsALaneThatFailed(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		mustAddLane(t, p, "toot", "mastodon", outbox.LaneChange{Settings: map[string]string{"base_url": "https://m.example", "token_env": "TIDEMARK_TEST_UNSET_TOKEN"}})
		mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/h", "secret": "sign-me"}})
		reports, err := p.DeliverOnce(ctx, "", time.Minute)
		if code := tidemark.ExitCode(err); code != tidemark.ExitUnavailable || errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("deliver --once with a broken lane: %v (exit %d), want unavailable (exit %d)", err, code, tidemark.ExitUnavailable)
		}
		if msg := err.Error(); strings.Count(msg, "toot") != 1 || !strings.Contains(msg, "TIDEMARK_TEST_UNSET_TOKEN") {
			t.Errorf("message %q: want the lane named once, and why", msg)
		}
		if len(reports) != 2 || reports[0].Lane != "hook" || reports[0].Error != "" || reports[1].Lane != "toot" || reports[1].Error == "" {
			t.Errorf("reports %+v: want hook delivered and toot failed", reports)
		}
		if _, err := p.RunOnce(ctx, OnceOptions{}); tidemark.ExitCode(err) != tidemark.ExitUnavailable {
			t.Errorf("run --once with a broken lane: %v (exit %d), want exit %d", err, tidemark.ExitCode(err), tidemark.ExitUnavailable)
		}
		if _, err := p.Reconcile(ctx, "toot", "ada"); tidemark.ExitCode(err) != tidemark.ExitUnavailable {
			t.Errorf("reconcile of a broken lane: %v (exit %d), want exit %d", err, tidemark.ExitCode(err), tidemark.ExitUnavailable)
		}
		if _, err := p.DeliverOnce(ctx, "nope", time.Minute); tidemark.ExitCode(err) != tidemark.ExitNotFound {
			t.Errorf("deliver --lane of no lane: %v (exit %d), want not found", err, tidemark.ExitCode(err))
		}
	})
}

// An error says each thing once: a lane whose provider cannot be built
// is named once in the delivery's error, though both the deliverer and
// the round over every lane know its name.
func TestDeliverOnceNamesTheLaneOnce(t *testing.T) {
	ctx := context.Background()
	p := openBackend(t, sqltest.Backends()[0])
	mustAddLane(t, p, "toot", "mastodon", outbox.LaneChange{Settings: map[string]string{"base_url": "https://m.example", "token_env": "TIDEMARK_TEST_UNSET_TOKEN"}})
	reps, err := p.DeliverOnce(ctx, "", time.Minute)
	if err == nil || len(reps) != 1 {
		t.Fatalf("deliver over a lane that cannot be built: %+v %v", reps, err)
	}
	for _, msg := range []string{err.Error(), reps[0].Error} {
		if n := strings.Count(msg, "lane toot"); n != 1 {
			t.Errorf("%q names the lane %d times, want once", msg, n)
		}
	}
}

// A lane another live writer holds (a daemon's delivery loop) is passed
// over by a pass over every lane (run --once, deliver --once): reported,
// not a failure, since that writer delivers it. Named alone (deliver
// --once --lane), it is refused as a conflict that says who holds it.
func TestAPassOverEveryLanePassesOverALaneHeldElsewhere(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/h", "secret": "sign-me"}})
		if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "hi"}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.DB().Outbox().Acquire(ctx, "hook", "the-daemon", time.Hour); err != nil {
			t.Fatal(err)
		}
		reports, err := p.DeliverOnce(ctx, "", time.Minute)
		if err != nil {
			t.Fatalf("deliver --once over every lane: %v; want the held lane passed over", err)
		}
		if len(reports) != 1 || reports[0].Error != "" || !strings.Contains(reports[0].PassedOver, "the-daemon") {
			t.Fatalf("reports %+v: want hook passed over, naming its holder", reports)
		}
		if _, err := p.RunOnce(ctx, OnceOptions{}); err != nil {
			t.Fatalf("run --once beside a delivery loop: %v (exit %d), want exit 0", err, tidemark.ExitCode(err))
		}
		_, err = p.DeliverOnce(ctx, "hook", time.Minute)
		var held *outbox.LeaseHeldError
		if tidemark.ExitCode(err) != tidemark.ExitConflict || !errors.As(err, &held) || held.Holder != "the-daemon" {
			t.Fatalf("deliver --once --lane hook: %v (exit %d), want a conflict naming the holder", err, tidemark.ExitCode(err))
		}
	})
}

// deliver --once --json: every lane's object has `lane`, `steps`, `error`
// and `passed_over`, empty when there is none.
func TestDeliverReportHasItsErrorEvenWhenEmpty(t *testing.T) {
	b, err := json.Marshal(DeliverReport{Lane: "hooks", Steps: []outbox.Step{}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"lane", "steps", "error", "passed_over"} {
		if _, ok := m[f]; !ok {
			t.Errorf("a lane's delivery report %s has no %q", b, f)
		}
	}
}

// A lane whose write in flight belongs to a process of this host that is
// gone is in doubt at once, before its lease runs out.
func TestALaneWhoseWriterProcessIsGoneIsInDoubt(t *testing.T) {
	ctx := context.Background()
	p := openBackend(t, sqltest.Backends()[0])
	mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/h", "secret": "s"}})
	in, err := p.DB().Outbox().Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name:", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("cannot run a process to outlive:", err)
	}
	holder := fmt.Sprintf("%s:%d", host, dead.Process.Pid)
	l, err := p.DB().Outbox().Acquire(ctx, "hook", holder, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DB().Outbox().Begin(ctx, l, outbox.NewAttempt{IntentID: in.ID, Bound: time.Minute}); err != nil {
		t.Fatal(err)
	}
	v, err := p.Lane(ctx, "hook")
	if err != nil {
		t.Fatal(err)
	}
	if v.Health != outbox.HealthInDoubt {
		t.Fatalf("lane with a write in flight of gone %s: health %q (%s), want in doubt", holder, v.Health, v.Problem)
	}
}

// A channel to a target its lane's listing does not read says so, when it
// is added and whenever channels are listed: a write to it whose answer is
// lost cannot be decided by the listing.
func TestAChannelSaysWhenItsLaneCannotReadItBack(t *testing.T) {
	p := openBackend(t, sqltest.Backends()[0])
	ctx := context.Background()
	mustAddLane(t, p, "chat", "slack", outbox.LaneChange{Settings: map[string]string{"token": "xoxb-1", "channels": "C0AAAA1"}})
	if _, err := p.DB().Ingest().AddSource(ctx, ingest.NewSource{Name: "docs", Kind: "git", Location: "/tmp/docs", Interval: DefaultInterval, RetryBudget: 3}); err != nil {
		t.Fatal(err)
	}
	read, err := p.AddChannel(ctx, outbox.ChannelRef{Source: "docs", Lane: "chat", Target: "C0AAAA1"}, "ada")
	if err != nil || read.Note != "" {
		t.Fatalf("a channel its lane reads: %+v %v", read, err)
	}
	unread, err := p.AddChannel(ctx, outbox.ChannelRef{Source: "docs", Lane: "chat", Target: "C0AAAA2"}, "ada")
	if err != nil || !strings.Contains(unread.Note, "does not read C0AAAA2") || !strings.Contains(unread.Note, "channels") {
		t.Fatalf("a channel its lane does not read: %+v %v", unread, err)
	}
	cs, err := p.Channels(ctx)
	if err != nil || len(cs) != 2 {
		t.Fatalf("channels: %+v %v", cs, err)
	}
	for _, c := range cs {
		if (c.Target == "C0AAAA2") != (c.Note != "") {
			t.Errorf("listed channel %s: note %q", c.Target, c.Note)
		}
	}
}

// A reconciliation whose read of our own writes the provider asks to wait
// for (429 with Retry-After) ends the lane's step deferred, and the
// delivery loop comes back to the lane at the time the provider asked:
// not at once, and not after its failure pause or its poll. Then it reads
// again and decides the write in doubt.
func TestDeliverLoopComesBackToADeferredReadWhenAsked(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cfg := Defaults()
	cfg.Home, cfg.Database, cfg.Clock = t.TempDir(), sqltest.Backends()[0].NewURL(t), clk
	p, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	srv := providertest.New(t, clk, []byte("k"))
	s := srv.Settings()
	delete(s, "count_url") // only the listing can decide the write in doubt
	delete(s, "probe_url")
	s["secret"] = "k"
	gap := tidemark.Duration(0)
	mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: s, MinGap: &gap})
	in, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "one"})
	if err != nil {
		t.Fatal(err)
	}
	srv.LoseAnswers(1)                      // the write lands, its answer is lost: in doubt
	srv.RetryAfterNextRead(2 * time.Minute) // and the reconciliation's first read is asked to wait
	var readAt []time.Time                  // when each listing read was made, by the loop's clock
	fakeSleep(t, func(waits []time.Duration) {
		for len(readAt) < srv.Reads("writes") {
			readAt = append(readAt, clk.Now())
		}
		if len(readAt) >= 2 || len(waits) > 200 {
			cancel()
			return
		}
		clk.Advance(waits[len(waits)-1])
	})
	if err := p.DeliverLoop(ctx, "", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("loop ended with %v", err)
	}
	if len(readAt) < 2 {
		t.Fatalf("listing reads at %v: the loop never read again after the wait", readAt)
	}
	if until := readAt[0].Add(2 * time.Minute); readAt[1].Before(until) || readAt[1].After(until.Add(lanePoll)) {
		t.Fatalf("read again %s after the deferred read; want when the provider asked (2m)", readAt[1].Sub(readAt[0]))
	}
	got, err := p.Intent(context.Background(), in.ID)
	if err != nil || got.State != outbox.StateLanded || srv.Count() != 1 {
		t.Fatalf("intent %s (%v), %d writes; want landed once", got.State, err, srv.Count())
	}
}

// mustLeaveInDoubt journals an attempt at intent id on lane, sent with
// its key in scope, and finishes it with its outcome unknown: a write in
// doubt, as a lost answer leaves one.
func mustLeaveInDoubt(t *testing.T, p *Pipeline, lane, id, scope string) {
	t.Helper()
	ctx := context.Background()
	st := p.DB().Outbox()
	l, err := st.Acquire(ctx, lane, "test:1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	att, err := st.Begin(ctx, l, outbox.NewAttempt{IntentID: id, Bound: provider.DefaultTimeout, KeyScope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Finish(ctx, l, att, outbox.Result{Outcome: outbox.OutcomeUnknown, SentAt: p.Clock().Now(), Error: "connection lost"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// A lane set that changes the lane's token while writes sent under the
// old one are in doubt says so: the server keeps idempotency keys per
// token, so those writes lose their keyed resend and wait for a read. It
// is a message (and a JSON field), not a refusal; a change that keeps the
// token says nothing.
func TestSetLaneSaysWhenATokenChangeStripsWritesInDoubtOfTheirKey(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		settings := map[string]string{"homeserver_url": "https://matrix.example", "token": "tok-old-secret", "rooms": "!a:matrix.example"}
		none := tidemark.Duration(0) // two writes need no wait between them
		mustAddLane(t, p, "mx", "matrix", outbox.LaneChange{Settings: settings, MinGap: &none})
		old, err := providers.New(outbox.Lane{LaneConfig: outbox.LaneConfig{Name: "mx", Provider: "matrix", Settings: settings}}, p.Clock())
		if err != nil {
			t.Fatal(err)
		}
		in, err := p.Draft(ctx, outbox.Draft{Lane: "mx", Target: "!a:matrix.example", Body: "one"})
		if err != nil {
			t.Fatal(err)
		}
		two, err := p.Draft(ctx, outbox.Draft{Lane: "mx", Target: "!a:matrix.example", Body: "two"})
		if err != nil {
			t.Fatal(err) // pending, never sent: nothing to lose
		}
		mustLeaveInDoubt(t, p, "mx", in.ID, old.(provider.KeyScoped).KeyScope())

		gap := tidemark.Duration(time.Second)
		v, err := p.SetLane(ctx, "mx", outbox.LaneChange{MinGap: &gap}, "ada")
		if err != nil || v.KeyResendLost != nil {
			t.Fatalf("a change of the gap: %+v, %v; want no word of keys", v.KeyResendLost, err)
		}
		v, err = p.SetLane(ctx, "mx", outbox.LaneChange{Settings: map[string]string{"token": "tok-old-secret"}}, "ada")
		if err != nil || v.KeyResendLost != nil {
			t.Fatalf("the same token again: %+v, %v; want no word of keys", v.KeyResendLost, err)
		}
		v, err = p.SetLane(ctx, "mx", outbox.LaneChange{Settings: map[string]string{"token": "tok-new-secret"}}, "ada")
		if err != nil {
			t.Fatal(err)
		}
		lost := v.KeyResendLost
		if lost == nil || lost.InDoubt != 1 || !slices.Equal(lost.Intents, []string{in.ID}) ||
			!strings.Contains(lost.Message, "1 write in doubt") || !strings.Contains(lost.Message, "read") {
			t.Fatalf("a new token with a write in doubt under the old one: %+v; want it counted, named and explained", lost)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var shape map[string]json.RawMessage
		if err := json.Unmarshal(raw, &shape); err != nil || shape["key_resend_lost"] == nil || shape["name"] == nil {
			t.Fatalf("JSON %s: want the lane with key_resend_lost", raw)
		}
		var text strings.Builder
		if err := v.WriteText(&text); err != nil || !strings.Contains(text.String(), "warning: 1 write in doubt") {
			t.Fatalf("text %q, %v: want the warning", text.String(), err)
		}
		// Set again: that write was already sent under another token than
		// the lane's, and this change does not move it.
		v, err = p.SetLane(ctx, "mx", outbox.LaneChange{MinGap: &none}, "ada")
		if err != nil || v.KeyResendLost != nil {
			t.Fatalf("a later change that keeps the token: %+v, %v", v.KeyResendLost, err)
		}
		// The variable a lane reads its token from counts as its token: a
		// write in doubt under the token it has now loses its key when the
		// lane moves to a variable holding another.
		cur, err := providers.NewWithSecrets(outbox.Lane{LaneConfig: outbox.LaneConfig{Name: "mx", Provider: "matrix", Settings: settings}}, map[string]string{"token": "tok-new-secret"}, p.Clock())
		if err != nil {
			t.Fatal(err)
		}
		mustLeaveInDoubt(t, p, "mx", two.ID, cur.(provider.KeyScoped).KeyScope())
		t.Setenv("TIDEMARK_TEST_MX_TOKEN", "tok-env-secret")
		v, err = p.SetLane(ctx, "mx", outbox.LaneChange{Settings: map[string]string{"token_env": "TIDEMARK_TEST_MX_TOKEN"}, Unset: []string{"token"}}, "ada")
		if err != nil {
			t.Fatal(err)
		}
		if lost := v.KeyResendLost; lost == nil || lost.InDoubt != 1 || !slices.Equal(lost.Intents, []string{two.ID}) {
			t.Fatalf("a move to token_env holding another token: %+v; want the one write in doubt under the token before", lost)
		}
	})
}

// A lane whose receiver is down fails every delivery step: the loop
// records the run of failures on the lane, so lane show and the console
// say failing (not ok) in any process, and the first step that goes
// through ends it.
func TestDeliverLoopRecordsALanesFailures(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := openBackend(t, sqltest.Backends()[0])
	down, up := providertest.New(t, clock.System{}, []byte("k")), providertest.New(t, clock.System{}, []byte("k"))
	settings := func(s *providertest.Server) map[string]string {
		m := s.Settings()
		m["secret"] = "k"
		return m
	}
	gap := tidemark.Duration(0)
	mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: settings(down), MinGap: &gap})
	if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "one"}); err != nil {
		t.Fatal(err)
	}
	down.Server.Close() // the receiver goes away
	var whileDown outbox.LaneView
	fakeSleep(t, func(waits []time.Duration) {
		switch {
		case len(waits) == 2:
			v, err := p.Lane(ctx, "hook")
			if err != nil {
				t.Error(err)
			}
			whileDown = v
			if _, err := p.SetLane(ctx, "hook", outbox.LaneChange{Settings: settings(up)}, "ada"); err != nil {
				t.Error(err)
			}
		case len(waits) > 8:
			cancel()
		}
	})
	if err := p.DeliverLoop(ctx, "", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("loop ended with %v", err)
	}
	if f := whileDown.Failing; whileDown.Health != outbox.HealthFailing || f == nil || f.Failures < 1 || !strings.Contains(f.Last, "connection refused") {
		t.Fatalf("the lane while its receiver was down: health %q, failing %+v; want failing, saying why", whileDown.Health, f)
	}
	v, err := p.Lane(context.Background(), "hook")
	if err != nil {
		t.Fatal(err)
	}
	if v.Failing != nil || v.Health != outbox.HealthOK || up.Count() != 1 {
		t.Fatalf("after a delivery went through: health %q, failing %+v, %d writes; want ok, none, 1", v.Health, v.Failing, up.Count())
	}
}

// A pass (deliver --once, and run --once, which delivers the same way)
// records a lane's failing steps as the daemon's loop does, so an operator
// who delivers from cron sees the lane failing; the next pass that goes
// through ends it.
func TestDeliverOnceRecordsALanesFailures(t *testing.T) {
	ctx := context.Background()
	p := openBackend(t, sqltest.Backends()[0])
	down, up := providertest.New(t, clock.System{}, []byte("k")), providertest.New(t, clock.System{}, []byte("k"))
	settings := func(s *providertest.Server) map[string]string {
		m := s.Settings()
		m["secret"] = "k"
		return m
	}
	gap := tidemark.Duration(0)
	mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: settings(down), MinGap: &gap})
	if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "one"}); err != nil {
		t.Fatal(err)
	}
	down.Server.Close() // the receiver goes away
	if _, err := p.DeliverOnce(ctx, "", time.Minute); err == nil {
		t.Fatal("a pass whose receiver is down went through")
	}
	v, err := p.Lane(ctx, "hook")
	if err != nil {
		t.Fatal(err)
	}
	if f := v.Failing; v.Health != outbox.HealthFailing || f == nil || f.Failures != 1 || !strings.Contains(f.Last, "connection refused") {
		t.Fatalf("the lane after a pass whose receiver was down: health %q, failing %+v; want failing, saying why", v.Health, f)
	}
	if _, err := p.SetLane(ctx, "hook", outbox.LaneChange{Settings: settings(up)}, "ada"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DeliverOnce(ctx, "", time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, err = p.Lane(ctx, "hook"); err != nil {
		t.Fatal(err)
	}
	if v.Failing != nil || v.Health != outbox.HealthOK || up.Count() != 1 {
		t.Fatalf("after a pass that went through: health %q, failing %+v, %d writes; want ok, none, 1", v.Health, v.Failing, up.Count())
	}
}

// A pass (deliver --once, run --once) whose write failed and had not
// landed by its end left work undone: it fails as unavailable (exit 5),
// and the lane's report says why, even though each step went through. A
// bare webhook (at most once) whose receiver answers 500: the write is in
// doubt and nothing can decide it; it waits, unresolved, for an operator.
func TestDeliverOnceFailsWhenAWriteFailed(t *testing.T) {
	ctx := context.Background()
	p := openBackend(t, sqltest.Backends()[0])
	srv := providertest.New(t, clock.System{}, []byte("k"))
	gap := tidemark.Duration(0)
	mustAddLane(t, p, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": srv.Settings()["url"], "secret": "k"}, MinGap: &gap})
	if _, err := p.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: "one"}); err != nil {
		t.Fatal(err)
	}
	srv.FailWrites(1)
	reports, err := p.DeliverOnce(ctx, "", time.Minute)
	if _, ok := errors.AsType[*outbox.WritesFailedError](err); !ok || !errors.Is(err, tidemark.ErrUnavailable) {
		t.Fatalf("a pass whose write the receiver failed: %v; want a failed write, unavailable", err)
	}
	if len(reports) != 1 || !strings.Contains(reports[0].Error, "failed") || !strings.Contains(reports[0].Error, "500") {
		t.Fatalf("the lane's report: %+v; want it to say its write failed, and how", reports)
	}
	v, err := p.Lane(ctx, "hook")
	if err != nil {
		t.Fatal(err)
	}
	if v.Health != outbox.HealthUnresolved || v.Failing != nil {
		t.Fatalf("after the pass: health %q, failing %+v; want the write shown unresolved, waiting for an operator", v.Health, v.Failing)
	}
	// Nothing new to send: the next pass goes through.
	if _, err := p.DeliverOnce(ctx, "", time.Minute); err != nil {
		t.Fatalf("a pass with nothing to send or decide: %v", err)
	}
}
