package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// Migration 0006 rebuilds the intents table and its children so that a
// remote identity may be shared (by an intent in collision): nothing
// stored is lost, origins are filled in, and the foreign keys still hold.
func TestOutboxOriginMigrationKeepsTheJournal(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		url := b.NewURL(t)
		env := sqltest.NewEnv(3)
		old, err := sqlstore.OpenUpToForTest(ctx, url, sqlstore.Options{Clock: env.Clock, IDs: env.IDs}, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`INSERT INTO sources (id, name, kind, location, interval_ms, retry_budget, next_due_at, created_at, updated_at)
				VALUES ('src1', 'docs', 'git', '/tmp/docs', 60000, 3, 0, 1, 1)`,
			`INSERT INTO outbox_lanes (name, provider, min_gap_ms, skew_ms, retire_spacing_ms, next_rank, created_at, updated_at)
				VALUES ('hook', 'webhook', 0, 0, 0, 3, 1, 1)`,
			`INSERT INTO outbox_channels (id, source_id, lane, target, parent, created_at) VALUES ('ch1', 'src1', 'hook', 'room', '', 1)`,
			`INSERT INTO outbox_intents (id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, source_id, page_id, remote_id, landed_at, created_at, updated_at)
				VALUES ('i1', 'hook', 1, 'room', '', 'one', 'aa', 'k1', 'landed', 'src1', 'p1', 'w1', 2, 1, 2)`,
			`INSERT INTO outbox_intents (id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, source_id, page_id, created_at, updated_at)
				VALUES ('i2', 'hook', 2, 'room', '', 'two', 'bb', 'k2', 'pending', 'src1', 'p1', 1, 1)`,
			`INSERT INTO outbox_intents (id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, created_at, updated_at)
				VALUES ('i3', 'hook', 3, 'room', '', 'three', 'cc', 'k3', 'unresolved', 1, 1)`,
			`INSERT INTO outbox_attempts (id, intent_id, lane, token, holder, idempotency_key, started_at, sent_at, finished_at, outcome)
				VALUES ('a1', 'i1', 'hook', 1, 'w', 'k1', 1, 1, 2, 'landed')`,
			`INSERT INTO outbox_attempts (id, intent_id, lane, token, holder, idempotency_key, started_at, sent_at, finished_at, outcome)
				VALUES ('a3', 'i3', 'hook', 1, 'w', 'k3', 3, 3, 4, 'unknown')`,
			`INSERT INTO outbox_gaps (attempt_id, lane, sent_at, gap_ms, min_gap_ms) VALUES ('a3', 'hook', 3, 2, 0)`,
			`INSERT INTO outbox_checks (id, intent_id, checked_at, verdict, evidence) VALUES ('c1', 'i3', 5, 'unresolved', 'no Age')`,
			`INSERT INTO outbox_actions (id, intent_id, action, actor, reason, from_state, to_state, at)
				VALUES ('x1', 'i3', 'revive', 'ops', 'look again', 'retired', 'unresolved', 6)`,
		} {
			if _, err := old.SQL().ExecContext(ctx, q); err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
		}
		old.Close()

		db := sqltest.MustOpenURL(t, url, env)
		st := db.Outbox()
		ins, err := st.ListIntents(ctx, outbox.IntentFilter{Lane: "hook"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ins) != 3 || ins[0].State != outbox.StateLanded || ins[0].RemoteID != "w1" || ins[1].State != outbox.StatePending ||
			ins[2].State != outbox.StateUnresolved {
			t.Fatalf("intents after the migration: %+v", ins)
		}
		if ins[0].ChannelID != "ch1" || ins[1].ChannelID != "ch1" || ins[2].ChannelID != "" {
			t.Fatalf("origins: %q %q %q", ins[0].ChannelID, ins[1].ChannelID, ins[2].ChannelID)
		}
		if cs, err := st.Checks(ctx, "i3"); err != nil || len(cs) != 1 {
			t.Fatalf("checks %+v %v", cs, err)
		}
		if as, err := st.Actions(ctx, "i3"); err != nil || len(as) != 1 {
			t.Fatalf("actions %+v %v", as, err)
		}
		if gs, err := st.Gaps(ctx, "hook"); err != nil || len(gs) != 1 || gs[0].Count != 1 {
			t.Fatalf("gaps %+v %v", gs, err)
		}
		// The foreign keys moved to the rebuilt tables.
		for _, q := range []string{
			`INSERT INTO outbox_attempts (id, intent_id, lane, token, holder, idempotency_key, started_at) VALUES ('a9', 'nope', 'hook', 1, 'w', 'k9', 9)`,
			`INSERT INTO outbox_checks (id, intent_id, checked_at, verdict, evidence) VALUES ('c9', 'nope', 9, 'x', 'y')`,
			`INSERT INTO outbox_gaps (attempt_id, lane, sent_at, gap_ms, min_gap_ms) VALUES ('nope', 'hook', 9, 1, 0)`,
		} {
			if _, err := db.SQL().ExecContext(ctx, q); err == nil {
				t.Fatalf("a dangling reference was accepted:\n%s", q)
			}
		}
		// One write in flight per lane still holds.
		for _, id := range []string{"a7", "a8"} {
			_, err = db.SQL().ExecContext(ctx, `INSERT INTO outbox_attempts (id, intent_id, lane, token, holder, idempotency_key, started_at)
				VALUES ($1, 'i2', 'hook', 1, 'w', $1, 9)`, id)
		}
		if err == nil {
			t.Fatal("two open attempts on one lane")
		}
	})
}

// A page drafted before the migration, published again afterwards with the
// same summary (a sweep's repair), drafts nothing new, though the body
// format changed (it now names the page): the migration gave the page's
// latest intent the summary it shows, so its origin matches.
func TestOutboxOriginMigrationKeepsRepublishingQuiet(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		url := b.NewURL(t)
		env := sqltest.NewEnv(4)
		old, err := sqlstore.OpenUpToForTest(ctx, url, sqlstore.Options{Clock: env.Clock, IDs: env.IDs}, 5)
		if err != nil {
			t.Fatal(err)
		}
		// The source and its event are written as the old release stored
		// them: today's ingest store needs columns of later migrations.
		src := tidemark.Source{ID: "src1"}
		ev := tidemark.Event{ID: "ev1", EvidenceHash: tidemark.HashEvidence([]byte("e"))}
		now := env.Clock.Now().UnixMilli()
		for _, q := range []string{
			`INSERT INTO sources (id, name, kind, location, interval_ms, retry_budget, cursor, cursor_version, next_due_at, created_at, updated_at)
				VALUES ('src1', 'docs', 'git', '/tmp/docs', 3600000, 3, 'c1', 1, $1, $1, $1)`,
			`INSERT INTO events (id, source_id, item_key, title, occurred_at, evidence_hash, revision, run_id, created_at, updated_at)
				VALUES ('ev1', 'src1', 'c1', 'bump', $1, '` + ev.EvidenceHash + `', 1, 'run1', $1, $1)`,
			`INSERT INTO event_revisions (event_id, revision, evidence_hash, evidence, run_id, created_at)
				VALUES ('ev1', 1, '` + ev.EvidenceHash + `', 'e', 'run1', $1)`,
		} {
			if _, err := old.SQL().ExecContext(ctx, q, now); err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
		}
		// Two summaries of the event, the second current, and the page
		// showing it, as the old release stored and marked them (generation
		// 2, published): old rows, written with the old release's SQL.
		sums := []publish.Summary{{ID: "sum1", Text: "First take."}, {ID: "sum2", Text: "Bumps dependencies."}}
		plan := publish.Plan{PageID: "page1"}
		for i, s := range sums {
			current, retired := 0, any(now)
			if i == len(sums)-1 {
				current, retired = 1, nil
			}
			if _, err := old.SQL().ExecContext(ctx, `INSERT INTO summaries (id, event_id, evidence_hash, prompt_version, model, text, text_hash,
				is_current, published_at, published_generation, retired_at, created_at) VALUES ($1, 'ev1', $2, 'p', $3, $4, $5, $6, 1, $7, $8, $9)`,
				s.ID, ev.EvidenceHash, fmt.Sprint("m", i), s.Text, tidemark.HashEvidence([]byte(s.Text)), current, i+1, retired, now); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := old.SQL().ExecContext(ctx, `INSERT INTO pages (id, event_id, source_id, summary_id, evidence_hash, generation,
			published_summary_id, published_generation, published_etag, published_at, created_at, updated_at)
			VALUES ($1, 'ev1', 'src1', 'sum2', $2, 2, 'sum2', 2, 'e', 1, $3, $3)`, plan.PageID, ev.EvidenceHash, now); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`INSERT INTO outbox_lanes (name, provider, min_gap_ms, skew_ms, retire_spacing_ms, next_rank, created_at, updated_at)
				VALUES ('hook', 'webhook', 0, 0, 0, 2, 1, 1)`,
			`INSERT INTO outbox_channels (id, source_id, lane, target, parent, created_at) VALUES ('ch1', $1, 'hook', 'room', '', 1)`,
			// The old body: title and summary, no page reference.
			`INSERT INTO outbox_intents (id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, source_id, page_id, created_at, updated_at)
				VALUES ('i1', 'hook', 1, 'room', '', 'bump\n\nFirst take.', 'aa', 'k1', 'landed', $1, $2, 1, 1)`,
			`INSERT INTO outbox_intents (id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, source_id, page_id, created_at, updated_at)
				VALUES ('i2', 'hook', 2, 'room', '', 'bump\n\nBumps dependencies.', 'bb', 'k2', 'landed', $1, $2, 1, 1)`,
		} {
			args := []any{src.ID, plan.PageID}
			if !strings.Contains(q, "$2") {
				args = args[:1]
			}
			if strings.Contains(q, "outbox_lanes") {
				args = nil
			}
			if _, err := old.SQL().ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
		}
		old.Close()

		db := sqltest.MustOpenURL(t, url, env)
		st := db.Outbox()
		ins, err := st.ListIntents(ctx, outbox.IntentFilter{Lane: "hook"})
		if err != nil || len(ins) != 2 || ins[0].SummaryID != "" || ins[1].SummaryID != sums[1].ID {
			t.Fatalf("origins after the migration: %+v %v", ins, err)
		}
		svc := &publish.Service{Store: db.Publish().WithHooks(st.PublishHook()), Objects: mem.New()}
		if _, err := svc.Publish(ctx, sums[1].ID); err != nil {
			t.Fatal(err)
		}
		if ins, err := st.ListIntents(ctx, outbox.IntentFilter{Lane: "hook"}); err != nil || len(ins) != 2 {
			t.Fatalf("republishing after the migration drafted again: %+v %v", ins, err)
		}
	})
}

// Intents drafted before match_sha256 was kept are matched on their body
// until FillMatches gives them the fingerprint of their lane's provider;
// from then on a body the provider cannot tell from theirs is refused.
func TestOutboxFillMatchesOfOlderIntents(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		url := b.NewURL(t)
		env := sqltest.NewEnv(3)
		old, err := sqlstore.OpenUpToForTest(ctx, url, sqlstore.Options{Clock: env.Clock, IDs: env.IDs}, 26)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`INSERT INTO outbox_lanes (name, provider, min_gap_ms, skew_ms, retire_spacing_ms, next_rank, created_at, updated_at)
				VALUES ('slk', 'slack', 0, 0, 0, 1, 1, 1)`,
			fmt.Sprintf(`INSERT INTO outbox_intents (id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, created_at, updated_at)
				VALUES ('i1', 'slk', 1, 'C1', '', 'Deploy  finished', '%s', 'k1', 'landed', 1, 1)`, outbox.BodySHA256([]byte("Deploy  finished"))),
		} {
			if _, err := old.SQL().ExecContext(ctx, q); err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
		}
		old.Close()

		st := sqltest.MustOpenURL(t, url, env).Outbox()
		if _, err := st.Draft(ctx, outbox.Draft{Lane: "slk", Target: "C1", Body: "Deploy  finished"}); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("the same body before the fill: %v, want ErrConflict", err)
		}
		n, err := st.FillMatches(ctx)
		if err != nil || n != 1 {
			t.Fatalf("filled %d %v, want 1", n, err)
		}
		if _, err := st.Draft(ctx, outbox.Draft{Lane: "slk", Target: "C1", Body: "Deploy finished"}); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("a body with the same fingerprint after the fill: %v, want ErrConflict", err)
		}
		if n, err := st.FillMatches(ctx); err != nil || n != 0 {
			t.Fatalf("filled again %d %v, want 0", n, err)
		}
	})
}

// Migration 0029 records when each intent's key was first sent: for an
// intent attempted before it, the earliest attempt that carried the
// intent's key, else its latest attempt; nothing for one never attempted.
func TestOutboxFirstAttemptMigrationReadsTheJournal(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		url := b.NewURL(t)
		env := sqltest.NewEnv(3)
		old, err := sqlstore.OpenUpToForTest(ctx, url, sqlstore.Options{Clock: env.Clock, IDs: env.IDs}, 26)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`INSERT INTO outbox_lanes (name, provider, min_gap_ms, skew_ms, retire_spacing_ms, next_rank, created_at, updated_at)
				VALUES ('hook', 'webhook', 0, 0, 0, 4, 1, 1)`,
			`INSERT INTO outbox_intents (id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, attempts, last_attempt_at, created_at, updated_at)
				VALUES ('i1', 'hook', 1, 'room', '', 'one', 'aa', 'k1', 'unresolved', 2, 5000, 1, 5000)`,
			`INSERT INTO outbox_intents (id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, attempts, last_attempt_at, created_at, updated_at)
				VALUES ('i2', 'hook', 2, 'room', '', 'two', 'bb', 'k2', 'unresolved', 1, 7000, 1, 7000)`,
			`INSERT INTO outbox_intents (id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, created_at, updated_at)
				VALUES ('i3', 'hook', 3, 'room', '', 'three', 'cc', 'k3', 'pending', 1, 1)`,
			`INSERT INTO outbox_attempts (id, intent_id, lane, token, holder, idempotency_key, started_at, sent_at, finished_at, outcome)
				VALUES ('a1', 'i1', 'hook', 1, 'w', 'k1', 2000, 2000, 3000, 'unknown')`,
			`INSERT INTO outbox_attempts (id, intent_id, lane, token, holder, idempotency_key, started_at, sent_at, finished_at, outcome)
				VALUES ('a2', 'i1', 'hook', 1, 'w', 'k1', 5000, 5000, 6000, 'unknown')`,
		} {
			if _, err := old.SQL().ExecContext(ctx, q); err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
		}
		old.Close()

		db := sqltest.MustOpenURL(t, url, env)
		ins, err := db.Outbox().ListIntents(ctx, outbox.IntentFilter{Lane: "hook"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ins) != 3 {
			t.Fatalf("intents after the migration: %+v", ins)
		}
		if f := ins[0].FirstAttemptAt; f == nil || f.UnixMilli() != 2000 {
			t.Fatalf("i1's first attempt %v, want its earliest journaled attempt (2000)", f)
		}
		if f := ins[1].FirstAttemptAt; f == nil || f.UnixMilli() != 7000 {
			t.Fatalf("i2's first attempt %v, want its latest attempt for want of a journal (7000)", f)
		}
		if ins[2].FirstAttemptAt != nil {
			t.Fatalf("i3 was never attempted, first attempt %v", ins[2].FirstAttemptAt)
		}
	})
}
