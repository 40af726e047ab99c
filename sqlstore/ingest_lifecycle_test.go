package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func mustAddSource(t *testing.T, st *sqlstore.IngestStore, name string) tidemark.Source {
	t.Helper()
	src, err := st.AddSource(context.Background(), ingest.NewSource{Name: name, Kind: "feed", Location: "https://example.org/" + name,
		Interval: time.Minute, RetryBudget: 3})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// mustSettle runs the source once, admitting one item per key.
func mustSettle(t *testing.T, st *sqlstore.IngestStore, env sqltest.Env, src tidemark.Source, keys ...string) ingest.SettleReport {
	t.Helper()
	ctx := context.Background()
	c, err := st.Claim(ctx, src.ID, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var items []tidemark.Item
	for _, k := range keys {
		items = append(items, tidemark.Item{Key: k, Title: "title " + k, OccurredAt: env.Clock.Now(), Evidence: []byte("evidence of " + k)})
	}
	rep, err := st.Settle(ctx, c, ingest.Settlement{Items: items, Cursor: "c-" + strings.Join(keys, ""), NextDueAt: env.Clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(time.Second)
	return rep
}

func TestUpdateAndRenameSourceAreAudited(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(1)
		st := sqltest.MustOpen(t, b, env).Ingest()
		src := mustAddSource(t, st, "blog")
		other := mustAddSource(t, st, "news")

		if _, err := st.Set(ctx, "blog", ingest.Settings{}, "ada"); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("empty change: %v", err)
		}
		zero := 0
		if _, err := st.Set(ctx, "blog", ingest.Settings{RetryBudget: &zero}, "ada"); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("budget 0: %v", err)
		}
		if err := st.RecordUnserved(ctx, ingest.Unserved{SourceID: src.ID, Holder: "w9", Reason: "no route", At: env.Clock.Now()}); err != nil {
			t.Fatal(err)
		}
		yes, hour, nine := true, time.Hour, 9
		got, err := st.Set(ctx, "blog", ingest.Settings{AllowPrivate: &yes, Interval: &hour, RetryBudget: &nine}, "ada")
		if err != nil {
			t.Fatal(err)
		}
		// The change may let the worker serve it: its record goes.
		if un, err := st.Unserved(ctx, src.ID); err != nil || len(un) != 0 {
			t.Fatalf("unserved after set: %v %+v", err, un)
		}
		if !got.AllowPrivate || got.Interval.Std() != time.Hour || got.RetryBudget != 9 || got.Cursor != src.Cursor {
			t.Fatalf("after set: %+v", got)
		}

		for _, bad := range []string{"", " x", "a/b", "a\x01"} {
			if _, err := st.RenameSource(ctx, "blog", bad, "ada"); !errors.Is(err, tidemark.ErrInvalid) {
				t.Errorf("rename to %q: %v, want invalid", bad, err)
			}
		}
		for _, taken := range []string{"news", other.ID} {
			if _, err := st.RenameSource(ctx, "blog", taken, "ada"); !errors.Is(err, tidemark.ErrConflict) {
				t.Errorf("rename to %q: %v, want conflict", taken, err)
			}
		}
		got, err = st.RenameSource(ctx, "blog", "go-blog", "bob")
		if err != nil || got.ID != src.ID || got.Name != "go-blog" {
			t.Fatalf("rename: %v %+v", err, got)
		}
		if _, err := st.Source(ctx, "blog"); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("old name still resolves: %v", err)
		}
		acts, err := st.Actions(ctx, "go-blog", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) != 2 || acts[0].Action != "rename" || acts[0].Actor != "bob" || acts[0].Note != "blog → go-blog" || acts[0].SourceName != "blog" ||
			acts[1].Action != "set" || acts[1].Actor != "ada" || acts[1].Note != "allow_private: false -> true; interval: 1m0s -> 1h0m0s; retry_budget: 3 -> 9" {
			t.Fatalf("actions: %+v", acts)
		}
	})
}

func TestRemoveSourceRefusesDataLossUnlessForcedAndKeepsItsAudit(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(1)
		db := sqltest.MustOpen(t, b, env)
		st := db.Ingest()
		empty := mustAddSource(t, st, "empty")
		src := mustAddSource(t, st, "blog")
		kept := mustAddSource(t, st, "kept")
		mustSettle(t, st, env, src, "a", "b")
		mustSettle(t, st, env, kept, "k")
		if _, err := st.SetState(ctx, "blog", tidemark.SourcePaused, "ada"); err != nil {
			t.Fatal(err)
		}
		count := func(q string, args ...any) int {
			t.Helper()
			var n int
			if err := db.SQL().QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}

		rm, err := st.RemoveSource(ctx, "blog", "ada", false)
		if !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), "2 events") || !strings.Contains(err.Error(), "removing it with force deletes them") {
			t.Fatalf("unforced removal: %v", err)
		}
		if rm.Events != 2 || rm.Revisions != 2 || rm.Runs != 1 {
			t.Fatalf("counts: %+v", rm)
		}
		if _, err := st.Source(ctx, "blog"); err != nil {
			t.Fatalf("refused removal removed: %v", err)
		}
		if n := count(`SELECT COUNT(*) FROM events WHERE source_id = $1`, src.ID); n != 2 {
			t.Fatalf("refused removal deleted events: %d left", n)
		}

		// A source that never produced anything goes without force.
		if _, err := st.RemoveSource(ctx, "empty", "ada", false); err != nil {
			t.Fatal(err)
		}

		// A run in progress is never removed under its worker.
		if _, err := st.Claim(ctx, kept.ID, "w2", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RemoveSource(ctx, "kept", "ada", true); !errors.Is(err, tidemark.ErrClaimHeld) {
			t.Fatalf("removal under a live claim: %v", err)
		}

		rm, err = st.RemoveSource(ctx, "blog", "bob", true)
		if err != nil {
			t.Fatal(err)
		}
		if rm.Events != 2 || rm.Action.Action != "remove" || rm.Action.Actor != "bob" || rm.Action.SourceName != "blog" ||
			!strings.Contains(rm.Action.Note, "2 events") {
			t.Fatalf("removal: %+v", rm)
		}
		if _, err := st.Source(ctx, src.ID); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("removed source still found: %v", err)
		}
		for _, q := range []string{
			`SELECT COUNT(*) FROM events WHERE source_id = $1`,
			`SELECT COUNT(*) FROM ingest_runs WHERE source_id = $1`,
			`SELECT COUNT(*) FROM event_revisions r JOIN events e ON e.id = r.event_id WHERE e.source_id = $1`,
		} {
			if n := count(q, src.ID); n != 0 {
				t.Errorf("%s: %d left", q, n)
			}
		}
		if n := count(`SELECT COUNT(*) FROM events WHERE source_id = $1`, kept.ID); n != 1 {
			t.Fatalf("another source's events went too: %d left", n)
		}
		// The audit outlives the source: its pause and its removal, read
		// through the store by the source's ID.
		if acts, err := st.Actions(ctx, src.ID, 10); err != nil || len(acts) != 2 || acts[0] != rm.Action {
			t.Fatalf("audit of the removed source: %+v %v, want its removal and its pause", acts, err)
		}
		removals, err := st.Removals(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(removals) != 2 || removals[0].SourceName != "blog" || removals[1].SourceName != "empty" || removals[1].SourceID != empty.ID {
			t.Fatalf("removals: %+v", removals)
		}
		// The name is free again.
		mustAddSource(t, st, "blog")
	})
}

func TestRunsAndEventsPageAfter(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(1)
		st := sqltest.MustOpen(t, b, env).Ingest()
		src := mustAddSource(t, st, "blog")
		var runIDs []string
		for _, k := range []string{"a", "b", "c"} {
			runIDs = append(runIDs, mustSettle(t, st, env, src, k).Run.ID)
		}
		page1, err := st.Runs(ctx, ingest.RunFilter{Limit: 2})
		if err != nil || len(page1) != 2 || page1[0].ID != runIDs[2] || page1[1].ID != runIDs[1] {
			t.Fatalf("page 1: %v %+v", err, page1)
		}
		page2, err := st.Runs(ctx, ingest.RunFilter{Limit: 2, BeforeStartedAt: page1[1].StartedAt, BeforeID: page1[1].ID})
		if err != nil || len(page2) != 1 || page2[0].ID != runIDs[0] {
			t.Fatalf("page 2: %v %+v", err, page2)
		}
		evs, err := st.Events(ctx, ingest.EventFilter{Limit: 1})
		if err != nil || len(evs) != 1 || evs[0].ItemKey != "c" {
			t.Fatalf("events page 1: %v %+v", err, evs)
		}
		evs, err = st.Events(ctx, ingest.EventFilter{Limit: 5, BeforeOccurredAt: evs[0].OccurredAt, BeforeID: evs[0].ID})
		if err != nil || len(evs) != 2 || evs[0].ItemKey != "b" || evs[1].ItemKey != "a" {
			t.Fatalf("events page 2: %v %+v", err, evs)
		}
		evs, err = st.Events(ctx, ingest.EventFilter{RunID: runIDs[1]})
		if err != nil || len(evs) != 1 || evs[0].ItemKey != "b" {
			t.Fatalf("events of a run: %v %+v", err, evs)
		}
		revs, err := st.Revisions(ctx, evs[0].ID)
		if err != nil || len(revs) != 1 || revs[0].Bytes != len("evidence of b") || revs[0].RunID != runIDs[1] {
			t.Fatalf("revisions: %v %+v", err, revs)
		}
		if _, err := ingest.ResolveRunFilter(ctx, st, ingest.RunFilter{BeforeID: "nope"}); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("after an unknown run: %v", err)
		}
		f, err := ingest.ResolveRunFilter(ctx, st, ingest.RunFilter{Limit: 2, BeforeID: page1[1].ID})
		if page, err2 := st.Runs(ctx, f); err != nil || err2 != nil || len(page) != 1 || page[0].ID != runIDs[0] {
			t.Fatalf("page after an ID alone: %v %v %+v", err, err2, page)
		}
	})
}

// Migration 0017 rebuilds source_actions: the actions recorded before it
// keep every field and gain the source's name.
func TestSourceActionsKeptAcrossMigration17(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		url := b.NewURL(t)
		env := sqltest.NewEnv(3)
		old, err := sqlstore.OpenUpToForTest(ctx, url, sqlstore.Options{Clock: env.Clock, IDs: env.IDs}, 16)
		if err != nil {
			t.Fatal(err)
		}
		// A source and an action as an older release recorded them (no
		// source_name yet; the store of this release writes columns of
		// later migrations).
		src := struct{ ID string }{"src1"}
		if _, err := old.SQL().ExecContext(ctx, `INSERT INTO sources (id, name, kind, location, config, interval_ms, retry_budget, next_due_at, created_at, updated_at)
			VALUES ($1, 'blog', 'feed', 'https://example.org/blog', '{}', 60000, 3, 0, 1, 1)`, src.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := old.SQL().ExecContext(ctx, `INSERT INTO source_actions (id, source_id, action, actor, cursor_before,
			cursor_after, cursor_version_before, cursor_version_after, note, at) VALUES ('a1', $1, 'pause', 'ada', '', '', 0, 0, 'why', 5)`, src.ID); err != nil {
			t.Fatal(err)
		}
		old.Close()
		db := sqltest.MustOpenURL(t, url, env)
		acts, err := db.Ingest().Actions(ctx, src.ID, 10)
		if err != nil || len(acts) != 1 || acts[0].Action != "pause" || acts[0].Actor != "ada" || acts[0].SourceName != "blog" || acts[0].Note != "why" || acts[0].ID != "a1" {
			t.Fatalf("after 0017: %v %+v", err, acts)
		}
		if _, err := db.Ingest().RenameSource(ctx, "blog", "news", "bob"); err != nil {
			t.Fatalf("a rename after 0017: %v", err)
		}
	})
}

// A store opened without the rule that keys sources cannot tell the key a
// change of config leaves: it refuses such a change to a source that has
// a key, changing nothing, rather than keep a key that no longer says
// what the source watches. Other settings, and sources without a key,
// change as before.
func TestSetConfigWithoutAKeyFunction(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		st := sqltest.MustOpen(t, b, sqltest.NewEnv(1)).Ingest()
		keyed, err := st.AddSource(ctx, ingest.NewSource{Name: "keyed", Kind: "git", Location: "/r", Key: "k",
			Config: map[string]string{"branch": "main"}, Interval: time.Minute, RetryBudget: 3})
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Set(ctx, "keyed", ingest.Settings{Config: map[string]string{"branch": "dev"}}, "op")
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "SourceKey") {
			t.Fatalf("a change of config without a key function: %v, want it refused naming SourceKey", err)
		}
		if got, err := st.Source(ctx, keyed.ID); err != nil || got.Config["branch"] != "main" {
			t.Fatalf("keyed after a refused set: %+v (%v)", got.Config, err)
		}
		hour := time.Hour
		if _, err := st.Set(ctx, "keyed", ingest.Settings{Interval: &hour}, "op"); err != nil {
			t.Fatalf("an interval without a key function: %v", err)
		}
		mustAddSource(t, st, "plain")
		if _, err := st.Set(ctx, "plain", ingest.Settings{Config: map[string]string{"max_items": "5"}}, "op"); err != nil {
			t.Fatalf("a change of config to a source without a key: %v", err)
		}
	})
}
