package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/redact"
)

// Failpoints of a settlement, in the order a settlement reaches them.
var (
	fpSettleAfterEvents = failpoint.Register("ingest.settle.after-events",
		"the run's events are written in the settling transaction | the cursor advance, run outcome and audit row")
	fpSettleBeforeCommit = failpoint.Register("ingest.settle.before-commit",
		"everything of the settlement is written | the commit")
	fpSettleAfterCommit = failpoint.Register("ingest.settle.after-commit",
		"the settlement is committed | the call returns to the worker")
	fpClaimAfterCommit = failpoint.Register("ingest.claim.after-commit",
		"a claim is committed | the worker learns its token")
	fpFailBeforeCommit = failpoint.Register("ingest.fail.before-commit",
		"a failed run's outcome is written | the commit that releases the claim")
)

// IngestStore implements ingest.Store.
type IngestStore struct{ db *DB }

// Ingest returns the ingest store over d.
func (d *DB) Ingest() *IngestStore { return &IngestStore{db: d} }

var _ ingest.Store = (*IngestStore)(nil)

const sourceColumns = `id, name, kind, location, config, state, interval_ms, retry_budget,
	cursor, cursor_version, window_state, window_attempts, terminal_reason, failing_since,
	claim_token, claim_holder, claim_run_id, lease_expires_at, next_due_at,
	last_outcome, last_error, last_run_at, created_at, allow_private`

// sourceRow is a source as stored, with its claim token, which never
// leaves the store except inside a Claim.
type sourceRow struct {
	tidemark.Source
	token sql.NullString
}

type scanner interface{ Scan(...any) error }

func scanSource(s scanner) (sourceRow, error) {
	var (
		r                  sourceRow
		config, state, win string
		intervalMS         int64
		holder, runID      sql.NullString
		lease, lastRun     sql.NullInt64
		failingSince       sql.NullInt64
		nextDue, created   int64
		lastOutcome        string
		allowPrivate       int
	)
	err := s.Scan(&r.ID, &r.Name, &r.Kind, &r.Location, &config, &state, &intervalMS, &r.RetryBudget,
		&r.Cursor, &r.CursorVersion, &win, &r.WindowAttempts, &r.TerminalReason, &failingSince,
		&r.token, &holder, &runID, &lease, &nextDue,
		&lastOutcome, &r.LastError, &lastRun, &created, &allowPrivate)
	if err != nil {
		return r, err
	}
	if config != "" && config != "{}" {
		if err := json.Unmarshal([]byte(config), &r.Config); err != nil {
			return r, fmt.Errorf("source %s: config: %w", r.ID, err)
		}
	}
	r.State = tidemark.SourceState(state)
	r.Window = tidemark.WindowState(win)
	r.Interval = tidemark.Duration(time.Duration(intervalMS) * time.Millisecond)
	r.ClaimHolder = holder.String
	r.ClaimRunID = runID.String
	r.LeaseExpiresAt = fromNullMS(lease)
	r.FailingSince = fromNullMS(failingSince)
	r.NextDueAt = fromMS(nextDue)
	r.LastOutcome = tidemark.Outcome(lastOutcome)
	r.LastRunAt = fromNullMS(lastRun)
	r.CreatedAt = fromMS(created)
	r.AllowPrivate = allowPrivate == 1
	r.LastError, r.TerminalReason = shownError(r.Location, r.LastError), shownError(r.Location, r.TerminalReason)
	return r, nil
}

// shownError is a run's error (or a source's last error, or its terminal
// reason, which quotes it) as every read shows it: cleaned of the
// credentials the source's location carries. The ingest pipeline cleans
// what it stores, but a release before it stored them raw, and a row any
// other path wrote may hold them; cleaning at the read covers every row
// and every face (the CLI, JSON, the API, the console), as the location
// itself is shown (redact.Location).
func shownError(location, text string) string {
	if text == "" {
		return ""
	}
	// Most locations carry no credential: their errors are shown as
	// stored, with no pass of the cleaner over them (this runs for every
	// source row read, the claims' among them).
	creds := redact.Credentials(location)
	if len(creds) == 0 {
		return text
	}
	return redact.Text(text, creds...)
}

// AddSource implements ingest.Store.
func (s *IngestStore) AddSource(ctx context.Context, ns ingest.NewSource) (tidemark.Source, error) {
	if err := ns.Validate(); err != nil {
		return tidemark.Source{}, err
	}
	cfg := []byte("{}")
	if len(ns.Config) > 0 {
		var err error
		if cfg, err = json.Marshal(ns.Config); err != nil {
			return tidemark.Source{}, err
		}
	}
	now := s.db.Clock.Now()
	id := s.db.IDs.New()
	key := sql.NullString{String: ns.Key, Valid: ns.Key != ""}
	_, err := s.db.w.ExecContext(ctx, `INSERT INTO sources
		(id, name, kind, location, config, interval_ms, retry_budget, next_due_at, created_at, updated_at, allow_private, source_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11)`,
		id, ns.Name, ns.Kind, ns.Location, string(cfg), ns.Interval.Milliseconds(), ns.RetryBudget, ms(now), ms(now), boolInt(ns.AllowPrivate), key)
	if IsUniqueViolation(err) {
		return tidemark.Source{}, s.addConflict(ctx, ns)
	}
	if err != nil {
		return tidemark.Source{}, fmt.Errorf("add source %q: %w", ns.Name, err)
	}
	return s.Source(ctx, id)
}

// addConflict says which of a new source's unique values another source
// holds: its name (or ID), or its key (an *ingest.DuplicateError naming
// the source that holds it).
func (s *IngestStore) addConflict(ctx context.Context, ns ingest.NewSource) error {
	if ns.Key != "" {
		r, err := scanSource(s.db.db.QueryRowContext(ctx, `SELECT `+sourceColumns+` FROM sources WHERE source_key = $1`, ns.Key))
		if err == nil && r.Name != ns.Name {
			return fmt.Errorf("add source %q: %w", ns.Name, &ingest.DuplicateError{Source: r.Source})
		}
	}
	return fmt.Errorf("source %q already exists: %w", ns.Name, tidemark.ErrConflict)
}

// Source implements ingest.Store.
func (s *IngestStore) Source(ctx context.Context, ref string) (tidemark.Source, error) {
	r, err := s.source(ctx, s.db.db, ref, false)
	return s.shown(r.Source, s.db.Clock.Now()), err
}

// shown is src as its readers see it: with the state of its claim at now,
// as this host can tell it (ingest.Liveness.ClaimState). Reading writes
// nothing: a claim whose holder is gone stays until a claim takes it over.
func (s *IngestStore) shown(src tidemark.Source, now time.Time) tidemark.Source {
	src.ClaimState = s.db.liveness.ClaimState(src, now)
	return src
}

func (s *IngestStore) source(ctx context.Context, q querier, ref string, lock bool) (sourceRow, error) {
	query := `SELECT ` + sourceColumns + ` FROM sources WHERE id = $1 OR name = $1`
	if lock {
		query += s.db.Dialect.LockRow
	}
	r, err := scanSource(q.QueryRowContext(ctx, query, ref))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("source %q: %w", ref, tidemark.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("source %q: %w", ref, err)
	}
	return r, nil
}

// operate applies op to the source ref names, locked, in one transaction,
// and returns the source as op left it.
func (s *IngestStore) operate(ctx context.Context, ref string, op func(tx *sql.Tx, r sourceRow) error) (tidemark.Source, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return tidemark.Source{}, err
	}
	defer tx.Rollback()
	r, err := s.source(ctx, tx, ref, true)
	if err != nil {
		return tidemark.Source{}, err
	}
	if err := op(tx, r); err != nil {
		return tidemark.Source{}, err
	}
	if err := tx.Commit(); err != nil {
		return tidemark.Source{}, err
	}
	return s.Source(ctx, r.ID)
}

// Sources implements ingest.Store.
func (s *IngestStore) Sources(ctx context.Context) ([]tidemark.Source, error) {
	now := s.db.Clock.Now()
	return queryAll(ctx, s.db.db, func(sc scanner) (tidemark.Source, error) {
		r, err := scanSource(sc)
		return s.shown(r.Source, now), err
	}, `SELECT `+sourceColumns+` FROM sources ORDER BY name`)
}

// SetState implements ingest.Store.
func (s *IngestStore) SetState(ctx context.Context, ref string, state tidemark.SourceState, actor string) (tidemark.Source, error) {
	if state != tidemark.SourceActive && state != tidemark.SourcePaused {
		return tidemark.Source{}, tidemark.Invalidf("state", string(state), "want active or paused")
	}
	return s.operate(ctx, ref, func(tx *sql.Tx, r sourceRow) (err error) {
		now := s.db.Clock.Now()
		if _, err := tx.ExecContext(ctx, `UPDATE sources SET state = $1, updated_at = $2 WHERE id = $3`, string(state), ms(now), r.ID); err != nil {
			return err
		}
		action := "pause"
		if state == tidemark.SourceActive {
			action = "resume"
		}
		return s.insertAction(ctx, tx, r, action, actor, r.Cursor, r.CursorVersion, "", now)
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Claim implements ingest.Store.
func (s *IngestStore) Claim(ctx context.Context, sourceID, holder string, ttl time.Duration) (tidemark.Claim, error) {
	if holder == "" || ttl <= 0 {
		return tidemark.Claim{}, tidemark.Invalidf("claim", holder, "needs a holder identity and a positive lease")
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return tidemark.Claim{}, err
	}
	defer tx.Rollback()
	r, err := s.source(ctx, tx, sourceID, true)
	if err != nil {
		return tidemark.Claim{}, err
	}
	c, err := s.claimLocked(ctx, tx, r, holder, ttl)
	if err != nil && !errors.Is(err, errCommitThenFail) {
		return tidemark.Claim{}, err
	}
	if cerr := tx.Commit(); cerr != nil {
		return tidemark.Claim{}, fmt.Errorf("claim %s: commit: %w", r.Name, cerr)
	}
	if err != nil {
		// The old run was marked lost and that is committed; the window is
		// now terminal.
		return tidemark.Claim{}, fmt.Errorf("claim %s: %w", r.Name, errors.Unwrap(err))
	}
	if err := fpClaimAfterCommit.Hit(ctx); err != nil {
		return tidemark.Claim{}, err
	}
	return c, nil
}

// errCommitThenFail wraps an error whose transaction must still commit:
// a claim that found a lost run records the loss even when it then refuses.
var errCommitThenFail = errors.New("commit, then fail")

type commitThenFail struct{ err error }

func (e commitThenFail) Error() string        { return e.err.Error() }
func (e commitThenFail) Unwrap() error        { return e.err }
func (e commitThenFail) Is(target error) bool { return target == errCommitThenFail }

// claimLocked claims a source row already locked by tx.
func (s *IngestStore) claimLocked(ctx context.Context, tx *sql.Tx, r sourceRow, holder string, ttl time.Duration) (tidemark.Claim, error) {
	now := s.db.Clock.Now()
	if r.token.Valid {
		switch {
		case r.ClaimHolder == holder:
			return s.reenter(ctx, tx, r, ttl, now)
		case s.db.liveness.Stands(r.ClaimHolder, *r.LeaseExpiresAt, now):
			return tidemark.Claim{}, &tidemark.HeldError{Source: r.Name, Holder: r.ClaimHolder, Until: *r.LeaseExpiresAt,
				Running: s.db.liveness.Running(r.ClaimHolder)}
		}
		// The lease expired, or its holder's process is gone.
		var err error
		if r, err = s.loseRun(ctx, tx, r, now, true); err != nil {
			return tidemark.Claim{}, err
		}
		if r.Window == tidemark.WindowTerminal {
			return tidemark.Claim{}, commitThenFail{fmt.Errorf("its final worker never came back; window terminal: %w", tidemark.ErrNotClaimable)}
		}
	}
	if err := ingest.Admit(r.Source); err != nil {
		return tidemark.Claim{}, err
	}
	c := tidemark.Claim{
		RunID:          s.db.IDs.New(),
		SourceID:       r.ID,
		Token:          s.db.IDs.New(),
		Holder:         holder,
		CursorVersion:  r.CursorVersion,
		Cursor:         r.Cursor,
		Attempt:        r.WindowAttempts + 1,
		RetryBudget:    r.RetryBudget,
		FailingSince:   r.FailingSince,
		LeaseExpiresAt: now.Add(ttl),
		StartedAt:      now,
	}
	src := r.Source
	c.Source = &src
	err := exec1(ctx, tx, fmt.Errorf("claim %s: source changed under the lock: %w", r.Name, tidemark.ErrConflict),
		`UPDATE sources
		SET claim_token = $1, claim_holder = $2, claim_run_id = $3, lease_expires_at = $4, updated_at = $5
		WHERE id = $6 AND claim_token IS NULL AND cursor_version = $7 AND state = 'active' AND window_state = 'open'`,
		c.Token, holder, c.RunID, ms(c.LeaseExpiresAt), ms(now), r.ID, r.CursorVersion)
	if err != nil {
		return tidemark.Claim{}, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO ingest_runs
		(id, source_id, token, holder, attempt, cursor_version, cursor_before, status, started_at, heartbeat_at, lease_expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $8, $9)`,
		c.RunID, r.ID, c.Token, holder, c.Attempt, c.CursorVersion, c.Cursor, ms(now), ms(c.LeaseExpiresAt))
	if IsUniqueViolation(err) {
		return tidemark.Claim{}, fmt.Errorf("claim %s: another run is active: %w", r.Name, tidemark.ErrClaimHeld)
	}
	if err != nil {
		return tidemark.Claim{}, fmt.Errorf("claim %s: insert run: %w", r.Name, err)
	}
	return c, nil
}

// reenter returns the holder's own run and token, extending its lease.
func (s *IngestStore) reenter(ctx context.Context, tx *sql.Tx, r sourceRow, ttl time.Duration, now time.Time) (tidemark.Claim, error) {
	var attempt int
	var started int64
	err := tx.QueryRowContext(ctx, `SELECT attempt, started_at FROM ingest_runs WHERE id = $1 AND token = $2 AND status = 'active'`,
		r.ClaimRunID, r.token.String).Scan(&attempt, &started)
	if err != nil {
		return tidemark.Claim{}, fmt.Errorf("re-enter %s: run %s: %w", r.Name, r.ClaimRunID, err)
	}
	lease := now.Add(ttl)
	err = exec1(ctx, tx, tidemark.ErrStaleClaim,
		`UPDATE sources SET lease_expires_at = $1, updated_at = $2
		WHERE id = $3 AND claim_token = $4 AND cursor_version = $5`,
		ms(lease), ms(now), r.ID, r.token.String, r.CursorVersion)
	if err != nil {
		return tidemark.Claim{}, fmt.Errorf("re-enter %s: %w", r.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE ingest_runs SET heartbeat_at = $1, lease_expires_at = $2 WHERE id = $3`,
		ms(now), ms(lease), r.ClaimRunID); err != nil {
		return tidemark.Claim{}, err
	}
	return tidemark.Claim{
		RunID: r.ClaimRunID, SourceID: r.ID, Token: r.token.String, Holder: r.ClaimHolder,
		CursorVersion: r.CursorVersion, Cursor: r.Cursor, Attempt: attempt, RetryBudget: r.RetryBudget,
		FailingSince: r.FailingSince, LeaseExpiresAt: lease, StartedAt: fromMS(started), Reentered: true,
	}, nil
}

// loseRun marks the run of an expired claim lost, writes its audit row and
// releases the claim. With charge, the loss spends one attempt of the
// window's budget, and a loss on the final attempt makes the window
// terminal unless the window is riding out an outage (ingest.ChargeLoss).
// It returns the source as it now is.
func (s *IngestStore) loseRun(ctx context.Context, tx *sql.Tx, r sourceRow, now time.Time, charge bool) (sourceRow, error) {
	reason := fmt.Sprintf("holder %s never came back (lease expired %s)", r.ClaimHolder, fieldtext.Day(*r.LeaseExpiresAt))
	if r.LeaseExpiresAt.After(now) {
		reason = fmt.Sprintf("holder %s is gone: its process is no longer running on this host (lease was until %s)",
			r.ClaimHolder, fieldtext.Day(*r.LeaseExpiresAt))
	}
	err := exec1(ctx, tx, fmt.Errorf("lost run %s of %s is not active: %w", r.ClaimRunID, r.Name, tidemark.ErrUnconfirmed),
		`UPDATE ingest_runs SET status = 'failed', outcome = 'lost', error = $1, finished_at = $2
		WHERE id = $3 AND token = $4 AND status = 'active'`, reason, ms(now), r.ClaimRunID, r.token.String)
	if err != nil {
		return r, err
	}
	if err := s.insertAudit(ctx, tx, r.ClaimRunID, r, r.ClaimHolder, tidemark.OutcomeLost, r.Cursor, r.CursorVersion, 0, 0, now); err != nil {
		return r, err
	}
	ch := ingest.ChargeLoss(r.WindowAttempts, r.RetryBudget, r.FailingSince, r.LastOutcome, charge, reason, now)
	attempts, failingSince, window, terminalReason := r.WindowAttempts+ch.Spent, ch.FailingSince, ch.Window, ch.TerminalReason
	err = exec1(ctx, tx, tidemark.ErrStaleClaim,
		`UPDATE sources SET claim_token = NULL, claim_holder = NULL, claim_run_id = NULL,
		lease_expires_at = NULL, window_attempts = $1, window_state = $2, terminal_reason = $3,
		last_outcome = 'lost', last_error = $4, last_run_at = $5, updated_at = $5, failing_since = $9
		WHERE id = $6 AND claim_token = $7 AND cursor_version = $8`,
		attempts, string(window), terminalReason, reason, ms(now), r.ID, r.token.String, r.CursorVersion, nullMS(failingSince))
	if err != nil {
		return r, fmt.Errorf("release lost claim on %s: %w", r.Name, err)
	}
	r.token = sql.NullString{}
	r.ClaimHolder, r.ClaimRunID, r.LeaseExpiresAt = "", "", nil
	r.WindowAttempts, r.Window, r.TerminalReason = attempts, window, terminalReason
	r.FailingSince = failingSince
	r.LastOutcome, r.LastError = tidemark.OutcomeLost, reason
	return r, nil
}

// ClaimDue implements ingest.Store. Due sources nobody holds are claimed
// many at once: on PostgreSQL in one statement (the rows picked FOR UPDATE
// SKIP LOCKED, their claims written and their runs inserted together), on
// SQLite in one write transaction with statements prepared once. Sources
// whose holder's lease expired, and the holder's own claims that are not
// in flight (a restarted worker's), take the careful path, one by one:
// the old run is recorded lost, or re-entered by the same holder. On
// PostgreSQL the statement picks the holder's own claims in due order
// without claiming them, so they leave the batch short and the careful
// path follows; a worker that holds none runs the one statement only.
func (s *IngestStore) ClaimDue(ctx context.Context, holder string, ttl time.Duration, limit int, inFlight ...string) ([]tidemark.Claim, error) {
	if holder == "" || ttl <= 0 || limit <= 0 {
		return nil, tidemark.Invalidf("claim", holder, "needs a holder identity, a positive lease and a positive limit")
	}
	var claims []tidemark.Claim
	var err error
	if s.db.Dialect.ModifyingCTE {
		if claims, err = s.claimUnheld(ctx, holder, ttl, limit, inFlight); err != nil {
			return nil, err
		}
		if len(claims) < limit {
			// Expired leases, the holder's own claims, and claims of gone
			// holders that claimDue's takeover has just released. The
			// claims just made are the holder's own now, and in flight.
			skip := inFlight[:len(inFlight):len(inFlight)]
			for _, c := range claims {
				skip = append(skip, c.RunID)
			}
			more, err := s.claimDue(ctx, holder, ttl, limit-len(claims), skip)
			if err != nil {
				return nil, err
			}
			claims = append(claims, more...)
		}
	} else if claims, err = s.claimDue(ctx, holder, ttl, limit, inFlight); err != nil {
		return nil, err
	}
	if len(claims) > 0 {
		if err := fpClaimAfterCommit.Hit(ctx); err != nil {
			return nil, err
		}
	}
	return claims, nil
}

// claimUnheldPG claims up to $2 due sources nobody holds in one statement:
// the rows are picked in due order FOR UPDATE SKIP LOCKED, each given the
// fresh run ID and token at its rank, claimed, and their runs inserted;
// the claimed sources come back whole, so the worker needs no second read.
// The picked IDs travel as one array, looked up in the primary key: a join
// with the picked rows would be planned for a guess at their number (the
// statement is prepared once), and planned as a scan of every source.
// The holder's own claims outside its runs in flight ($7) are picked in
// due order too but not claimed here: ClaimDue re-enters them on the
// careful path.
var claimUnheldPG = `WITH due AS (
	SELECT array_agg(id) AS ids FROM (
		SELECT id FROM sources
		WHERE state = 'active' AND window_state = 'open' AND next_due_at <= $1
		  AND (claim_token IS NULL OR (claim_holder = $5 AND claim_run_id <> ALL($7::text[])))
		  AND NOT EXISTS (` + unservedBy("sources.id", "$5", "$1") + `)
		ORDER BY next_due_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) picked
), claimed AS (
	UPDATE sources s SET claim_token = ($4::text[])[array_position(due.ids, s.id)], claim_holder = $5,
		claim_run_id = ($3::text[])[array_position(due.ids, s.id)], lease_expires_at = $6, updated_at = $1
	FROM due
	WHERE s.id = ANY(due.ids) AND s.claim_token IS NULL
	RETURNING ` + prefixed("s.", sourceColumns) + `
), runs AS (
	INSERT INTO ingest_runs (id, source_id, token, holder, attempt, cursor_version, cursor_before, status, started_at, heartbeat_at, lease_expires_at)
	SELECT claim_run_id, id, claim_token, $5, window_attempts + 1, cursor_version, cursor, 'active', $1, $1, $6 FROM claimed
)
SELECT ` + sourceColumns + ` FROM claimed ORDER BY next_due_at, id`

// unservedBy selects the live record that holder could not serve the
// source with ID sourceID (SQL expressions): ClaimDue passes such sources
// over until the record expires.
func unservedBy(sourceID, holder, now string) string {
	return `SELECT 1 FROM source_unserved u WHERE u.source_id = ` + sourceID + ` AND u.holder = ` + holder + ` AND u.until_at > ` + now
}

// prefixed qualifies every column of a column list with p.
func prefixed(p, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

func (s *IngestStore) claimUnheld(ctx context.Context, holder string, ttl time.Duration, limit int, inFlight []string) ([]tidemark.Claim, error) {
	now := s.db.Clock.Now()
	runIDs, tokens := make([]string, limit), make([]string, limit)
	for i := range runIDs {
		runIDs[i], tokens[i] = s.db.IDs.New(), s.db.IDs.New()
	}
	if inFlight == nil {
		inFlight = []string{} // an empty array, not NULL: <> ALL(NULL) is never true
	}
	lease := now.Add(ttl)
	rows, err := queryAll(ctx, s.db.db, scanSource, claimUnheldPG, ms(now), limit, runIDs, tokens, holder, ms(lease), inFlight)
	if IsUniqueViolation(err) {
		// An active run without a claim on its source: a broken invariant
		// the unique index caught; nothing was claimed.
		return nil, fmt.Errorf("claim due: another run is active: %w", tidemark.ErrClaimHeld)
	}
	if err != nil {
		return nil, fmt.Errorf("claim due: %w", err)
	}
	claims := make([]tidemark.Claim, 0, len(rows))
	for _, r := range rows {
		src := r.Source
		claims = append(claims, tidemark.Claim{
			RunID: r.ClaimRunID, SourceID: r.ID, Token: r.token.String, Holder: holder,
			CursorVersion: r.CursorVersion, Cursor: r.Cursor, Attempt: r.WindowAttempts + 1, RetryBudget: r.RetryBudget,
			FailingSince: r.FailingSince, LeaseExpiresAt: fromMS(ms(lease)), StartedAt: fromMS(ms(now)), Source: &src,
		})
	}
	return claims, nil
}

// claimDue claims up to limit due sources one by one inside one
// transaction: sources nobody holds, sources whose lease expired, and the
// holder's own claims except the runs in skip (in flight in the caller),
// which it re-enters. It passes over rows others hold.
func (s *IngestStore) claimDue(ctx context.Context, holder string, ttl time.Duration, limit int, skip []string) ([]tidemark.Claim, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	taken, err := s.takeOverGone(ctx, tx, holder)
	if err != nil {
		return nil, fmt.Errorf("claim due: %w", err)
	}
	now := ms(s.db.Clock.Now())
	args := []any{now, limit, holder}
	due, err := queryAll(ctx, tx, scanSource, `SELECT `+sourceColumns+` FROM sources
		WHERE state = 'active' AND window_state = 'open' AND next_due_at <= $1
		  AND (claim_token IS NULL OR lease_expires_at <= $1 OR claim_holder = $3)`+notInFlight(&args, skip)+`
		  AND NOT EXISTS (`+unservedBy("sources.id", "$3", "$1")+`)
		ORDER BY next_due_at, id LIMIT $2`+s.db.Dialect.LockSkipLocked, args...)
	if err != nil {
		return nil, fmt.Errorf("claim due: %w", err)
	}
	var claims []tidemark.Claim
	for _, r := range due {
		c, err := s.claimLocked(ctx, tx, r, holder, ttl)
		switch {
		case err == nil:
			claims = append(claims, c)
		case errors.Is(err, errCommitThenFail), errors.Is(err, tidemark.ErrClaimHeld), errors.Is(err, tidemark.ErrNotClaimable):
			// recorded or passed over; the others are still ours to claim
		default:
			return nil, err
		}
	}
	if len(due) == 0 && taken == 0 {
		tx.Rollback() // nothing written: no commit to wait for
		return nil, nil
	}
	// A takeover commits whether or not anything was due: its sources
	// are free from now on, and the look is not made again for a while.
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("claim due: commit: %w", err)
	}
	return claims, nil
}

// notInFlight is a condition that passes over the runs in skip, with their
// IDs appended to args as parameters. The placeholders are padded to a
// power of two (repeating the first ID), so the statement's text takes a
// few forms, not one per number of runs in flight: every form stays
// prepared in the statement cache.
func notInFlight(args *[]any, skip []string) string {
	if len(skip) == 0 {
		return ""
	}
	n := 1
	for n < len(skip) {
		n *= 2
	}
	var b strings.Builder
	b.WriteString(` AND (claim_run_id IS NULL OR claim_run_id NOT IN (`)
	for i := 0; i < n; i++ {
		id := skip[0]
		if i < len(skip) {
			id = skip[i]
		}
		*args = append(*args, id)
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", len(*args))
	}
	b.WriteString("))")
	return b.String()
}

// TakeOverGone implements ingest.Store: it makes ClaimDue's look for
// claims of gone holders (takeOverGone) on its own, and commits what it
// took over.
func (s *IngestStore) TakeOverGone(ctx context.Context, holder string) (int, error) {
	if holder == "" {
		return 0, tidemark.Invalidf("take over", holder, "needs a holder identity")
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	n, err := s.takeOverGone(ctx, tx, holder)
	if err != nil || n == 0 {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("take over claims of gone holders: commit: %w", err)
	}
	return n, nil
}

// takeOverGone releases, as lost, the claims whose holders are processes
// of this host that are no longer running, so the claim that follows in tx
// finds their sources free instead of waiting out the leases, and a source
// not due is free too instead of staying held until it is next due. A
// lease that has expired meanwhile is taken over the same way: the claim
// of a due source would take it over too, but one not due would stay held
// (and its run active) until then. It returns how many it took over; the
// caller commits them whether or not it claims anything. It looks only
// once per Liveness.Interval (a process's first look is at once), not on
// every claim: the leases of this host are mostly this process's own runs
// in flight, and reading them on every claim would put a read of them all
// on the hot path. The caller's own claims (holder) are alive by
// definition and not read.
func (s *IngestStore) takeOverGone(ctx context.Context, tx *sql.Tx, holder string) (int, error) {
	l := s.db.liveness
	if l == nil || l.Host == "" {
		return 0, nil
	}
	now := s.db.Clock.Now()
	if !s.db.takeoverDue(now, l.Interval()) {
		return 0, nil
	}
	held, err := queryAll(ctx, tx, scanSource, `SELECT `+sourceColumns+` FROM sources
		WHERE claim_token IS NOT NULL AND claim_holder LIKE $1 ESCAPE '\' AND claim_holder <> $2`+s.db.Dialect.LockSkipLocked,
		likePrefix(l.Host+":"), holder)
	if err != nil {
		return 0, fmt.Errorf("look for claims of gone holders: %w", err)
	}
	n := 0
	for _, r := range held {
		if !l.Gone(r.ClaimHolder) {
			continue
		}
		if _, err := s.loseRun(ctx, tx, r, now, true); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// likePrefix is a LIKE pattern matching strings that begin with p.
func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}

// Heartbeat implements ingest.Store.
func (s *IngestStore) Heartbeat(ctx context.Context, c tidemark.Claim, ttl time.Duration) (tidemark.Claim, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return c, err
	}
	defer tx.Rollback()
	now := s.db.Clock.Now()
	lease := now.Add(ttl)
	err = exec1(ctx, tx, fmt.Errorf("heartbeat run %s: %w", c.RunID, tidemark.ErrStaleClaim),
		`UPDATE sources SET lease_expires_at = $1, updated_at = $2
		WHERE id = $3 AND claim_token = $4 AND cursor_version = $5`,
		ms(lease), ms(now), c.SourceID, c.Token, c.CursorVersion)
	if err != nil {
		return c, err
	}
	err = exec1(ctx, tx, fmt.Errorf("heartbeat run %s: run not active: %w", c.RunID, tidemark.ErrStaleClaim),
		`UPDATE ingest_runs SET heartbeat_at = $1, lease_expires_at = $2
		WHERE id = $3 AND token = $4 AND status = 'active'`, ms(now), ms(lease), c.RunID, c.Token)
	if err != nil {
		return c, err
	}
	if err := tx.Commit(); err != nil {
		return c, err
	}
	c.LeaseExpiresAt = lease
	return c, nil
}

const insertEvent = `INSERT INTO events
	(id, source_id, item_key, title, url, occurred_at, evidence_hash, revision, run_id, created_at, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9, $9)`

const lookupEvent = `SELECT id, evidence_hash, revision FROM events WHERE source_id = $1 AND item_key = $2`

// refreezeEvent moves an event to fresh evidence; it is conditional on the
// evidence it was read with.
const refreezeEvent = `UPDATE events SET title = $1, url = $2, occurred_at = $3, evidence_hash = $4,
	revision = revision + 1, run_id = $5, updated_at = $6
	WHERE id = $7 AND evidence_hash = $8 AND revision = $9`

const insertRevision = `INSERT INTO event_revisions (event_id, revision, evidence_hash, evidence, run_id, created_at)
	VALUES ($1, $2, $3, $4, $5, $6)`

// Settle implements ingest.Store.
func (s *IngestStore) Settle(ctx context.Context, c tidemark.Claim, st ingest.Settlement) (ingest.SettleReport, error) {
	var rep ingest.SettleReport
	if st.Declared > len(st.Items) {
		return rep, fmt.Errorf("run %s: declared %d, admitted %d: %w", c.RunID, st.Declared, len(st.Items), tidemark.ErrShortRead)
	}
	for i, it := range st.Items {
		if it.Key == "" {
			return rep, tidemark.Invalidf("item", fmt.Sprint(i), "has no identity key")
		}
	}
	// Many items on a dialect that can COPY: the new events stream in with
	// COPY, straight away when none of them seems to exist yet. If one did
	// after all, that COPY failed on the unique key and wrote nothing (the
	// events are the transaction's first write): settle again, reading
	// first which exist.
	copying := s.db.Dialect.CopyFrom && len(st.Items) >= copyMinItems
	rep, err := s.settle(ctx, c, st, copying, copying)
	if errors.Is(err, errCopyMetExisting) {
		rep, err = s.settle(ctx, c, st, copying, false)
	}
	return rep, err
}

// errCopyMetExisting: a COPY of events presumed new met one that exists;
// the transaction wrote nothing else and is rolled back.
var errCopyMetExisting = errors.New("a copied event exists")

// settle is Settle in one transaction. With copying, new events are
// written with COPY; with presumeNew too, without reading first which of
// them exist, when a probe of the first and last keys finds neither.
func (s *IngestStore) settle(ctx context.Context, c tidemark.Claim, st ingest.Settlement, copying, presumeNew bool) (ingest.SettleReport, error) {
	var rep ingest.SettleReport
	var cp *copier
	var tx *sql.Tx
	var err error
	if copying {
		var conn *sql.Conn
		if conn, err = s.db.db.Conn(ctx); err != nil {
			return rep, fmt.Errorf("sqlstore: connection: %w", err)
		}
		defer conn.Close() // after the rollback below: defers run last first
		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			return rep, fmt.Errorf("sqlstore: begin: %w", err)
		}
		cp = &copier{copy: pgxCopy(conn), presumeNew: presumeNew}
	} else if tx, err = s.db.Begin(ctx); err != nil {
		return rep, err
	}
	defer tx.Rollback()
	now := s.db.Clock.Now()
	note := runNote(st.Notes)
	// The events go first, unlocked: a stale claim's events are rolled back
	// with it when the fenced update below matches nothing, and a
	// concurrent writer of the same event is caught by the unique key and
	// the re-freeze's own condition.
	if rep, err = s.insertEvents(ctx, tx, cp, c, st.Items, now); err != nil {
		return rep, err
	}
	// items means new data was recorded; a fetch that re-read only what is
	// already frozen found nothing new.
	outcome := tidemark.OutcomeEmpty
	if rep.EventsNew+rep.EventsChanged > 0 {
		outcome = tidemark.OutcomeItems
	}
	if err := fpSettleAfterEvents.Hit(ctx); err != nil {
		return rep, err
	}
	// The fence is the source update's own condition (token, cursor
	// version, run); its rows affected decide, no read beforehand.
	name, err := s.finish(ctx, tx, c, finish{
		sourceSet: `cursor = $2, cursor_version = cursor_version + 1, claim_token = NULL, claim_holder = NULL,
			claim_run_id = NULL, lease_expires_at = NULL, window_attempts = 0, failing_since = NULL,
			next_due_at = $3, last_outcome = $4, last_error = '', last_run_at = $1, updated_at = $1`,
		runSet: `status = 'settled', outcome = $4, cursor_after = $2, declared = $5, admitted = $6,
			events_new = $7, events_changed = $8, note = $9, finished_at = $1`,
		cursorAfter: `$2`, versionAfter: c.CursorVersion + 1,
		args:    []any{st.Cursor, ms(st.NextDueAt), string(outcome), st.Declared, len(st.Items), rep.EventsNew, rep.EventsChanged, note},
		outcome: outcome, nNew: rep.EventsNew, nChanged: rep.EventsChanged, now: now, served: true,
	})
	if err != nil {
		return rep, fmt.Errorf("settle run %s: %w", c.RunID, err)
	}
	if err := fpSettleBeforeCommit.Hit(ctx); err != nil {
		return rep, err
	}
	if err := tx.Commit(); err != nil {
		return rep, fmt.Errorf("settle run %s: commit: %w", c.RunID, err)
	}
	r := sourceRow{Source: tidemark.Source{Name: name, Cursor: c.Cursor}}
	if err := fpSettleAfterCommit.Hit(ctx); err != nil {
		return rep, err
	}
	// Every write above was confirmed by its rows affected; the run is what
	// they wrote.
	finished := fromMS(ms(now)) // as stored
	rep.Run = tidemark.Run{
		ID: c.RunID, SourceID: c.SourceID, SourceName: r.Name, Holder: c.Holder, Attempt: c.Attempt,
		CursorVersion: c.CursorVersion, CursorBefore: r.Cursor, CursorAfter: st.Cursor,
		Status: tidemark.RunSettled, Outcome: outcome, Note: note, Declared: st.Declared, Admitted: len(st.Items),
		EventsNew: rep.EventsNew, EventsChanged: rep.EventsChanged, StartedAt: fromMS(ms(c.StartedAt)), FinishedAt: &finished,
	}
	return rep, nil
}

// maxRunNote bounds a run's note, as stored.
const maxRunNote = 2000

// runNote is the note a run records of its fetch's notes: joined by "; ",
// at most maxRunNote bytes (cut at a character).
func runNote(notes []string) string {
	note := strings.Join(notes, "; ")
	if len(note) <= maxRunNote {
		return note
	}
	cut := maxRunNote
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + "…"
}

// finish is the end of a run: the fenced source update, the run's update
// and its one audit row. Placeholders $1.. are the caller's args; the
// fence's come after them.
type finish struct {
	sourceSet, runSet string // SET clauses over $1 (now) and $2.. (args)
	cursorAfter       string // the audit row's cursor_after: a placeholder ("": the cursor before)
	versionAfter      int64
	args              []any // $2..
	outcome           tidemark.Outcome
	nNew, nChanged    int
	now               time.Time
	// served: the run showed that its holder can serve the source, whose
	// record that it could not is deleted.
	served bool
}

// errRunNotActive: the source's fence held but its run row is not active
// (the source update is then already written in the transaction, which
// must roll back). It is a stale claim to the caller.
var errRunNotActive = fmt.Errorf("run not active: %w", tidemark.ErrStaleClaim)

// finish writes a run's end in tx and returns the source's name. The source
// update is conditional on the claim's token, cursor version and run; the
// run's on its token and status; a second audit row is impossible. On
// PostgreSQL the three are one statement.
func (s *IngestStore) finish(ctx context.Context, tx *sql.Tx, c tidemark.Claim, f finish) (string, error) {
	args := append([]any{ms(f.now)}, f.args...)
	n := len(args)
	p := func(i int) string { return fmt.Sprintf("$%d", n+i) }
	if f.cursorAfter == "" {
		f.cursorAfter = p(6)
	}
	// $n+1 source, $n+2 token, $n+3 version, $n+4 run, $n+5 holder,
	// $n+6 cursor before, $n+7 version after, $n+8 new, $n+9 changed, $n+10 outcome
	args = append(args, c.SourceID, c.Token, c.CursorVersion, c.RunID, c.Holder, c.Cursor, f.versionAfter, f.nNew, f.nChanged, string(f.outcome))
	srcUpdate := `UPDATE sources SET ` + f.sourceSet + `
		WHERE id = ` + p(1) + ` AND claim_token = ` + p(2) + ` AND cursor_version = ` + p(3) + ` AND claim_run_id = ` + p(4) + `
		RETURNING name`
	runUpdate := `UPDATE ingest_runs SET ` + f.runSet + `
		WHERE id = ` + p(4) + ` AND token = ` + p(2) + ` AND status = 'active'`
	auditCols := `(run_id, source_id, holder, outcome, cursor_before, cursor_after, cursor_version_before, cursor_version_after, events_new, events_changed, at)`
	stale := fmt.Errorf("run %s on %s (cursor version %d): %w", c.RunID, c.SourceID, c.CursorVersion, tidemark.ErrStaleClaim)
	clearUnserved := `DELETE FROM source_unserved WHERE source_id = ` + p(1) + ` AND holder = ` + p(5)
	if s.db.Dialect.ModifyingCTE {
		var name sql.NullString
		var runs, audits int
		cleared := ""
		if f.served {
			// Runs whatever the final SELECT reads; rolled back with the
			// rest when the fence failed.
			cleared = `, cleared AS (` + clearUnserved + ` AND EXISTS (SELECT 1 FROM src))`
		}
		err := tx.QueryRowContext(ctx, `WITH src AS (`+srcUpdate+`), run AS (`+runUpdate+` AND EXISTS (SELECT 1 FROM src) RETURNING id),
			audit AS (INSERT INTO ingest_audit `+auditCols+`
				SELECT id, `+p(1)+`, `+p(5)+`, `+p(10)+`, `+p(6)+`, `+f.cursorAfter+`, `+p(3)+`, `+p(7)+`, `+p(8)+`, `+p(9)+`, $1 FROM run
				RETURNING run_id)`+cleared+`
			SELECT (SELECT name FROM src), (SELECT COUNT(*) FROM run), (SELECT COUNT(*) FROM audit)`, args...).Scan(&name, &runs, &audits)
		switch {
		case IsUniqueViolation(err):
			return "", fmt.Errorf("run %s already has its audit row: %w", c.RunID, tidemark.ErrConflict)
		case err != nil:
			return "", err
		case !name.Valid:
			return "", stale
		case runs != 1:
			return "", fmt.Errorf("run %s: %w", c.RunID, errRunNotActive)
		case audits != 1:
			return "", fmt.Errorf("%w: run %s: %d audit rows written", tidemark.ErrUnconfirmed, c.RunID, audits)
		}
		return name.String, nil
	}
	var name string
	err := tx.QueryRowContext(ctx, srcUpdate, args...).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", stale
	}
	if err != nil {
		return "", err
	}
	if err := exec1(ctx, tx, fmt.Errorf("run %s: %w", c.RunID, errRunNotActive), runUpdate, args...); err != nil {
		return "", err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO ingest_audit `+auditCols+` VALUES (`+p(4)+`, `+p(1)+`, `+p(5)+`, `+p(10)+`, `+p(6)+`, `+f.cursorAfter+`, `+p(3)+`, `+p(7)+`, `+p(8)+`, `+p(9)+`, $1)`, args...)
	if IsUniqueViolation(err) {
		return "", fmt.Errorf("run %s already has its audit row: %w", c.RunID, tidemark.ErrConflict)
	}
	if err != nil {
		return "", err
	}
	if f.served {
		if _, err := tx.ExecContext(ctx, clearUnserved, args...); err != nil {
			return "", fmt.Errorf("run %s: clear the record that %s could not serve the source: %w", c.RunID, c.Holder, err)
		}
	}
	return name, nil
}

// frozen is an event's identity and current evidence, as read before a
// settlement writes.
type frozen struct {
	id       string
	hash     string
	revision int
}

// insertEvents freezes the items of a settlement: a new item is a new event
// at revision 1, an item whose evidence changed is re-frozen at the next
// revision (the old evidence stays in event_revisions), and an item whose
// evidence is already frozen is left alone. The caller holds the source's
// lock, so the events read here cannot change before the writes.
func (s *IngestStore) insertEvents(ctx context.Context, tx *sql.Tx, cp *copier, c tidemark.Claim, items []tidemark.Item, now time.Time) (ingest.SettleReport, error) {
	var rep ingest.SettleReport
	if len(items) == 0 {
		return rep, nil
	}
	// A dialect with a round trip per statement reads every named event in
	// one indexed query up front. Where statements run row at a time
	// (SQLite), a statement costs little but a large query's planning does:
	// a new event is inserted straight away and only an item that turns out
	// to exist is looked up.
	if !s.db.Dialect.RowAtATime {
		return s.insertEventsSet(ctx, tx, cp, c, items, now)
	}
	known := map[string]frozen{}
	lookup, err := tx.PrepareContext(ctx, lookupEvent)
	if err != nil {
		return rep, fmt.Errorf("prepare event lookup: %w", err)
	}
	defer lookup.Close()
	ins, err := tx.PrepareContext(ctx, insertEvent+` ON CONFLICT (source_id, item_key) DO NOTHING`)
	if err != nil {
		return rep, fmt.Errorf("prepare event insert: %w", err)
	}
	defer ins.Close()
	// The revision insert is prepared when first needed.
	var revStmt *sql.Stmt
	defer func() {
		if revStmt != nil {
			revStmt.Close()
		}
	}()
	rev := func() (*sql.Stmt, error) {
		if revStmt == nil {
			var err error
			if revStmt, err = tx.PrepareContext(ctx, insertRevision); err != nil {
				return nil, fmt.Errorf("prepare revision insert: %w", err)
			}
		}
		return revStmt, nil
	}
	var refreeze *sql.Stmt
	for _, it := range items {
		hash := it.EvidenceHash()
		occurred := it.OccurredAt
		if occurred.IsZero() {
			occurred = now
		}
		cur, ok := known[it.Key]
		if !ok {
			id := s.db.IDs.New()
			res, err := ins.ExecContext(ctx, id, c.SourceID, it.Key, it.Title, it.URL, ms(occurred), hash, c.RunID, ms(now))
			if err != nil {
				return rep, fmt.Errorf("event %q: %w", it.Key, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return rep, fmt.Errorf("%w: event %q: rows affected: %v", tidemark.ErrUnconfirmed, it.Key, err)
			}
			if n == 1 {
				cur = frozen{id: id, hash: hash, revision: 1}
				known[it.Key] = cur
				rep.EventsNew++
				rs, err := rev()
				if err != nil {
					return rep, err
				}
				if err := s.insertRevision(ctx, rs, cur, it, c, now); err != nil {
					return rep, err
				}
				rep.EventIDs = append(rep.EventIDs, cur.id)
				continue
			}
			// It exists: read what it is frozen at.
			if err := lookup.QueryRowContext(ctx, c.SourceID, it.Key).Scan(&cur.id, &cur.hash, &cur.revision); err != nil {
				return rep, fmt.Errorf("event %q: read frozen evidence: %w", it.Key, err)
			}
		}
		if cur.hash == hash {
			continue // the same evidence again: nothing changed upstream
		}
		if refreeze == nil {
			var err error
			if refreeze, err = tx.PrepareContext(ctx, refreezeEvent); err != nil {
				return rep, fmt.Errorf("prepare event refreeze: %w", err)
			}
			defer refreeze.Close()
		}
		res, err := refreeze.ExecContext(ctx, it.Title, it.URL, ms(occurred), hash, c.RunID, ms(now), cur.id, cur.hash, cur.revision)
		if err := expectOne(res, err, fmt.Errorf("event %q changed under the source lock: %w", it.Key, tidemark.ErrUnconfirmed)); err != nil {
			return rep, err
		}
		cur = frozen{id: cur.id, hash: hash, revision: cur.revision + 1}
		rep.EventsChanged++
		known[it.Key] = cur
		rs, err := rev()
		if err != nil {
			return rep, err
		}
		if err := s.insertRevision(ctx, rs, cur, it, c, now); err != nil {
			return rep, err
		}
		rep.EventIDs = append(rep.EventIDs, cur.id)
	}
	return rep, nil
}

// insertEventsSet is insertEvents for PostgreSQL, set-based: every key's
// first occurrence is inserted as a new event in one statement per chunk
// (ON CONFLICT DO NOTHING tells which were new, with no read beforehand),
// their evidence likewise; only the items that already existed, or that
// repeat a key of the same fetch, are then judged one by one against what
// is frozen.
func (s *IngestStore) insertEventsSet(ctx context.Context, tx *sql.Tx, cp *copier, c tidemark.Claim, items []tidemark.Item, now time.Time) (ingest.SettleReport, error) {
	var rep ingest.SettleReport
	firstAt := make(map[string]int, len(items))
	fresh := make([]freshEvent, 0, len(items))
	for i, it := range items {
		if _, dup := firstAt[it.Key]; dup {
			continue
		}
		firstAt[it.Key] = i
		occurred := it.OccurredAt
		if occurred.IsZero() {
			occurred = now
		}
		fresh = append(fresh, freshEvent{cur: frozen{id: s.db.IDs.New(), hash: it.EvidenceHash(), revision: 1}, it: it, occurred: occurred})
	}
	var inserted map[string]bool
	var old map[string]frozen // the keys the source had, when already read
	var err error
	if cp != nil {
		inserted, old, err = s.copyFresh(ctx, tx, cp, c, fresh, now)
	} else {
		inserted, err = s.insertFresh(ctx, tx, c, fresh, now)
	}
	if err != nil {
		return rep, err
	}
	if len(fresh) == len(items) && len(inserted) == len(fresh) {
		// Every item was a new event (the common settlement): nothing to
		// look up or re-freeze.
		rep.EventsNew = len(fresh)
		rep.EventIDs = make([]string, len(fresh))
		for i, f := range fresh {
			rep.EventIDs[i] = f.cur.id
		}
		return rep, nil
	}
	known := make(map[string]frozen, len(fresh))
	var existing []tidemark.Item
	for _, f := range fresh {
		if inserted[f.cur.id] {
			known[f.it.Key] = f.cur
		} else {
			existing = append(existing, f.it)
		}
	}
	for k, f := range old {
		known[k] = f
	}
	if len(existing) > 0 && old == nil {
		old, err := s.frozenEvents(ctx, tx, c.SourceID, existing)
		if err != nil {
			return rep, err
		}
		for k, f := range old {
			known[k] = f
		}
	}
	var refreeze, rev *sql.Stmt
	defer func() {
		for _, st := range []*sql.Stmt{refreeze, rev} {
			if st != nil {
				st.Close()
			}
		}
	}()
	for i, it := range items {
		cur, ok := known[it.Key]
		if !ok {
			return rep, fmt.Errorf("%w: event %q neither inserted nor found", tidemark.ErrUnconfirmed, it.Key)
		}
		if firstAt[it.Key] == i && inserted[cur.id] && cur.revision == 1 {
			rep.EventsNew++
			rep.EventIDs = append(rep.EventIDs, cur.id)
			continue
		}
		hash := it.EvidenceHash()
		if cur.hash == hash {
			continue // the same evidence again: nothing changed upstream
		}
		occurred := it.OccurredAt
		if occurred.IsZero() {
			occurred = now
		}
		if refreeze == nil {
			if refreeze, err = tx.PrepareContext(ctx, refreezeEvent); err != nil {
				return rep, fmt.Errorf("prepare event refreeze: %w", err)
			}
			if rev, err = tx.PrepareContext(ctx, insertRevision); err != nil {
				return rep, fmt.Errorf("prepare revision insert: %w", err)
			}
		}
		res, err := refreeze.ExecContext(ctx, it.Title, it.URL, ms(occurred), hash, c.RunID, ms(now), cur.id, cur.hash, cur.revision)
		if err := expectOne(res, err, fmt.Errorf("event %q changed under the settlement: %w", it.Key, tidemark.ErrUnconfirmed)); err != nil {
			return rep, err
		}
		cur = frozen{id: cur.id, hash: hash, revision: cur.revision + 1}
		known[it.Key] = cur
		rep.EventsChanged++
		if err := s.insertRevision(ctx, rev, cur, it, c, now); err != nil {
			return rep, err
		}
		rep.EventIDs = append(rep.EventIDs, cur.id)
	}
	return rep, nil
}

// freshEvent is a candidate new event for insertFresh.
type freshEvent struct {
	cur      frozen
	it       tidemark.Item
	occurred time.Time
}

// freshChunk bounds the rows of one set-based insert.
const freshChunk = 5000

// insertFresh inserts the candidates whose keys the source does not have
// yet, at revision 1, and their evidence: each chunk is one statement over
// arrays (unnest), a round trip per chunk rather than two per event. It
// returns the IDs of the events it inserted.
func (s *IngestStore) insertFresh(ctx context.Context, tx *sql.Tx, c tidemark.Claim, fresh []freshEvent, now time.Time) (map[string]bool, error) {
	inserted := make(map[string]bool, len(fresh))
	for start := 0; start < len(fresh); start += freshChunk {
		chunk := fresh[start:min(start+freshChunk, len(fresh))]
		n := len(chunk)
		ids, keys, titles, urls, hashes := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		occurred := make([]int64, n)
		for i, f := range chunk {
			ids[i], keys[i], titles[i], urls[i], hashes[i] = f.cur.id, f.it.Key, f.it.Title, f.it.URL, f.cur.hash
			occurred[i] = ms(f.occurred)
		}
		got, err := queryAll(ctx, tx, scanString, `INSERT INTO events
			(id, source_id, item_key, title, url, occurred_at, evidence_hash, revision, run_id, created_at, updated_at)
			SELECT id, $1, item_key, title, url, occurred_at, evidence_hash, 1, $2, $3, $3
			FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[])
				AS t(id, item_key, title, url, occurred_at, evidence_hash)
			ON CONFLICT (source_id, item_key) DO NOTHING
			RETURNING id`,
			c.SourceID, c.RunID, ms(now), ids, keys, titles, urls, occurred, hashes)
		if err != nil {
			return nil, fmt.Errorf("insert %d events: %w", n, err)
		}
		if len(got) == 0 {
			continue
		}
		mine := make(map[string]bool, len(got))
		for _, id := range got {
			mine[id] = true
			inserted[id] = true
		}
		revIDs, revHashes, evidence := make([]string, 0, len(got)), make([]string, 0, len(got)), make([][]byte, 0, len(got))
		for _, f := range chunk {
			if !mine[f.cur.id] {
				continue
			}
			e := f.it.Evidence
			if e == nil {
				e = []byte{}
			}
			revIDs, revHashes, evidence = append(revIDs, f.cur.id), append(revHashes, f.cur.hash), append(evidence, e)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO event_revisions (event_id, revision, evidence_hash, evidence, run_id, created_at)
			SELECT id, 1, evidence_hash, evidence, $1, $2 FROM unnest($3::text[], $4::text[], $5::bytea[]) AS t(id, evidence_hash, evidence)`,
			c.RunID, ms(now), revIDs, revHashes, evidence)
		if err != nil {
			return nil, fmt.Errorf("insert %d revisions: %w", len(revIDs), err)
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(revIDs)) {
			return nil, fmt.Errorf("%w: inserted %d of %d revisions (%v)", tidemark.ErrUnconfirmed, n, len(revIDs), err)
		}
	}
	return inserted, nil
}

// copyMinItems is the fewest items a settlement writes with COPY: below it,
// holding a connection of its own and two COPY exchanges cost more than
// the set-based inserts.
const copyMinItems = 100

// copier writes rows with COPY inside the transaction open on the
// connection it holds.
type copier struct {
	copy func(ctx context.Context, table string, columns []string, rows [][]any) (int64, error)
	// presumeNew: copy without reading first which events exist, unless a
	// probe of the first and last keys finds one.
	presumeNew bool
}

// pgxCopy copies through the pgx connection under conn. database/sql's
// transaction on conn is open, so COPY runs inside it.
func pgxCopy(conn *sql.Conn) func(ctx context.Context, table string, columns []string, rows [][]any) (int64, error) {
	return func(ctx context.Context, table string, columns []string, rows [][]any) (int64, error) {
		var n int64
		err := conn.Raw(func(dc any) error {
			pc, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("sqlstore: COPY needs a pgx connection, have %T", dc)
			}
			var err error
			n, err = pc.Conn().CopyFrom(ctx, pgx.Identifier{table}, columns, pgx.CopyFromRows(rows))
			return err
		})
		return n, err
	}
}

// copyFresh is insertFresh with COPY. Unless cp presumes the events new,
// the keys the source already has are read in one indexed query first, and
// only the rest are copied in, with their evidence; the keys read come
// back as old. COPY has no ON CONFLICT: a key that exists after all
// (presumed new, or written meanwhile by a stale claim of the same source,
// whose settlement is about to fail its fence) fails the COPY on the
// unique key, and the transaction must roll back.
func (s *IngestStore) copyFresh(ctx context.Context, tx *sql.Tx, cp *copier, c tidemark.Claim, fresh []freshEvent, now time.Time) (inserted map[string]bool, old map[string]frozen, err error) {
	presumed := cp.presumeNew
	if presumed {
		// A re-read (a feed fetched again) has old items at one end or the
		// other: read first rather than fail a COPY.
		var found bool
		ends := []string{fresh[0].it.Key, fresh[len(fresh)-1].it.Key}
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE source_id = $1 AND item_key = ANY($2::text[]))`,
			c.SourceID, ends).Scan(&found); err != nil {
			return nil, nil, fmt.Errorf("probe events: %w", err)
		}
		presumed = !found
	}
	if !presumed {
		items := make([]tidemark.Item, len(fresh))
		for i, f := range fresh {
			items[i] = f.it
		}
		if old, err = s.frozenEvents(ctx, tx, c.SourceID, items); err != nil {
			return nil, nil, err
		}
	}
	inserted = make(map[string]bool, len(fresh))
	evRows, revRows := make([][]any, 0, len(fresh)), make([][]any, 0, len(fresh))
	for _, f := range fresh {
		if _, ok := old[f.it.Key]; ok {
			continue
		}
		e := f.it.Evidence
		if e == nil {
			e = []byte{}
		}
		evRows = append(evRows, []any{f.cur.id, c.SourceID, f.it.Key, f.it.Title, f.it.URL, ms(f.occurred), f.cur.hash, 1, c.RunID, ms(now), ms(now)})
		revRows = append(revRows, []any{f.cur.id, 1, f.cur.hash, e, c.RunID, ms(now)})
		inserted[f.cur.id] = true
	}
	if old == nil {
		old = map[string]frozen{}
	}
	if len(evRows) == 0 {
		return inserted, old, nil
	}
	n, err := cp.copy(ctx, "events", []string{"id", "source_id", "item_key", "title", "url", "occurred_at", "evidence_hash", "revision", "run_id", "created_at", "updated_at"}, evRows)
	switch {
	case IsUniqueViolation(err) && presumed:
		return nil, nil, fmt.Errorf("insert %d events: %w", len(evRows), errCopyMetExisting)
	case IsUniqueViolation(err):
		return nil, nil, fmt.Errorf("insert %d events: another settlement of %s wrote one of them meanwhile: %w", len(evRows), c.SourceID, tidemark.ErrConflict)
	case err != nil:
		return nil, nil, fmt.Errorf("insert %d events: %w", len(evRows), err)
	case n != int64(len(evRows)):
		return nil, nil, fmt.Errorf("%w: copied %d of %d events", tidemark.ErrUnconfirmed, n, len(evRows))
	}
	n, err = cp.copy(ctx, "event_revisions", []string{"event_id", "revision", "evidence_hash", "evidence", "run_id", "created_at"}, revRows)
	if err != nil {
		return nil, nil, fmt.Errorf("insert %d revisions: %w", len(revRows), err)
	}
	if n != int64(len(revRows)) {
		return nil, nil, fmt.Errorf("%w: copied %d of %d revisions", tidemark.ErrUnconfirmed, n, len(revRows))
	}
	return inserted, old, nil
}

// insertRevision keeps an item's evidence as its event's revision cur.
func (s *IngestStore) insertRevision(ctx context.Context, rev *sql.Stmt, cur frozen, it tidemark.Item, c tidemark.Claim, now time.Time) error {
	evidence := it.Evidence
	if evidence == nil {
		evidence = []byte{}
	}
	if _, err := rev.ExecContext(ctx, cur.id, cur.revision, cur.hash, evidence, c.RunID, ms(now)); err != nil {
		return fmt.Errorf("event %q revision %d: %w", it.Key, cur.revision, err)
	}
	return nil
}

func (s *IngestStore) insertAudit(ctx context.Context, tx *sql.Tx, runID string, r sourceRow, holder string, o tidemark.Outcome,
	cursorAfter string, versionAfter int64, nNew, nChanged int, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO ingest_audit
		(run_id, source_id, holder, outcome, cursor_before, cursor_after, cursor_version_before, cursor_version_after, events_new, events_changed, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		runID, r.ID, holder, string(o), r.Cursor, cursorAfter, r.CursorVersion, versionAfter, nNew, nChanged, ms(now))
	if IsUniqueViolation(err) {
		return fmt.Errorf("run %s already has its audit row: %w", runID, tidemark.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("audit run %s: %w", runID, err)
	}
	return nil
}

// Fail implements ingest.Store.
func (s *IngestStore) Fail(ctx context.Context, c tidemark.Claim, f ingest.Failure) (tidemark.Run, error) {
	if f.Outcome.Advances() || f.Outcome == tidemark.OutcomeLost || !f.Outcome.Valid() {
		return tidemark.Run{}, tidemark.Invalidf("failure outcome", string(f.Outcome), "want unreachable, invalid or error")
	}
	if f.Declared < 0 || f.Admitted < 0 {
		return tidemark.Run{}, tidemark.Invalidf("failure counts", fmt.Sprintf("declared %d, admitted %d", f.Declared, f.Admitted), "want counts of 0 or more")
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return tidemark.Run{}, err
	}
	defer tx.Rollback()
	now := s.db.Clock.Now()
	// ingest.ChargeFailure decides; the store records it. The claim
	// carries the window's attempts and failing-since as they were at the
	// claim; the fence guarantees they have not moved since.
	ch := ingest.ChargeFailure(c, f, now)
	// An interrupted run ($11 = 1) leaves the source's last outcome, error
	// and run time as they were: the stop was ours, not the source's.
	interrupted := 0
	if f.Interrupted {
		interrupted = 1
	}
	name, err := s.finish(ctx, tx, c, finish{
		sourceSet: `claim_token = NULL, claim_holder = NULL, claim_run_id = NULL, lease_expires_at = NULL,
			window_attempts = window_attempts + $2, window_state = $3, terminal_reason = $4, next_due_at = $5,
			last_outcome = CASE WHEN $11 = 1 THEN last_outcome ELSE $6 END,
			last_error = CASE WHEN $11 = 1 THEN last_error ELSE $7 END,
			last_run_at = CASE WHEN $11 = 1 THEN last_run_at ELSE $1 END, updated_at = $1, failing_since = $8`,
		runSet:       `status = 'failed', outcome = $6, error = $7, declared = $9, admitted = $10, finished_at = $1`,
		versionAfter: c.CursorVersion,
		args: []any{ch.Spent, string(ch.Window), ch.TerminalReason, ms(f.NextDueAt), string(f.Outcome), f.Reason, nullMS(ch.FailingSince),
			f.Declared, f.Admitted, interrupted},
		outcome: f.Outcome, now: now, served: f.Served(),
	})
	if err != nil {
		return tidemark.Run{}, fmt.Errorf("fail run %s: %w", c.RunID, err)
	}
	if err := fpFailBeforeCommit.Hit(ctx); err != nil {
		return tidemark.Run{}, err
	}
	if err := tx.Commit(); err != nil {
		return tidemark.Run{}, fmt.Errorf("fail run %s: commit: %w", c.RunID, err)
	}
	finished := fromMS(ms(now)) // as stored
	return tidemark.Run{
		ID: c.RunID, SourceID: c.SourceID, SourceName: name, Holder: c.Holder, Attempt: c.Attempt,
		CursorVersion: c.CursorVersion, CursorBefore: c.Cursor, Status: tidemark.RunFailed, Outcome: f.Outcome,
		Error: f.Reason, Declared: f.Declared, Admitted: f.Admitted, StartedAt: fromMS(ms(c.StartedAt)), FinishedAt: &finished,
	}, nil
}

// releaseForOperator clears an expired claim (the run is lost, not charged:
// the operator is about to reset the window) or refuses a live one.
func (s *IngestStore) releaseForOperator(ctx context.Context, tx *sql.Tx, r sourceRow, now time.Time) (sourceRow, error) {
	if !r.token.Valid {
		return r, nil
	}
	if s.db.liveness.Stands(r.ClaimHolder, *r.LeaseExpiresAt, now) {
		return r, fmt.Errorf("source %s: run %s by %s is in progress until %s: %w",
			r.Name, r.ClaimRunID, r.ClaimHolder, fieldtext.Day(*r.LeaseExpiresAt), tidemark.ErrClaimHeld)
	}
	return s.loseRun(ctx, tx, r, now, false)
}

// Retry implements ingest.Store.
func (s *IngestStore) Retry(ctx context.Context, ref, actor, note string) (tidemark.Source, error) {
	return s.operate(ctx, ref, func(tx *sql.Tx, r sourceRow) (err error) {
		now := s.db.Clock.Now()
		if r, err = s.releaseForOperator(ctx, tx, r, now); err != nil {
			return err
		}
		err = exec1(ctx, tx, fmt.Errorf("retry %s: %w", r.Name, tidemark.ErrConflict),
			`UPDATE sources SET window_state = 'open', window_attempts = 0, terminal_reason = '', failing_since = NULL,
			next_due_at = $1, updated_at = $1 WHERE id = $2 AND claim_token IS NULL AND cursor_version = $3`,
			ms(now), r.ID, r.CursorVersion)
		if err != nil {
			return err
		}
		return s.insertAction(ctx, tx, r, "retry", actor, r.Cursor, r.CursorVersion, note, now)
	})
}

// Skip implements ingest.Store.
func (s *IngestStore) Skip(ctx context.Context, ref string, from int64, to, actor, note string) (tidemark.Source, error) {
	if strings.TrimSpace(to) == "" {
		return tidemark.Source{}, tidemark.Invalidf("skip target", to, "a skip needs an explicit cursor to move to")
	}
	return s.operate(ctx, ref, func(tx *sql.Tx, r sourceRow) (err error) {
		if r.CursorVersion != from {
			return fmt.Errorf("skip %s: its cursor moved (version %d, now %d) since the skip was decided; skip again: %w",
				r.Name, from, r.CursorVersion, tidemark.ErrConflict)
		}
		if r.Cursor == to {
			return tidemark.Invalidf("skip target", to, "source %s is already there", r.Name)
		}
		now := s.db.Clock.Now()
		if r, err = s.releaseForOperator(ctx, tx, r, now); err != nil {
			return err
		}
		err = exec1(ctx, tx, fmt.Errorf("skip %s: %w", r.Name, tidemark.ErrConflict),
			`UPDATE sources SET cursor = $1, cursor_version = cursor_version + 1,
			window_state = 'open', window_attempts = 0, terminal_reason = '', failing_since = NULL, next_due_at = $2, updated_at = $2
			WHERE id = $3 AND claim_token IS NULL AND cursor_version = $4`,
			to, ms(now), r.ID, r.CursorVersion)
		if err != nil {
			return err
		}
		return s.insertAction(ctx, tx, r, "skip", actor, to, r.CursorVersion+1, note, now)
	})
}

func (s *IngestStore) insertAction(ctx context.Context, tx *sql.Tx, r sourceRow, action, actor, cursorAfter string, versionAfter int64, note string, now time.Time) error {
	_, err := s.recordAction(ctx, tx, r, action, actor, cursorAfter, versionAfter, note, now)
	return err
}

// recordAction is insertAction, returning the action it recorded.
func (s *IngestStore) recordAction(ctx context.Context, tx *sql.Tx, r sourceRow, action, actor, cursorAfter string, versionAfter int64, note string, now time.Time) (ingest.Action, error) {
	if actor == "" {
		actor = "unknown"
	}
	a := ingest.Action{ID: s.db.IDs.New(), SourceID: r.ID, SourceName: r.Name, Action: action, Actor: actor,
		CursorBefore: r.Cursor, CursorAfter: cursorAfter, CursorVersionBefore: r.CursorVersion, CursorVersionAfter: versionAfter,
		Note: note, At: fromMS(ms(now))}
	_, err := tx.ExecContext(ctx, `INSERT INTO source_actions
		(id, source_id, source_name, action, actor, cursor_before, cursor_after, cursor_version_before, cursor_version_after, note, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		a.ID, a.SourceID, a.SourceName, a.Action, a.Actor, a.CursorBefore, a.CursorAfter, a.CursorVersionBefore, a.CursorVersionAfter, a.Note, ms(now))
	if err != nil {
		return a, fmt.Errorf("audit %s on %s: %w", action, r.Name, err)
	}
	return a, nil
}

// Actions implements ingest.Store. A removed source's actions stay
// readable by its ID: the audit outlives the source.
func (s *IngestStore) Actions(ctx context.Context, ref string, limit int) ([]ingest.Action, error) {
	if limit <= 0 {
		limit = 100
	}
	src, err := s.Source(ctx, ref)
	if errors.Is(err, tidemark.ErrNotFound) {
		actions, aerr := s.actionsOf(ctx, ref, limit)
		if aerr != nil || len(actions) == 0 {
			return nil, errors.Join(err, aerr)
		}
		return actions, nil
	}
	if err != nil {
		return nil, err
	}
	return s.actionsOf(ctx, src.ID, limit)
}

const actionColumns = `id, source_id, source_name, action, actor, cursor_before, cursor_after,
	cursor_version_before, cursor_version_after, note, at`

func scanAction(sc scanner) (ingest.Action, error) {
	var a ingest.Action
	var at int64
	err := sc.Scan(&a.ID, &a.SourceID, &a.SourceName, &a.Action, &a.Actor, &a.CursorBefore, &a.CursorAfter,
		&a.CursorVersionBefore, &a.CursorVersionAfter, &a.Note, &at)
	a.At = fromMS(at)
	return a, err
}

const runColumns = `r.id, r.source_id, s.name, r.holder, r.attempt, r.cursor_version, r.cursor_before, r.cursor_after,
	r.status, r.outcome, r.error, r.note, r.declared, r.admitted, r.events_new, r.events_changed, r.started_at, r.finished_at,
	r.lease_expires_at, s.location`

// scanRun reads a run, and for an active one the state of its claim at
// now, as this host can tell it (the rule sources are shown by): reading
// writes nothing.
func (s *IngestStore) scanRun(now time.Time) func(sc scanner) (tidemark.Run, error) {
	return func(sc scanner) (tidemark.Run, error) {
		var run tidemark.Run
		var status, outcome string
		var started int64
		var finished, lease sql.NullInt64
		var location string
		err := sc.Scan(&run.ID, &run.SourceID, &run.SourceName, &run.Holder, &run.Attempt, &run.CursorVersion,
			&run.CursorBefore, &run.CursorAfter, &status, &outcome, &run.Error, &run.Note, &run.Declared, &run.Admitted,
			&run.EventsNew, &run.EventsChanged, &started, &finished, &lease, &location)
		run.Error = shownError(location, run.Error)
		run.Status, run.Outcome = tidemark.RunStatus(status), tidemark.Outcome(outcome)
		run.StartedAt, run.FinishedAt = fromMS(started), fromNullMS(finished)
		if run.Status == tidemark.RunActive {
			run.ClaimState = s.db.liveness.ClaimState(tidemark.Source{ClaimHolder: run.Holder, LeaseExpiresAt: fromNullMS(lease)}, now)
		}
		return run, err
	}
}

func (s *IngestStore) run(ctx context.Context, id string) (tidemark.Run, error) {
	run, err := s.scanRun(s.db.Clock.Now())(s.db.db.QueryRowContext(ctx, `SELECT `+runColumns+`
		FROM ingest_runs r JOIN sources s ON s.id = r.source_id WHERE r.id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return run, fmt.Errorf("run %s: %w", id, tidemark.ErrNotFound)
	}
	return run, err
}

// Runs implements ingest.Store.
func (s *IngestStore) Runs(ctx context.Context, f ingest.RunFilter) ([]tidemark.Run, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT ` + runColumns + ` FROM ingest_runs r JOIN sources s ON s.id = r.source_id WHERE 1 = 1`
	var args []any
	if f.SourceID != "" {
		src, err := s.Source(ctx, f.SourceID)
		if err != nil {
			return nil, err
		}
		args = append(args, src.ID)
		q += fmt.Sprintf(` AND r.source_id = $%d`, len(args))
	}
	if f.Outcome != "" {
		args = append(args, string(f.Outcome))
		q += fmt.Sprintf(` AND r.outcome = $%d`, len(args))
	}
	if f.BeforeID != "" {
		args = append(args, ms(f.BeforeStartedAt), f.BeforeID)
		q += fmt.Sprintf(` AND (r.started_at < $%d OR (r.started_at = $%d AND r.id < $%d))`, len(args)-1, len(args)-1, len(args))
	}
	args = append(args, f.Limit)
	q += fmt.Sprintf(` ORDER BY r.started_at DESC, r.id DESC LIMIT $%d`, len(args))
	runs, err := queryAll(ctx, s.db.db, s.scanRun(s.db.Clock.Now()), q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

const eventColumns = `id, source_id, item_key, title, url, occurred_at, evidence_hash, revision, run_id, created_at, updated_at`

// ScanEvent scans a row of eventColumns.
func scanEvent(sc scanner) (tidemark.Event, error) {
	var e tidemark.Event
	var occurred, created, updated int64
	err := sc.Scan(&e.ID, &e.SourceID, &e.ItemKey, &e.Title, &e.URL, &occurred, &e.EvidenceHash, &e.Revision, &e.RunID, &created, &updated)
	e.OccurredAt, e.CreatedAt, e.UpdatedAt = fromMS(occurred), fromMS(created), fromMS(updated)
	return e, err
}

// Events implements ingest.Store.
func (s *IngestStore) Events(ctx context.Context, f ingest.EventFilter) ([]tidemark.Event, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT ` + eventColumns + ` FROM events WHERE 1 = 1`
	args := []any{}
	if f.SourceID != "" {
		src, err := s.Source(ctx, f.SourceID)
		if err != nil {
			return nil, err
		}
		args = append(args, src.ID)
		q += ` AND source_id = $1`
	}
	if f.BeforeID != "" {
		args = append(args, ms(f.BeforeOccurredAt), f.BeforeID)
		q += fmt.Sprintf(` AND (occurred_at < $%d OR (occurred_at = $%d AND id < $%d))`, len(args)-1, len(args)-1, len(args))
	}
	if f.RunID != "" {
		args = append(args, f.RunID)
		q += fmt.Sprintf(` AND run_id = $%d`, len(args))
	}
	args = append(args, f.Limit)
	q += fmt.Sprintf(` ORDER BY occurred_at DESC, id DESC LIMIT $%d`, len(args))
	evs, err := queryAll(ctx, s.db.db, scanEvent, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return evs, nil
}

// Event implements ingest.Store.
func (s *IngestStore) Event(ctx context.Context, id string) (tidemark.Event, error) {
	e, err := scanEvent(s.db.db.QueryRowContext(ctx, `SELECT `+eventColumns+` FROM events WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return e, fmt.Errorf("event %s: %w", id, tidemark.ErrNotFound)
	}
	return e, err
}

// Evidence implements ingest.Store.
func (s *IngestStore) Evidence(ctx context.Context, eventID string, revision int) ([]byte, string, error) {
	q := `SELECT evidence, evidence_hash FROM event_revisions WHERE event_id = $1 AND revision = $2`
	args := []any{eventID, revision}
	if revision <= 0 {
		q = `SELECT r.evidence, r.evidence_hash FROM event_revisions r JOIN events e
			ON e.id = r.event_id AND e.revision = r.revision WHERE e.id = $1`
		args = args[:1]
	}
	var b []byte
	var hash string
	err := s.db.db.QueryRowContext(ctx, q, args...).Scan(&b, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", fmt.Errorf("event %s revision %d: %w", eventID, revision, tidemark.ErrNotFound)
	}
	return b, hash, err
}

// OutcomeCounts implements ingest.Store.
func (s *IngestStore) OutcomeCounts(ctx context.Context) (map[tidemark.Outcome]int64, error) {
	rows, err := s.db.db.QueryContext(ctx, `SELECT outcome, COUNT(*) FROM ingest_runs WHERE status <> 'active' GROUP BY outcome`)
	if err != nil {
		return nil, fmt.Errorf("count runs: %w", err)
	}
	defer rows.Close()
	out := map[tidemark.Outcome]int64{}
	for rows.Next() {
		var o string
		var n int64
		if err := rows.Scan(&o, &n); err != nil {
			return nil, err
		}
		out[tidemark.Outcome(o)] = n
	}
	return out, rows.Err()
}

// frozenEvents reads the current evidence of the events the items name, for
// the set-based path (dialects without RowAtATime, which take arrays): the
// keys go as one array parameter per chunk and are joined to events through
// the (source_id, item_key) index one by one. An IN list is filtered over all of the source's events
// instead whenever the statistics are stale (right after a large first
// ingest), which makes each lookup cost the size of the source.
func (s *IngestStore) frozenEvents(ctx context.Context, tx *sql.Tx, sourceID string, items []tidemark.Item) (map[string]frozen, error) {
	const chunk = 5000
	known := make(map[string]frozen, len(items))
	for start := 0; start < len(items); start += chunk {
		keys := make([]string, 0, min(chunk, len(items)-start))
		for _, it := range items[start:min(start+chunk, len(items))] {
			keys = append(keys, it.Key)
		}
		err := readFrozen(ctx, tx, known, `SELECT item_key, id, evidence_hash, revision
			FROM events WHERE source_id = $1 AND item_key = ANY($2::text[])`, sourceID, keys)
		if err != nil {
			return nil, err
		}
	}
	return known, nil
}

// readFrozen adds the rows of a (item_key, id, evidence_hash, revision)
// query to known.
func readFrozen(ctx context.Context, tx *sql.Tx, known map[string]frozen, query string, args ...any) error {
	type keyed struct {
		key string
		f   frozen
	}
	rows, err := queryAll(ctx, tx, func(sc scanner) (keyed, error) {
		var k keyed
		err := sc.Scan(&k.key, &k.f.id, &k.f.hash, &k.f.revision)
		return k, err
	}, query, args...)
	if err != nil {
		return fmt.Errorf("read frozen events: %w", err)
	}
	for _, k := range rows {
		known[k.key] = k.f
	}
	return nil
}

// NextDue implements ingest.Store. It reads index entries, never the
// table: the first unclaimed source in due order, the earliest end of a
// claim (a source in flight is due again when its lease runs out, if its
// holder never comes back), and the earliest end of the holder's records
// that it could not serve a source (such a source is passed over until
// then).
func (s *IngestStore) NextDue(ctx context.Context, holder string) (time.Time, bool, error) {
	var unheld, held, unserved sql.NullInt64
	err := s.db.db.QueryRowContext(ctx, `SELECT
		(SELECT next_due_at FROM sources WHERE state = 'active' AND window_state = 'open' AND claim_token IS NULL
			AND NOT EXISTS (`+unservedBy("sources.id", "$1", "$2")+`)
			ORDER BY next_due_at LIMIT 1),
		(SELECT MIN(CASE WHEN lease_expires_at > next_due_at THEN lease_expires_at ELSE next_due_at END)
			FROM sources WHERE claim_token IS NOT NULL AND state = 'active' AND window_state = 'open'
			AND NOT EXISTS (`+unservedBy("sources.id", "$1", "$2")+`)),
		(SELECT MIN(u.until_at) FROM source_unserved u JOIN sources s ON s.id = u.source_id
			WHERE u.holder = $1 AND u.until_at > $2 AND s.state = 'active' AND s.window_state = 'open')`,
		holder, ms(s.db.Clock.Now())).Scan(&unheld, &held, &unserved)
	if err != nil {
		return time.Time{}, false, err
	}
	var at int64
	ok := false
	for _, v := range []sql.NullInt64{unheld, held, unserved} {
		if v.Valid && (!ok || v.Int64 < at) {
			at, ok = v.Int64, true
		}
	}
	if !ok {
		return time.Time{}, false, nil
	}
	return fromMS(at), true, nil
}

// RecordUnserved implements ingest.Store.
func (s *IngestStore) RecordUnserved(ctx context.Context, u ingest.Unserved) error {
	if u.SourceID == "" || u.Holder == "" {
		return tidemark.Invalidf("unserved source", u.SourceID, "needs a source and a holder")
	}
	_, err := s.db.w.ExecContext(ctx, `INSERT INTO source_unserved (source_id, holder, reason, at, until_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (source_id, holder) DO UPDATE SET reason = excluded.reason, at = excluded.at, until_at = excluded.until_at`,
		u.SourceID, u.Holder, u.Reason, ms(u.At), ms(u.Until))
	if err != nil {
		return fmt.Errorf("record unserved source %s: %w", u.SourceID, err)
	}
	return nil
}

// LiveUnserved implements ingest.Store.
func (s *IngestStore) LiveUnserved(ctx context.Context, now time.Time) ([]ingest.Unserved, error) {
	out, err := queryAll(ctx, s.db.db, scanUnserved,
		`SELECT source_id, holder, reason, at, until_at FROM source_unserved WHERE until_at > $1`, ms(now))
	if err != nil {
		return nil, fmt.Errorf("live unserved sources: %w", err)
	}
	return out, nil
}

func scanUnserved(sc scanner) (ingest.Unserved, error) {
	var u ingest.Unserved
	var at, until int64
	err := sc.Scan(&u.SourceID, &u.Holder, &u.Reason, &at, &until)
	u.At, u.Until = fromMS(at), fromMS(until)
	return u, err
}

// Unserved implements ingest.Store.
func (s *IngestStore) Unserved(ctx context.Context, sourceID string) ([]ingest.Unserved, error) {
	out, err := queryAll(ctx, s.db.db, scanUnserved, `SELECT source_id, holder, reason, at, until_at FROM source_unserved WHERE source_id = $1 ORDER BY at DESC, holder`, sourceID)
	if err != nil {
		return nil, fmt.Errorf("unserved source %s: %w", sourceID, err)
	}
	if out == nil {
		out = []ingest.Unserved{}
	}
	return out, nil
}
