package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/publish"
)

var fpMarkBeforeCommit = failpoint.Register("publish.mark.before-commit",
	"the summary and page are marked published and the hooks ran | the commit")

// PublishStore implements publish.Store.
type PublishStore struct {
	db    *DB
	hooks []MarkHook
}

// Publish returns the publish store over d.
func (d *DB) Publish() *PublishStore { return &PublishStore{db: d} }

// MarkHook runs inside the transaction that marks a page published, after
// the marks, so what it writes commits with the mark or not at all; an
// error rolls the mark back. It is how another pipeline's store composes a
// write into the mark: the outbox drafts its intents there
// (OutboxStore.PublishHook).
type MarkHook func(ctx context.Context, tx *sql.Tx, p tidemark.Publication) error

// WithHooks returns a publish store whose Mark also runs hooks, in order,
// inside its transaction; s is unchanged. The embedding program's wiring:
//
//	db.Publish().WithHooks(db.Outbox().PublishHook())
func (s *PublishStore) WithHooks(hooks ...MarkHook) *PublishStore {
	return &PublishStore{db: s.db, hooks: append(append([]MarkHook(nil), s.hooks...), hooks...)}
}

var _ publish.Store = (*PublishStore)(nil)

const summaryColumns = `id, event_id, evidence_hash, prompt_version, model, text, text_hash, is_current,
	rejected_reason, rejected_at, published_at, published_generation, retired_at, created_at`

func scanSummary(s scanner) (publish.Summary, error) {
	var (
		r                          publish.Summary
		current                    int
		rejected, published, retir sql.NullInt64
		created                    int64
	)
	err := s.Scan(&r.ID, &r.EventID, &r.EvidenceHash, &r.PromptVersion, &r.Model, &r.Text, &r.TextHash, &current,
		&r.RejectedReason, &rejected, &published, &r.PublishedGeneration, &retir, &created)
	if err != nil {
		return r, err
	}
	r.Current = current == 1
	r.RejectedAt, r.PublishedAt, r.RetiredAt = fromNullMS(rejected), fromNullMS(published), fromNullMS(retir)
	r.CreatedAt = fromMS(created)
	return r, nil
}

func (s *PublishStore) summary(ctx context.Context, q querier, id string) (publish.Summary, error) {
	r, err := scanSummary(q.QueryRowContext(ctx, `SELECT `+summaryColumns+` FROM summaries WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("summary %s: %w", id, tidemark.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("summary %s: %w", id, err)
	}
	return r, nil
}

// Summary implements publish.Store.
func (s *PublishStore) Summary(ctx context.Context, id string) (publish.Summary, error) {
	return s.summaryLifted(ctx, s.db.db, id)
}

// summaryLifted is a summary with its lifted rejections.
func (s *PublishStore) summaryLifted(ctx context.Context, q queryer, id string) (publish.Summary, error) {
	sum, err := s.summary(ctx, q, id)
	if err != nil {
		return sum, err
	}
	one := []publish.Summary{sum}
	err = s.fillLifted(ctx, q, one)
	return one[0], err
}

// Summaries implements publish.Store.
func (s *PublishStore) Summaries(ctx context.Context, f publish.SummaryFilter) ([]publish.Summary, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT ` + summaryColumns + ` FROM summaries WHERE 1 = 1`
	args := []any{}
	if f.EventID != "" {
		args = append(args, f.EventID)
		q += ` AND event_id = $1`
	}
	if f.BeforeID != "" {
		args = append(args, ms(f.BeforeCreatedAt), f.BeforeID)
		q += fmt.Sprintf(` AND (created_at < $%d OR (created_at = $%d AND id < $%d))`, len(args)-1, len(args)-1, len(args))
	}
	args = append(args, f.Limit)
	q += fmt.Sprintf(` ORDER BY created_at DESC, id DESC LIMIT $%d`, len(args))
	out, err := queryAll(ctx, s.db.db, scanSummary, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list summaries: %w", err)
	}
	if err := s.fillLifted(ctx, s.db.db, out); err != nil {
		return nil, err
	}
	return out, nil
}

const liftedColumns = `summary_id, rejected_reason, rejected_at, reason, lifted_at`

// fillLifted reads the lifted rejections of sums, in one query.
func (s *PublishStore) fillLifted(ctx context.Context, q rowsQueryer, sums []publish.Summary) error {
	if len(sums) == 0 {
		return nil
	}
	at := map[string]int{}
	var marks []string
	var args []any
	for i, sum := range sums {
		at[sum.ID] = i
		args = append(args, sum.ID)
		marks = append(marks, fmt.Sprintf("$%d", len(args)))
	}
	type lifted struct {
		summary string
		publish.LiftedRejection
	}
	ls, err := queryAll(ctx, q, func(sc scanner) (lifted, error) {
		var (
			l        lifted
			rejected int64
			when     int64
		)
		err := sc.Scan(&l.summary, &l.RejectedReason, &rejected, &l.Reason, &when)
		l.RejectedAt, l.At = fromMS(rejected), fromMS(when)
		return l, err
	}, `SELECT `+liftedColumns+` FROM summary_lifted_rejections
		WHERE summary_id IN (`+strings.Join(marks, ", ")+`) ORDER BY lifted_at, id`, args...)
	if err != nil {
		return fmt.Errorf("lifted rejections of summaries: %w", err)
	}
	for _, l := range ls {
		i := at[l.summary]
		sums[i].Lifted = append(sums[i].Lifted, l.LiftedRejection)
	}
	return nil
}

// lockEvent reads an event, locking its row so its evidence cannot move
// until the transaction ends.
func (s *PublishStore) lockEvent(ctx context.Context, tx *sql.Tx, eventID string) (tidemark.Event, error) {
	ev, err := scanEvent(tx.QueryRowContext(ctx, `SELECT `+eventColumns+` FROM events WHERE id = $1`+s.db.Dialect.LockRow, eventID))
	if errors.Is(err, sql.ErrNoRows) {
		return ev, fmt.Errorf("event %s: %w", eventID, tidemark.ErrNotFound)
	}
	return ev, err
}

// Accept implements publish.Store.
func (s *PublishStore) Accept(ctx context.Context, ns publish.NewSummary) (publish.Summary, bool, error) {
	switch {
	case ns.EventID == "":
		return publish.Summary{}, false, tidemark.Invalidf("summary event", "", "is required")
	case strings.TrimSpace(ns.Text) == "":
		return publish.Summary{}, false, tidemark.Invalidf("summary text", "", "is empty")
	case ns.Model == "" || ns.PromptVersion == "":
		return publish.Summary{}, false, tidemark.Invalidf("summary identity", ns.Model+"/"+ns.PromptVersion, "needs a model and a prompt version")
	case ns.EvidenceHash == "":
		return publish.Summary{}, false, tidemark.Invalidf("summary evidence hash", "", "is required")
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return publish.Summary{}, false, err
	}
	defer tx.Rollback()
	ev, err := s.lockEvent(ctx, tx, ns.EventID)
	if err != nil {
		return publish.Summary{}, false, err
	}
	if ev.EvidenceHash != ns.EvidenceHash {
		return publish.Summary{}, false, fmt.Errorf("summary of event %s for evidence %.12s (current %.12s): %w",
			ns.EventID, ns.EvidenceHash, ev.EvidenceHash, publish.ErrEvidenceMismatch)
	}
	textHash := tidemark.HashEvidence([]byte(ns.Text))
	existing, err := scanSummary(tx.QueryRowContext(ctx, `SELECT `+summaryColumns+` FROM summaries
		WHERE event_id = $1 AND evidence_hash = $2 AND prompt_version = $3 AND model = $4`,
		ns.EventID, ns.EvidenceHash, ns.PromptVersion, ns.Model))
	switch {
	case err == nil && existing.TextHash == textHash && !existing.Current && !existing.Rejected():
		// Superseded by another model or prompt: switching back to it
		// makes it current again.
		sum, err := s.makeCurrent(ctx, tx, existing, ev.SourceID)
		if err != nil {
			return sum, false, err
		}
		return sum, false, tx.Commit()
	case err == nil && existing.TextHash == textHash:
		return existing, false, nil // harmless replay
	case err == nil:
		return publish.Summary{}, false, fmt.Errorf("summary %s of event %s (%s, %s): %w",
			existing.ID, ns.EventID, ns.Model, ns.PromptVersion, publish.ErrIdentityConflict)
	case !errors.Is(err, sql.ErrNoRows):
		return publish.Summary{}, false, err
	}
	now := ms(s.db.Clock.Now())
	pageID, err := s.ensurePage(ctx, tx, ns.EventID, ev.SourceID, now)
	if err != nil {
		return publish.Summary{}, false, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE summaries SET is_current = 0, retired_at = $1
		WHERE event_id = $2 AND is_current = 1`, now, ns.EventID); err != nil {
		return publish.Summary{}, false, fmt.Errorf("retire summary of %s: %w", ns.EventID, err)
	}
	id := s.db.IDs.New()
	if _, err := tx.ExecContext(ctx, `INSERT INTO summaries
		(id, event_id, evidence_hash, prompt_version, model, text, text_hash, is_current, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8)`,
		id, ns.EventID, ns.EvidenceHash, ns.PromptVersion, ns.Model, ns.Text, textHash, now); err != nil {
		if IsUniqueViolation(err) {
			return publish.Summary{}, false, fmt.Errorf("summary of %s: accepted concurrently: %w", ns.EventID, tidemark.ErrConflict)
		}
		return publish.Summary{}, false, fmt.Errorf("insert summary: %w", err)
	}
	err = exec1(ctx, tx, fmt.Errorf("page %s vanished: %w", pageID, tidemark.ErrUnconfirmed),
		`UPDATE pages SET summary_id = $1, evidence_hash = $2, updated_at = $3 WHERE id = $4`,
		id, ns.EvidenceHash, now, pageID)
	if err != nil {
		return publish.Summary{}, false, err
	}
	// The event's failures under this model and prompt are over.
	if _, err := tx.ExecContext(ctx, `DELETE FROM summary_failures WHERE event_id = $1 AND model = $2 AND prompt_version = $3`,
		ns.EventID, ns.Model, ns.PromptVersion); err != nil {
		return publish.Summary{}, false, fmt.Errorf("forget the failures to summarize %s: %w", ns.EventID, err)
	}
	sum, err := s.summary(ctx, tx, id)
	if err != nil {
		return sum, false, err
	}
	if err := tx.Commit(); err != nil {
		return publish.Summary{}, false, fmt.Errorf("accept summary: commit: %w", err)
	}
	return sum, true, nil
}

// makeCurrent makes sum (of its event's current evidence, not rejected,
// its event locked) the event's current summary again: it retires the one
// current and moves the event's pointer. It keeps when it was first
// published (published_at): a channel added since does not announce it
// when its page is republished, as for any page published before.
func (s *PublishStore) makeCurrent(ctx context.Context, tx *sql.Tx, sum publish.Summary, sourceID string) (publish.Summary, error) {
	now := ms(s.db.Clock.Now())
	pageID, err := s.ensurePage(ctx, tx, sum.EventID, sourceID, now)
	if err != nil {
		return sum, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE summaries SET is_current = 0, retired_at = $1
		WHERE event_id = $2 AND is_current = 1`, now, sum.EventID); err != nil {
		return sum, fmt.Errorf("retire summary of %s: %w", sum.EventID, err)
	}
	if err := exec1(ctx, tx, fmt.Errorf("reinstate summary %s: %w", sum.ID, tidemark.ErrUnconfirmed),
		`UPDATE summaries SET is_current = 1, retired_at = NULL WHERE id = $1 AND rejected_reason = ''`, sum.ID); err != nil {
		return sum, err
	}
	if err := exec1(ctx, tx, fmt.Errorf("page %s vanished: %w", pageID, tidemark.ErrUnconfirmed),
		`UPDATE pages SET summary_id = $1, evidence_hash = $2, updated_at = $3 WHERE id = $4`,
		sum.ID, sum.EvidenceHash, now, pageID); err != nil {
		return sum, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM summary_failures WHERE event_id = $1 AND model = $2 AND prompt_version = $3`,
		sum.EventID, sum.Model, sum.PromptVersion); err != nil {
		return sum, fmt.Errorf("forget the failures to summarize %s: %w", sum.EventID, err)
	}
	return s.summaryLifted(ctx, tx, sum.ID)
}

// Reinstate implements publish.Store.
func (s *PublishStore) Reinstate(ctx context.Context, eventID, evidenceHash, model, promptVersion string) (publish.Summary, bool, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return publish.Summary{}, false, err
	}
	defer tx.Rollback()
	ev, err := s.lockEvent(ctx, tx, eventID)
	if err != nil {
		return publish.Summary{}, false, err
	}
	if ev.EvidenceHash != evidenceHash {
		return publish.Summary{}, false, fmt.Errorf("reinstate a summary of event %s for evidence %.12s (current %.12s): %w",
			eventID, evidenceHash, ev.EvidenceHash, publish.ErrEvidenceMismatch)
	}
	sum, err := scanSummary(tx.QueryRowContext(ctx, `SELECT `+summaryColumns+` FROM summaries
		WHERE event_id = $1 AND evidence_hash = $2 AND prompt_version = $3 AND model = $4`,
		eventID, evidenceHash, promptVersion, model))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return sum, false, fmt.Errorf("summary of event %s under %s/%s: %w", eventID, model, promptVersion, tidemark.ErrNotFound)
	case err != nil:
		return sum, false, err
	case sum.Rejected():
		return sum, false, fmt.Errorf("summary %s of event %s (%s): %w", sum.ID, eventID, sum.RejectedReason, publish.ErrRejected)
	case sum.Current:
		return sum, false, nil
	}
	if sum, err = s.makeCurrent(ctx, tx, sum, ev.SourceID); err != nil {
		return sum, false, err
	}
	return sum, true, tx.Commit()
}

// Unreject implements publish.Store.
func (s *PublishStore) Unreject(ctx context.Context, id, reason string) (publish.Summary, error) {
	if strings.TrimSpace(reason) == "" {
		return publish.Summary{}, tidemark.Invalidf("reason", "", "lifting a rejection needs a reason")
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return publish.Summary{}, err
	}
	defer tx.Rollback()
	sum, err := s.summary(ctx, tx, id)
	if err != nil {
		return sum, err
	}
	ev, err := s.lockEvent(ctx, tx, sum.EventID)
	if err != nil {
		return sum, err
	}
	if !sum.Rejected() {
		return sum, fmt.Errorf("summary %s of event %s: %w", id, sum.EventID, publish.ErrNotRejected)
	}
	now := ms(s.db.Clock.Now())
	rejectedAt := now // a rejection has its time; this is for one that somehow has not
	if sum.RejectedAt != nil {
		rejectedAt = ms(*sum.RejectedAt)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO summary_lifted_rejections
		(id, summary_id, rejected_reason, rejected_at, reason, lifted_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		s.db.IDs.New(), id, sum.RejectedReason, rejectedAt, reason, now); err != nil {
		return sum, fmt.Errorf("record the lifted rejection of summary %s: %w", id, err)
	}
	if err := exec1(ctx, tx, fmt.Errorf("unreject summary %s: %w", id, tidemark.ErrUnconfirmed),
		`UPDATE summaries SET rejected_reason = '', rejected_at = NULL WHERE id = $1 AND rejected_reason <> ''`, id); err != nil {
		return sum, err
	}
	sum.RejectedReason, sum.RejectedAt = "", nil
	if sum.EvidenceHash == ev.EvidenceHash {
		if sum, err = s.makeCurrent(ctx, tx, sum, ev.SourceID); err != nil {
			return sum, err
		}
	} else if sum, err = s.summaryLifted(ctx, tx, id); err != nil {
		return sum, err
	}
	return sum, tx.Commit()
}

// ensurePage creates the event's page row (its ID is stable from then on)
// and returns its ID, locked.
func (s *PublishStore) ensurePage(ctx context.Context, tx *sql.Tx, eventID, sourceID string, now int64) (string, error) {
	if _, err := tx.ExecContext(ctx, `INSERT INTO pages (id, event_id, source_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $4) ON CONFLICT (event_id) DO NOTHING`, s.db.IDs.New(), eventID, sourceID, now); err != nil {
		return "", fmt.Errorf("page of %s: %w", eventID, err)
	}
	var id string
	err := tx.QueryRowContext(ctx, `SELECT id FROM pages WHERE event_id = $1`+s.db.Dialect.LockRow, eventID).Scan(&id)
	return id, err
}

// Reject implements publish.Store.
func (s *PublishStore) Reject(ctx context.Context, id, reason string) (publish.Summary, error) {
	if strings.TrimSpace(reason) == "" {
		return publish.Summary{}, tidemark.Invalidf("reason", "", "a rejection needs a reason")
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return publish.Summary{}, err
	}
	defer tx.Rollback()
	sum, err := s.summary(ctx, tx, id)
	if err != nil {
		return sum, err
	}
	if _, err := s.lockEvent(ctx, tx, sum.EventID); err != nil {
		return sum, err
	}
	if sum.Rejected() {
		if strings.TrimSpace(sum.RejectedReason) == strings.TrimSpace(reason) {
			return sum, nil // a replay
		}
		e := &publish.RejectedAlreadyError{Summary: sum.ID, Reason: sum.RejectedReason}
		if sum.RejectedAt != nil {
			e.At = *sum.RejectedAt
		}
		return sum, e
	}
	now := ms(s.db.Clock.Now())
	err = exec1(ctx, tx, fmt.Errorf("reject summary %s: %w", id, tidemark.ErrUnconfirmed),
		`UPDATE summaries SET rejected_reason = $1, rejected_at = $2, is_current = 0,
		retired_at = CASE WHEN is_current = 1 THEN $2 ELSE retired_at END
		WHERE id = $3 AND rejected_reason = ''`, reason, now, id)
	if err != nil {
		return sum, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE pages SET summary_id = NULL, evidence_hash = '', updated_at = $1
		WHERE summary_id = $2`, now, id); err != nil {
		return sum, err
	}
	if sum, err = s.summary(ctx, tx, id); err != nil {
		return sum, err
	}
	// What a publication of it drafted and is not sent yet is withdrawn
	// with it, now, rather than when delivery reaches it.
	if _, err := s.db.Outbox().retireOfSummary(ctx, tx, id, "tidemark", rejectedWhy(reason)); err != nil {
		return sum, err
	}
	return sum, tx.Commit()
}

// Unsummarized implements publish.Store.
func (s *PublishStore) Unsummarized(ctx context.Context, model, promptVersion string, limit int) ([]tidemark.Event, error) {
	if limit <= 0 {
		limit = 100
	}
	// An event whose summary of this identity another model or prompt
	// superseded is listed, to be reinstated; a rejected one is not.
	out, err := queryAll(ctx, s.db.db, scanEvent, `SELECT `+eventColumns+` FROM events e
		WHERE NOT EXISTS (SELECT 1 FROM summaries s WHERE s.event_id = e.id
			AND s.evidence_hash = e.evidence_hash AND s.model = $1 AND s.prompt_version = $2
			AND (s.is_current = 1 OR s.rejected_reason <> ''))
		AND NOT EXISTS (SELECT 1 FROM summary_failures f WHERE f.event_id = e.id
			AND f.model = $1 AND f.prompt_version = $2 AND f.evidence_hash = e.evidence_hash AND f.held_until > $4)
		ORDER BY e.occurred_at, e.id LIMIT $3`, model, promptVersion, limit, ms(s.db.Clock.Now()))
	if err != nil {
		return nil, fmt.Errorf("unsummarized events: %w", err)
	}
	return out, nil
}

// HeldSummaries implements publish.Store: the held events Unsummarized
// leaves out (a hold of evidence the event no longer has holds nothing).
func (s *PublishStore) HeldSummaries(ctx context.Context, model, promptVersion string, limit int) ([]publish.Held, error) {
	if limit <= 0 {
		limit = 100
	}
	out, err := queryAll(ctx, s.db.db, func(sc scanner) (publish.Held, error) {
		var h publish.Held
		var until int64
		err := sc.Scan(&h.EventID, &h.Title, &h.Failures, &until, &h.Err)
		h.Until = fromMS(until)
		return h, err
	}, `SELECT f.event_id, e.title, f.failures, f.held_until, f.last_error FROM summary_failures f
		JOIN events e ON e.id = f.event_id AND e.evidence_hash = f.evidence_hash
		WHERE f.model = $1 AND f.prompt_version = $2 AND f.held_until > $3
		  AND NOT EXISTS (SELECT 1 FROM summaries s WHERE s.event_id = e.id
			AND s.evidence_hash = e.evidence_hash AND s.model = $1 AND s.prompt_version = $2
			AND (s.is_current = 1 OR s.rejected_reason <> ''))
		ORDER BY f.held_until, f.event_id LIMIT $4`, model, promptVersion, ms(s.db.Clock.Now()), limit)
	if err != nil {
		return nil, fmt.Errorf("held events: %w", err)
	}
	return out, nil
}

// SummaryFailed implements publish.Store: failures of other evidence than
// the recorded one start the count over.
func (s *PublishStore) SummaryFailed(ctx context.Context, f publish.SummaryFailure) (int, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	now := ms(s.db.Clock.Now())
	if _, err := tx.ExecContext(ctx, `INSERT INTO summary_failures
		(event_id, model, prompt_version, evidence_hash, failures, last_error, first_failed_at, last_failed_at)
		VALUES ($1, $2, $3, $4, 1, $5, $6, $6)
		ON CONFLICT (event_id, model, prompt_version) DO UPDATE SET
			failures = CASE WHEN summary_failures.evidence_hash = excluded.evidence_hash
				THEN summary_failures.failures + 1 ELSE 1 END,
			first_failed_at = CASE WHEN summary_failures.evidence_hash = excluded.evidence_hash
				THEN summary_failures.first_failed_at ELSE excluded.first_failed_at END,
			held_until = CASE WHEN summary_failures.evidence_hash = excluded.evidence_hash
				THEN summary_failures.held_until ELSE 0 END,
			evidence_hash = excluded.evidence_hash, last_error = excluded.last_error,
			last_failed_at = excluded.last_failed_at`,
		f.EventID, f.Model, f.PromptVersion, f.EvidenceHash, f.Err, now); err != nil {
		return 0, fmt.Errorf("record the failure to summarize event %s: %w", f.EventID, err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT failures FROM summary_failures
		WHERE event_id = $1 AND model = $2 AND prompt_version = $3`, f.EventID, f.Model, f.PromptVersion).Scan(&n); err != nil {
		return 0, fmt.Errorf("record the failure to summarize event %s: %w", f.EventID, err)
	}
	return n, tx.Commit()
}

// ClaimSummary implements publish.Store. The claim is one conditional
// upsert (nobody's, expired, or the caller's own); when another holder's
// claim stands in its way, the liveness rule decides (Options.Liveness):
// a gone holder's claim is taken over with a compare-and-swap on the claim
// as read, so of two takers one wins, and a claim released or taken
// meanwhile is looked at again.
func (s *PublishStore) ClaimSummary(ctx context.Context, c publish.SummaryClaim, ttl time.Duration) (publish.SummaryClaimed, error) {
	if strings.TrimSpace(c.Holder) == "" {
		return publish.SummaryClaimed{}, tidemark.Invalidf("summary claim holder", "", "is required")
	}
	now := s.db.Clock.Now()
	until := ms(now.Add(ttl))
	var stands publish.SummaryClaimed
	for range 3 {
		n, err := rowsAffected(s.db.db.ExecContext(ctx, `INSERT INTO summary_claims (event_id, model, prompt_version, holder, claimed_until)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (event_id, model, prompt_version) DO UPDATE SET holder = excluded.holder, claimed_until = excluded.claimed_until
		WHERE summary_claims.holder = excluded.holder OR summary_claims.claimed_until <= $6`,
			c.EventID, c.Model, c.PromptVersion, c.Holder, until, ms(now)))
		if err != nil {
			return stands, fmt.Errorf("claim summarizing event %s: %w", c.EventID, err)
		}
		if n == 1 {
			return publish.SummaryClaimed{OK: true, Holder: c.Holder, Until: fromMS(until)}, nil
		}
		var holder string
		var heldUntil int64
		err = s.db.db.QueryRowContext(ctx, `SELECT holder, claimed_until FROM summary_claims
			WHERE event_id = $1 AND model = $2 AND prompt_version = $3`, c.EventID, c.Model, c.PromptVersion).Scan(&holder, &heldUntil)
		if errors.Is(err, sql.ErrNoRows) {
			continue // released meanwhile: claim again
		}
		if err != nil {
			return stands, fmt.Errorf("claim summarizing event %s: read the claim in the way: %w", c.EventID, err)
		}
		stands = publish.SummaryClaimed{Holder: holder, Until: fromMS(heldUntil)}
		if s.db.liveness.Stands(holder, stands.Until, now) {
			return stands, nil
		}
		// Its holder's process is gone (or its claim just expired): take
		// it over, if it is still the claim read.
		n, err = rowsAffected(s.db.db.ExecContext(ctx, `UPDATE summary_claims SET holder = $1, claimed_until = $2
			WHERE event_id = $3 AND model = $4 AND prompt_version = $5 AND holder = $6 AND claimed_until = $7`,
			c.Holder, until, c.EventID, c.Model, c.PromptVersion, holder, heldUntil))
		if err != nil {
			return stands, fmt.Errorf("claim summarizing event %s: take over the claim of gone holder %s: %w", c.EventID, holder, err)
		}
		if n == 1 {
			return publish.SummaryClaimed{OK: true, Holder: c.Holder, Until: fromMS(until), TookOver: holder}, nil
		}
		// Another worker took or released it first: look again.
	}
	return stands, nil
}

// ReleaseSummary implements publish.Store.
func (s *PublishStore) ReleaseSummary(ctx context.Context, c publish.SummaryClaim) error {
	if _, err := s.db.db.ExecContext(ctx, `DELETE FROM summary_claims
		WHERE event_id = $1 AND model = $2 AND prompt_version = $3 AND holder = $4`,
		c.EventID, c.Model, c.PromptVersion, c.Holder); err != nil {
		return fmt.Errorf("release the claim on summarizing event %s: %w", c.EventID, err)
	}
	return nil
}

// SummarizedSince implements publish.Store.
func (s *PublishStore) SummarizedSince(ctx context.Context, f publish.SummaryFailure) (bool, error) {
	var n int
	err := s.db.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM summary_failures f
		WHERE f.event_id = $1 AND f.model = $2 AND f.prompt_version = $3
		  AND EXISTS (SELECT 1 FROM summaries s WHERE s.model = f.model AND s.prompt_version = f.prompt_version
			AND s.event_id <> f.event_id AND s.created_at >= f.first_failed_at)`,
		f.EventID, f.Model, f.PromptVersion).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("summaries since event %s first failed: %w", f.EventID, err)
	}
	return n > 0, nil
}

// HoldSummary implements publish.Store. Only a failure recorded for the
// same evidence is held.
func (s *PublishStore) HoldSummary(ctx context.Context, f publish.SummaryFailure, d time.Duration) (time.Time, error) {
	until := s.db.Clock.Now().Add(d)
	err := exec1(ctx, s.db.db, fmt.Errorf("hold event %s: no failure recorded for its evidence %.12s: %w", f.EventID, f.EvidenceHash, tidemark.ErrConflict),
		`UPDATE summary_failures SET held_until = $1
		WHERE event_id = $2 AND model = $3 AND prompt_version = $4 AND evidence_hash = $5`,
		ms(until), f.EventID, f.Model, f.PromptVersion, f.EvidenceHash)
	return until, err
}

// Evidence implements publish.Store.
func (s *PublishStore) Evidence(ctx context.Context, eventID string) ([]byte, string, error) {
	return s.db.Ingest().Evidence(ctx, eventID, 0)
}

// PublishedEvidence returns the evidence of an event at a revision only if
// it is what the event's published page shows: the page is published, its
// summary was judged on that evidence, and it has not been rejected since.
// Anything else is not found, as if the event did not exist: the wiki's
// evidence download follows publication, as search does.
func (s *PublishStore) PublishedEvidence(ctx context.Context, eventID string, revision int) ([]byte, string, error) {
	var b []byte
	var hash string
	err := s.db.db.QueryRowContext(ctx, `SELECT r.evidence, r.evidence_hash FROM pages p
		JOIN summaries s ON s.id = p.published_summary_id AND s.rejected_reason = ''
		JOIN event_revisions r ON r.event_id = p.event_id AND r.evidence_hash = s.evidence_hash
		WHERE p.event_id = $1 AND r.revision = $2`, eventID, revision).Scan(&b, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", fmt.Errorf("published evidence of event %s revision %d: %w", eventID, revision, tidemark.ErrNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("published evidence of event %s: %w", eventID, err)
	}
	return b, hash, nil
}

// Revision implements publish.Store.
func (s *PublishStore) Revision(ctx context.Context, eventID string, revision int) ([]byte, string, error) {
	if revision <= 0 {
		return nil, "", fmt.Errorf("event %s revision %d: %w", eventID, revision, tidemark.ErrNotFound)
	}
	return s.db.Ingest().Evidence(ctx, eventID, revision)
}

// SourceOf implements publish.Store.
func (s *PublishStore) SourceOf(ctx context.Context, sourceID string) (publish.SourceInfo, error) {
	return s.source(ctx, s.db.db, sourceID)
}

// Unpublished implements publish.Store.
func (s *PublishStore) Unpublished(ctx context.Context, limit int) ([]string, error) {
	if limit <= 0 {
		limit = 100
	}
	out, err := queryAll(ctx, s.db.db, func(sc scanner) (id string, err error) { return id, sc.Scan(&id) },
		`SELECT p.summary_id FROM pages p JOIN events e ON e.id = p.event_id
		WHERE p.summary_id IS NOT NULL AND p.evidence_hash = e.evidence_hash
		  AND (p.published_summary_id IS NULL OR p.published_summary_id <> p.summary_id)
		ORDER BY p.id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("unpublished summaries: %w", err)
	}
	return out, nil
}

// Prepare implements publish.Store.
func (s *PublishStore) Prepare(ctx context.Context, summaryID string) (publish.Plan, error) {
	var p publish.Plan
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return p, err
	}
	defer tx.Rollback()
	sum, err := s.summary(ctx, tx, summaryID)
	if err != nil {
		return p, err
	}
	if p.Event, err = s.lockEvent(ctx, tx, sum.EventID); err != nil {
		return p, err
	}
	var pointer, published sql.NullString
	var pointerHash string
	err = tx.QueryRowContext(ctx, `SELECT id, summary_id, evidence_hash, published_summary_id, published_generation, published_etag
		FROM pages WHERE event_id = $1`+s.db.Dialect.LockRow,
		sum.EventID).Scan(&p.PageID, &pointer, &pointerHash, &published, &p.Published.Generation, &p.Published.ETag)
	p.Published.SummaryID = published.String
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("summary %s: event %s has no page: %w", summaryID, sum.EventID, publish.ErrSuperseded)
	}
	if err != nil {
		return p, err
	}
	switch {
	case sum.Rejected():
		return p, fmt.Errorf("summary %s (%s): %w", summaryID, sum.RejectedReason, publish.ErrRejected)
	case !sum.Current:
		return p, fmt.Errorf("summary %s is retired: %w", summaryID, publish.ErrSuperseded)
	case pointer.String != summaryID || pointerHash != sum.EvidenceHash:
		return p, fmt.Errorf("summary %s: event %s points at %q: %w", summaryID, sum.EventID, pointer.String, publish.ErrSuperseded)
	case p.Event.EvidenceHash != sum.EvidenceHash:
		return p, fmt.Errorf("summary %s: event %s was re-frozen (evidence %.12s, summary's %.12s): %w",
			summaryID, sum.EventID, p.Event.EvidenceHash, sum.EvidenceHash, publish.ErrSuperseded)
	}
	err = tx.QueryRowContext(ctx, `UPDATE pages SET generation = generation + 1, updated_at = $1 WHERE id = $2 RETURNING generation`,
		ms(s.db.Clock.Now()), p.PageID).Scan(&p.Generation)
	if err != nil {
		return p, fmt.Errorf("allocate generation of page %s: %w", p.PageID, err)
	}
	if p.Source, err = s.source(ctx, tx, p.Event.SourceID); err != nil {
		return p, err
	}
	p.Summary = sum
	return p, tx.Commit()
}

func (s *PublishStore) source(ctx context.Context, q querier, id string) (publish.SourceInfo, error) {
	var si publish.SourceInfo
	err := q.QueryRowContext(ctx, `SELECT id, name, kind, location FROM sources WHERE id = $1`, id).
		Scan(&si.ID, &si.Name, &si.Kind, &si.Location)
	if errors.Is(err, sql.ErrNoRows) {
		return si, fmt.Errorf("source %s: %w", id, tidemark.ErrNotFound)
	}
	return si, err
}

// Mark implements publish.Store.
func (s *PublishStore) Mark(ctx context.Context, p publish.Plan, w publish.Written) (tidemark.Publication, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return publication(p), err
	}
	defer tx.Rollback()
	pub, err := s.mark(ctx, tx, p, w)
	if err != nil {
		return pub, err
	}
	if err := tx.Commit(); err != nil {
		return pub, fmt.Errorf("mark page %s: commit: %w", p.PageID, err)
	}
	return pub, nil
}

// maxMarks bounds the marks one transaction carries: each mark is a
// savepoint, and PostgreSQL keeps the subtransactions of a transaction in
// a per-backend cache of 64 before every snapshot must look them up.
const maxMarks = 32

// MaxMarks implements publish.BatchMarker. SQLite has one writer, so marks
// that queue for it are worth committing together (1.2× pages/s in
// BenchmarkMarkGroupCommit); PostgreSQL writes them side by side, and a
// batch would queue them behind one another (0.6×): 1, do not batch.
func (s *PublishStore) MaxMarks() int {
	if s.db.Dialect.Name != SQLite.Name {
		return 1
	}
	return maxMarks
}

// MarkMany implements publish.BatchMarker: the marks are written in one
// transaction, each in its own savepoint, so each keeps its conditions
// and a mark that fails them (or whose hook fails) is rolled back alone.
// The events are locked in ID order, as no two batches can then wait on
// each other. If the transaction fails as a whole (it wrote nothing),
// each mark is retried on its own.
func (s *PublishStore) MarkMany(ctx context.Context, ps []publish.Plan, ws []publish.Written) ([]tidemark.Publication, []error) {
	pubs, errs := make([]tidemark.Publication, len(ps)), make([]error, len(ps))
	if err := s.markMany(ctx, ps, ws, pubs, errs); err != nil {
		for i := range ps {
			pubs[i], errs[i] = s.Mark(ctx, ps[i], ws[i])
		}
	}
	return pubs, errs
}

func (s *PublishStore) markMany(ctx context.Context, ps []publish.Plan, ws []publish.Written, pubs []tidemark.Publication, errs []error) error {
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(ps[a].Event.ID, ps[b].Event.ID) })
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, i := range order {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT mark`); err != nil {
			return err
		}
		pubs[i], errs[i] = s.mark(ctx, tx, ps[i], ws[i])
		if errs[i] != nil {
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT mark`); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT mark`); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("mark %d pages: commit: %w", len(ps), err)
	}
	return nil
}

func publication(p publish.Plan) tidemark.Publication {
	title := p.Title
	if title == "" {
		title = p.Event.Title
	}
	return tidemark.Publication{PageID: p.PageID, EventID: p.Event.ID, SourceID: p.Source.ID, SummaryID: p.Summary.ID,
		Generation: p.Generation, Title: title, Summary: p.Summary.Text, PageURL: p.PageURL}
}

// mark writes one mark inside tx (see Mark), up to its commit.
func (s *PublishStore) mark(ctx context.Context, tx *sql.Tx, p publish.Plan, w publish.Written) (tidemark.Publication, error) {
	pub := publication(p)
	title := pub.Title
	// Lock the event, as Accept does, so the condition below is decided
	// against a settled pointer.
	if _, err := s.lockEvent(ctx, tx, p.Event.ID); err != nil {
		return pub, err
	}
	now := ms(s.db.Clock.Now())
	err := exec1(ctx, tx, fmt.Errorf("mark summary %s on page %s: %w", p.Summary.ID, p.PageID, publish.ErrLostRace),
		`UPDATE summaries SET published_at = COALESCE(published_at, $1), published_generation = $2
		WHERE id = $3 AND is_current = 1 AND rejected_reason = '' AND evidence_hash = $4
		  AND evidence_hash = (SELECT evidence_hash FROM events WHERE id = $5)
		  AND EXISTS (SELECT 1 FROM pages WHERE id = $6 AND event_id = $5 AND summary_id = $3 AND evidence_hash = $4)`,
		now, p.Generation, p.Summary.ID, p.Summary.EvidenceHash, p.Event.ID, p.PageID)
	if err != nil {
		return pub, err
	}
	// The page is marked only if the body was written to the store the
	// wiki is bound to: a worker that missed a rebind wrote it to the old
	// store, and the books must not say the wiki's store holds it.
	newer := fmt.Errorf("mark page %s generation %d: %w", p.PageID, p.Generation, publish.ErrNewerPublished)
	// A page shows its source's name: rendered with a name the source no
	// longer has (a rename committed meanwhile), it is recorded in no
	// format, so the next round republishes it as Restyle says.
	res, err := tx.ExecContext(ctx, `UPDATE pages SET published_summary_id = $1, published_generation = $2, published_etag = $3,
		published_at = $4, updated_at = $4, title = $6, headline = $7, neighbours = $8,
		published_format = CASE WHEN (SELECT name FROM sources WHERE id = pages.source_id) = $12 THEN $9 ELSE '' END,
		absent = 0
		WHERE id = $5 AND published_generation < $2
		  AND NOT EXISTS (SELECT 1 FROM wiki_store WHERE store_id <> $10 OR location <> $11)`,
		p.Summary.ID, p.Generation, w.ETag, now, p.PageID, p.Title, p.Headline, p.Neighbours(), w.Format, w.Store.ID, w.Store.Location,
		p.Source.Name)
	if err := expectOne(res, err, newer); err != nil {
		if err == newer { // which condition: the store's, or a newer generation's
			if berr := s.checkBound(ctx, tx, w.Store); berr != nil {
				return pub, fmt.Errorf("mark page %s: %w", p.PageID, berr)
			}
		}
		return pub, err
	}
	// The search index shows what the page shows, from this commit on.
	if err := s.db.Dialect.search.index(ctx, tx, p.PageID, title, p.Summary.Text, p.SearchText); err != nil {
		return pub, fmt.Errorf("index page %s for search: %w", p.PageID, err)
	}
	for _, h := range s.hooks {
		if err := h(ctx, tx, pub); err != nil {
			return pub, fmt.Errorf("publish hook on page %s: %w", p.PageID, err)
		}
	}
	if err := fpMarkBeforeCommit.Hit(ctx); err != nil {
		return pub, err
	}
	return pub, nil
}

// CurrentSummary implements publish.Store.
func (s *PublishStore) CurrentSummary(ctx context.Context, eventID string) (string, error) {
	var id sql.NullString
	err := s.db.db.QueryRowContext(ctx, `SELECT summary_id FROM pages WHERE event_id = $1`, eventID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id.String, err
}

// pageStateQuery selects a page's bookkeeping, as scanPageState reads it.
const pageStateQuery = `SELECT p.id, p.event_id, p.source_id, p.summary_id,
		CASE WHEN p.evidence_hash = e.evidence_hash THEN 1 ELSE 0 END,
		p.published_summary_id, p.published_etag, p.published_generation, p.absent
		FROM pages p JOIN events e ON e.id = p.event_id`

func scanPageState(sc scanner) (publish.PageState, error) {
	var (
		ps             publish.PageState
		ptr, published sql.NullString
		fresh, absent  int
	)
	if err := sc.Scan(&ps.PageID, &ps.EventID, &ps.SourceID, &ptr, &fresh, &published, &ps.PublishedETag,
		&ps.PublishedGeneration, &absent); err != nil {
		return ps, err
	}
	ps.SummaryID, ps.PointerFresh, ps.PublishedSummaryID = ptr.String, fresh == 1 && ptr.Valid, published.String
	ps.Absent = absent == 1
	return ps, nil
}

// PageStates implements publish.Store.
func (s *PublishStore) PageStates(ctx context.Context, fn func(publish.PageState) error) error {
	rows, err := s.db.db.QueryContext(ctx, pageStateQuery+` ORDER BY p.id`)
	if err != nil {
		return fmt.Errorf("page states: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		ps, err := scanPageState(rows)
		if err != nil {
			return err
		}
		if err := fn(ps); err != nil {
			return err
		}
	}
	return rows.Err()
}

// PageState implements publish.Store.
func (s *PublishStore) PageState(ctx context.Context, pageID string) (publish.PageState, error) {
	ps, err := scanPageState(s.db.db.QueryRowContext(ctx, pageStateQuery+` WHERE p.id = $1`, pageID))
	if errors.Is(err, sql.ErrNoRows) {
		return ps, fmt.Errorf("page %s: %w", pageID, tidemark.ErrNotFound)
	}
	if err != nil {
		return ps, fmt.Errorf("page %s: %w", pageID, err)
	}
	return ps, nil
}

// Withdraw implements publish.Store.
// The page leaves the search index in the same transaction.
func (s *PublishStore) Withdraw(ctx context.Context, pageID string) (bool, int64, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return false, 0, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE pages SET published_summary_id = NULL, published_etag = '',
		published_at = NULL, updated_at = $1, absent = 0
		WHERE id = $2 AND summary_id IS NULL AND published_summary_id IS NOT NULL`, ms(s.db.Clock.Now()), pageID)
	if err != nil {
		return false, 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, 0, err
	}
	if n != 1 {
		// Not withdrawn: the generation published now, which the caller
		// may have just deleted the object of.
		var gen int64
		err := tx.QueryRowContext(ctx, `SELECT published_generation FROM pages WHERE id = $1 AND published_summary_id IS NOT NULL`, pageID).Scan(&gen)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		return false, gen, err
	}
	if err := s.db.Dialect.search.unindex(ctx, tx, pageID); err != nil {
		return false, 0, fmt.Errorf("remove page %s from search: %w", pageID, err)
	}
	return true, 0, tx.Commit()
}

// Withdrawable implements publish.Store: the condition is Withdraw's.
func (s *PublishStore) Withdrawable(ctx context.Context, limit int) ([]publish.Absence, error) {
	if limit <= 0 {
		limit = 100
	}
	out, err := queryAll(ctx, s.db.db, func(sc scanner) (publish.Absence, error) {
		var a publish.Absence
		return a, sc.Scan(&a.PageID, &a.Generation)
	}, `SELECT id, published_generation FROM pages
		WHERE summary_id IS NULL AND published_summary_id IS NOT NULL ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("pages to withdraw: %w", err)
	}
	return out, nil
}

// RemovedPages implements publish.Store.
func (s *PublishStore) RemovedPages(ctx context.Context, limit int) ([]string, error) {
	if limit <= 0 {
		limit = 100
	}
	out, err := queryAll(ctx, s.db.db, scanString, `SELECT page_id FROM page_removals ORDER BY page_id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("pages of removed sources: %w", err)
	}
	return out, nil
}

// ForgetRemoved implements publish.Store.
func (s *PublishStore) ForgetRemoved(ctx context.Context, pageIDs []string) error {
	if len(pageIDs) == 0 {
		return nil
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, id := range pageIDs {
		if _, err := tx.ExecContext(ctx, `DELETE FROM page_removals WHERE page_id = $1`, id); err != nil {
			return fmt.Errorf("forget removed page %s: %w", id, err)
		}
	}
	return tx.Commit()
}

// Sources implements publish.Store.
func (s *PublishStore) Sources(ctx context.Context) ([]publish.SourceEntry, error) {
	out, err := queryAll(ctx, s.db.db, func(sc scanner) (publish.SourceEntry, error) {
		var e publish.SourceEntry
		var newest, gens int64
		err := sc.Scan(&e.ID, &e.Name, &e.Kind, &e.Location, &e.Pages, &newest, &gens)
		e.Stamp = fmt.Sprintf("%d:%d:%d", e.Pages, newest, gens)
		return e, err
	}, `SELECT s.id, s.name, s.kind, s.location, COUNT(p.id),
		MAX(p.published_at), SUM(p.published_generation)
		FROM sources s JOIN pages p ON p.source_id = s.id AND p.published_summary_id IS NOT NULL
		GROUP BY s.id, s.name, s.kind, s.location ORDER BY s.name`)
	if err != nil {
		return nil, fmt.Errorf("sources with pages: %w", err)
	}
	return out, nil
}

// Listing implements publish.Store.
func (s *PublishStore) Listing(ctx context.Context, q publish.ListingQuery) ([]publish.PageEntry, error) {
	summary := `''`
	if q.Summaries {
		summary = `(SELECT text FROM summaries WHERE id = p.published_summary_id)`
	}
	query := `SELECT p.id, p.event_id, p.source_id, ` + shownTitle + `, e.occurred_at, p.published_at, ` + summary + `, p.headline
		FROM pages p JOIN events e ON e.id = p.event_id
		WHERE p.published_summary_id IS NOT NULL`
	var args []any
	if q.SourceID != "" {
		args = append(args, q.SourceID)
		query += ` AND p.source_id = $1`
	}
	query += ` ORDER BY e.occurred_at DESC, p.id DESC`
	if q.Limit > 0 {
		args = append(args, q.Limit)
		query += fmt.Sprintf(` LIMIT $%d`, len(args))
	}
	out, err := queryAll(ctx, s.db.db, func(sc scanner) (publish.PageEntry, error) {
		var e publish.PageEntry
		var at int64
		var pub sql.NullInt64
		err := sc.Scan(&e.PageID, &e.EventID, &e.SourceID, &e.Title, &at, &pub, &e.Summary, &e.Headline)
		e.OccurredAt = fromMS(at)
		if t := fromNullMS(pub); t != nil {
			e.PublishedAt = *t
		}
		return e, err
	}, query, args...)
	if err != nil {
		return nil, fmt.Errorf("page listing: %w", err)
	}
	return out, nil
}

// Neighbours implements publish.Store.
func (s *PublishStore) Neighbours(ctx context.Context, pageID string, ev tidemark.Event) (older, newer *publish.PageLink, err error) {
	src, at := ev.SourceID, ms(ev.OccurredAt)
	// By (occurred_at, event ID), on the index of migration 0009: the
	// nearest older and newer page with a current summary, in one query.
	const side = `SELECT * FROM (SELECT %d AS side, p.id, ` + shownTitle + ` FROM events e JOIN pages p ON p.event_id = e.id
		WHERE e.source_id = $1 AND (e.occurred_at, e.id) %s ($2, $3) AND p.summary_id IS NOT NULL
		ORDER BY e.occurred_at %s, e.id %s LIMIT 1) x%d`
	rows, err := s.db.db.QueryContext(ctx, fmt.Sprintf(side, 0, "<", "DESC", "DESC", 0)+` UNION ALL `+
		fmt.Sprintf(side, 1, ">", "ASC", "ASC", 1), src, at, ev.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("page %s neighbours: %w", pageID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var side int
		var l publish.PageLink
		if err := rows.Scan(&side, &l.PageID, &l.Title); err != nil {
			return nil, nil, err
		}
		if side == 0 {
			older = &l
		} else {
			newer = &l
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("page %s neighbours: %w", pageID, err)
	}
	return older, newer, nil
}

// Relink implements publish.Store.
func (s *PublishStore) Relink(ctx context.Context, limit int) ([]string, error) {
	if limit <= 0 {
		limit = 100
	}
	out, err := queryAll(ctx, s.db.db, func(sc scanner) (id string, err error) { return id, sc.Scan(&id) },
		`SELECT x.summary_id FROM (
			SELECT p.id, p.summary_id, p.published_summary_id, p.neighbours,
				COALESCE(LAG(p.id) OVER w || '/' || LAG(`+shownTitle+`) OVER w, '') || '|' ||
				COALESCE(LEAD(p.id) OVER w || '/' || LEAD(`+shownTitle+`) OVER w, '') AS actual
			FROM pages p JOIN events e ON e.id = p.event_id
			WHERE p.summary_id IS NOT NULL
			WINDOW w AS (PARTITION BY e.source_id ORDER BY e.occurred_at, e.id)
		) x
		WHERE x.published_summary_id = x.summary_id AND x.neighbours <> x.actual
		ORDER BY x.id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("pages to relink: %w", err)
	}
	return out, nil
}

// Restyle implements publish.Store.
func (s *PublishStore) Restyle(ctx context.Context, format string, limit int) ([]string, error) {
	// As Unpublished: a page whose event has fresher evidence than its
	// summary waits for a new summary, and is not published again before.
	query := `SELECT p.summary_id FROM pages p JOIN events e ON e.id = p.event_id
		WHERE p.published_summary_id IS NOT NULL AND p.published_summary_id = p.summary_id
		  AND p.evidence_hash = e.evidence_hash AND p.published_format <> $1
		ORDER BY p.id`
	args := []any{format}
	if limit > 0 {
		query += ` LIMIT $2`
		args = append(args, limit)
	}
	out, err := queryAll(ctx, s.db.db, scanString, query, args...)
	if err != nil {
		return nil, fmt.Errorf("pages to restyle: %w", err)
	}
	return out, nil
}

// AbsentPages implements publish.Store.
func (s *PublishStore) AbsentPages(ctx context.Context, fn func(pageID, sourceID string) error) error {
	rows, err := s.db.db.QueryContext(ctx, `SELECT id, source_id FROM pages
		WHERE absent = 1 AND published_summary_id IS NOT NULL ORDER BY id`)
	if err != nil {
		return fmt.Errorf("absent pages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, src string
		if err := rows.Scan(&id, &src); err != nil {
			return err
		}
		if err := fn(id, src); err != nil {
			return err
		}
	}
	return rows.Err()
}

// checkBound refuses, with a *publish.StoreMismatchError, what a worker
// wrote to or found in a store other than the one the wiki is bound to
// (the zero identity while it is bound to none): the wiki was rebound
// since the worker bound.
func (s *PublishStore) checkBound(ctx context.Context, q querier, store publish.StoreIdentity) error {
	rec, _, err := s.boundStore(ctx, q)
	if err != nil {
		return err
	}
	if rec.ID != store.ID || rec.Location != store.Location {
		return &publish.StoreMismatchError{Location: store.Location, Recorded: rec, MarkerID: store.ID}
	}
	return nil
}

// RecordAbsence implements publish.Store.
func (s *PublishStore) RecordAbsence(ctx context.Context, store publish.StoreIdentity, found []publish.Absence) error {
	if len(found) == 0 {
		return nil
	}
	found = slices.SortedFunc(slices.Values(found), func(a, b publish.Absence) int { return strings.Compare(a.PageID, b.PageID) })
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// A worker that looked at the store the wiki was rebound from must
	// not record what that store holds (the rebind's record stands).
	if err := s.checkBound(ctx, tx, store); err != nil {
		return err
	}
	// A page that matches nothing was published or withdrawn since: what
	// that did stands.
	const cond = ` AND p.published_summary_id IS NOT NULL`
	if !s.db.Dialect.RowAtATime {
		ids, gens, flags := make([]string, len(found)), make([]int64, len(found)), make([]int64, len(found))
		for i, a := range found {
			ids[i], gens[i] = a.PageID, a.Generation
			if a.Absent {
				flags[i] = 1
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE pages p SET absent = r.absent
			FROM unnest($1::text[], $2::bigint[], $3::int[]) AS r(id, generation, absent)
			WHERE p.id = r.id AND p.published_generation = r.generation`+cond, ids, gens, flags); err != nil {
			return fmt.Errorf("record %d pages' absence: %w", len(found), err)
		}
		return tx.Commit()
	}
	st, err := tx.PrepareContext(ctx, `UPDATE pages AS p SET absent = $1 WHERE p.id = $2 AND p.published_generation = $3`+cond)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, a := range found {
		absent := 0
		if a.Absent {
			absent = 1
		}
		if _, err := st.ExecContext(ctx, absent, a.PageID, a.Generation); err != nil {
			return fmt.Errorf("record page %s absent=%t: %w", a.PageID, a.Absent, err)
		}
	}
	return tx.Commit()
}

// publishedPageQuery finds the wiki page an event is published on: a page
// withdrawn, or not yet published, is no page of the wiki.
const publishedPageQuery = `SELECT id FROM pages WHERE event_id = $1 AND published_summary_id IS NOT NULL`

// PublishedPage returns the ID of the wiki page event is published on, and
// false when it is on none (not yet published, or withdrawn).
func (s *PublishStore) PublishedPage(ctx context.Context, eventID string) (string, bool, error) {
	var id string
	err := s.db.db.QueryRowContext(ctx, publishedPageQuery, eventID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("published page of event %s: %w", eventID, err)
	}
	return id, true, nil
}

// PublishedCount implements publish.Store.
func (s *PublishStore) PublishedCount(ctx context.Context) (int, error) {
	var n int
	err := s.db.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pages WHERE published_summary_id IS NOT NULL`).Scan(&n)
	return n, err
}

// WikiObjects implements publish.Store.
func (s *PublishStore) WikiObjects(ctx context.Context) ([]publish.WikiObject, error) {
	out, err := queryAll(ctx, s.db.db, func(sc scanner) (publish.WikiObject, error) {
		var o publish.WikiObject
		var src sql.NullString
		err := sc.Scan(&o.Key, &o.Kind, &src, &o.ETag, &o.ContentHash, &o.Stamp)
		o.SourceID = src.String
		return o, err
	}, `SELECT key, kind, source_id, etag, content_hash, stamp FROM wiki_objects ORDER BY key`)
	if err != nil {
		return nil, fmt.Errorf("wiki objects: %w", err)
	}
	return out, nil
}

// AllocateObject implements publish.Store.
func (s *PublishStore) AllocateObject(ctx context.Context, key, kind, sourceID string) (int64, error) {
	var src any
	if sourceID != "" {
		src = sourceID
	}
	var gen int64
	err := s.db.w.QueryRowContext(ctx, `INSERT INTO wiki_objects (key, kind, source_id, generation, updated_at)
		VALUES ($1, $2, $3, 1, $4)
		ON CONFLICT (key) DO UPDATE SET generation = wiki_objects.generation + 1, updated_at = excluded.updated_at
		RETURNING generation`, key, kind, src, ms(s.db.Clock.Now())).Scan(&gen)
	if err != nil {
		return 0, fmt.Errorf("allocate generation of %s: %w", key, err)
	}
	return gen, nil
}

// RecordObject implements publish.Store.
func (s *PublishStore) RecordObject(ctx context.Context, key string, gen int64, etag, contentHash, stamp string) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE wiki_objects SET written_generation = $1, etag = $2, content_hash = $3,
		stamp = $4, updated_at = $5
		WHERE key = $6 AND written_generation < $1`, gen, etag, contentHash, stamp, ms(s.db.Clock.Now()), key)
	return err
}

// RestampObjects implements publish.Store: in one transaction, row by row
// where statements cost no round trip, else in one statement over arrays.
func (s *PublishStore) RestampObjects(ctx context.Context, stamp string, objs []publish.WikiObject) error {
	if len(objs) == 0 {
		return nil
	}
	now := ms(s.db.Clock.Now())
	if !s.db.Dialect.RowAtATime {
		keys, etags, hashes := make([]string, len(objs)), make([]string, len(objs)), make([]string, len(objs))
		for i, o := range objs {
			keys[i], etags[i], hashes[i] = o.Key, o.ETag, o.ContentHash
		}
		_, err := s.db.w.ExecContext(ctx, `UPDATE wiki_objects w SET stamp = $1, updated_at = $2
			FROM unnest($3::text[], $4::text[], $5::text[]) AS x(key, etag, hash)
			WHERE w.key = x.key AND w.etag = x.etag AND w.content_hash = x.hash`, stamp, now, keys, etags, hashes)
		if err != nil {
			return fmt.Errorf("restamp %d listing objects: %w", len(objs), err)
		}
		return nil
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `UPDATE wiki_objects SET stamp = $1, updated_at = $2 WHERE key = $3 AND etag = $4 AND content_hash = $5`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, o := range objs {
		if _, err := st.ExecContext(ctx, stamp, now, o.Key, o.ETag, o.ContentHash); err != nil {
			return fmt.Errorf("restamp %s: %w", o.Key, err)
		}
	}
	return tx.Commit()
}

// ForgetObject implements publish.Store. The row stays, so the key's
// generations keep increasing if the object is written again.
func (s *PublishStore) ForgetObject(ctx context.Context, key string) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE wiki_objects SET etag = '', content_hash = '', stamp = '', updated_at = $1
		WHERE key = $2`, ms(s.db.Clock.Now()), key)
	return err
}

// BoundStore implements publish.Store.
func (s *PublishStore) BoundStore(ctx context.Context) (publish.StoreIdentity, bool, error) {
	return s.boundStore(ctx, s.db.db)
}

func (s *PublishStore) boundStore(ctx context.Context, q querier) (publish.StoreIdentity, bool, error) {
	var (
		id publish.StoreIdentity
		at int64
	)
	err := q.QueryRowContext(ctx, `SELECT store_id, location, bound_at FROM wiki_store WHERE singleton = 1`).
		Scan(&id.ID, &id.Location, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return id, false, nil
	}
	if err != nil {
		return id, false, fmt.Errorf("wiki store: %w", err)
	}
	id.BoundAt = fromMS(at)
	return id, true, nil
}

// BindStore implements publish.Store: the first binder's row stands.
func (s *PublishStore) BindStore(ctx context.Context, id publish.StoreIdentity) (publish.StoreIdentity, error) {
	if id.ID == "" {
		return id, tidemark.Invalidf("store id", "", "is required")
	}
	if _, err := s.db.w.ExecContext(ctx, `INSERT INTO wiki_store (singleton, store_id, location, bound_at)
		VALUES (1, $1, $2, $3) ON CONFLICT (singleton) DO NOTHING`, id.ID, id.Location, ms(s.db.Clock.Now())); err != nil {
		return id, fmt.Errorf("bind wiki store: %w", err)
	}
	rec, ok, err := s.boundStore(ctx, s.db.db)
	if err == nil && !ok {
		err = fmt.Errorf("bind wiki store: the row is not there after the insert: %w", tidemark.ErrUnconfirmed)
	}
	return rec, err
}

// RebindStore implements publish.Store.
func (s *PublishStore) RebindStore(ctx context.Context, id publish.StoreIdentity) (publish.StoreIdentity, error) {
	if id.ID == "" {
		return id, tidemark.Invalidf("store id", "", "is required")
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return id, err
	}
	defer tx.Rollback()
	prev, bound, err := s.boundStore(ctx, tx)
	if err != nil {
		return id, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO wiki_store (singleton, store_id, location, bound_at)
		VALUES (1, $1, $2, $3) ON CONFLICT (singleton) DO UPDATE SET store_id = excluded.store_id,
		location = excluded.location, bound_at = excluded.bound_at`, id.ID, id.Location, ms(s.db.Clock.Now())); err != nil {
		return id, fmt.Errorf("rebind wiki store: %w", err)
	}
	// Another store holds none of the pages as far as the books know.
	if !bound || prev.ID != id.ID || prev.Location != id.Location {
		if _, err := tx.ExecContext(ctx, `UPDATE pages SET absent = 1 WHERE published_summary_id IS NOT NULL AND absent = 0`); err != nil {
			return id, fmt.Errorf("rebind wiki store: record the pages absent: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return id, fmt.Errorf("rebind wiki store: %w", err)
	}
	rec, ok, err := s.boundStore(ctx, s.db.db)
	if err == nil && (!ok || rec.ID != id.ID || rec.Location != id.Location) {
		err = fmt.Errorf("rebind wiki store: the row read back is not the one written: %w", tidemark.ErrUnconfirmed)
	}
	return rec, err
}
