package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
)

// OutboxStore implements outbox.Store, and the operators' side of the
// outbox: lanes, channels, intents, gaps.
type OutboxStore struct{ db *DB }

// Outbox returns the outbox store over d.
func (d *DB) Outbox() *OutboxStore { return &OutboxStore{db: d} }

var _ outbox.Store = (*OutboxStore)(nil)

// minRecheck bounds how soon an unresolved or unexecutable intent is
// looked at again when the lane's policy names no spacing.
const minRecheck = time.Minute

// NewLane configures a lane. Settings are shown (the CLI, JSON, the API,
// the status pages); Secrets are kept apart from them and read only by
// LaneSecrets, for the code that builds the lane's provider.
// providers.Split divides a lane's configuration into the two.
type NewLane struct {
	outbox.LaneConfig
	Secrets map[string]string
	// Actor is who added the lane, for the audit.
	Actor string
}

// AddLane adds a lane.
func (s *OutboxStore) AddLane(ctx context.Context, nl NewLane) (outbox.Lane, error) {
	// The rules SetLane holds a changed lane to.
	if err := nl.Validate(); err != nil {
		return outbox.Lane{}, err
	}
	settings, err := json.Marshal(nl.Settings)
	if err != nil {
		return outbox.Lane{}, err
	}
	if nl.Settings == nil {
		settings = []byte("{}")
	}
	for k := range nl.Secrets {
		if _, shown := nl.Settings[k]; !shown {
			// The shown settings say a secret is set, never what it is.
			return outbox.Lane{}, tidemark.Invalidf("lane", nl.Name, "secret setting %q has no shown (redacted) setting beside it", k)
		}
	}
	now := ms(s.db.Clock.Now())
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return outbox.Lane{}, err
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO outbox_lanes
		(name, provider, settings, min_gap_ms, skew_ms, retire_checks, retire_spacing_ms, created_at, updated_at, revision)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9)`,
		nl.Name, nl.Provider, string(settings), nl.MinGap.Std().Milliseconds(), nl.Skew.Std().Milliseconds(),
		nl.Retirement.Checks, nl.Retirement.Spacing.Std().Milliseconds(), now, s.db.IDs.New())
	if IsUniqueViolation(err) {
		return outbox.Lane{}, fmt.Errorf("lane %q already exists: %w", nl.Name, tidemark.ErrConflict)
	}
	if err != nil {
		return outbox.Lane{}, fmt.Errorf("add lane %q: %w", nl.Name, err)
	}
	if err := keepLaneSecrets(ctx, tx, nl.Name, nl.Secrets); err != nil {
		return outbox.Lane{}, err
	}
	if err := s.audit(ctx, tx, nl.Name, outbox.ActionLaneAdd, nl.Actor, "provider "+nl.Provider); err != nil {
		return outbox.Lane{}, err
	}
	if err := tx.Commit(); err != nil {
		return outbox.Lane{}, err
	}
	return s.LaneDetail(ctx, nl.Name)
}

// LaneSecrets reads the secrets kept apart from a lane's shown settings.
// Only the code that builds the lane's provider calls it; nothing shows
// what it returns.
func (s *OutboxStore) LaneSecrets(ctx context.Context, name string) (map[string]string, error) {
	return laneSecrets(ctx, s.db.db, name, "")
}

// laneSecrets reads the secrets kept apart for lane name through q, with
// lock appended to the read (a dialect's row lock, or nothing).
func laneSecrets(ctx context.Context, q querier, name, lock string) (map[string]string, error) {
	out := map[string]string{}
	var raw string
	err := q.QueryRowContext(ctx, `SELECT settings FROM outbox_lane_secrets WHERE lane = $1`+lock, name).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err == nil {
		err = json.Unmarshal([]byte(raw), &out)
	}
	if err != nil {
		return nil, fmt.Errorf("lane %s: secrets: %w", name, err)
	}
	return out, nil
}

// keepLaneSecrets makes secrets the ones kept apart for lane name, in tx.
func keepLaneSecrets(ctx context.Context, tx *sql.Tx, name string, secrets map[string]string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM outbox_lane_secrets WHERE lane = $1`, name)
	if err == nil && len(secrets) > 0 {
		var b []byte
		if b, err = json.Marshal(secrets); err == nil {
			_, err = tx.ExecContext(ctx, `INSERT INTO outbox_lane_secrets (lane, settings) VALUES ($1, $2)`, name, string(b))
		}
	}
	if err != nil {
		return fmt.Errorf("lane %s: secrets: %w", name, err)
	}
	return nil
}

// SealLaneSecrets moves the secrets of lanes stored before secrets were
// kept apart (or by a caller that did not split them) out of their shown
// settings: split divides a lane's settings by its provider kind. Each lane
// moves in one transaction, on the condition that its settings did not
// change meanwhile; nothing is lost, and a lane with nothing to hide is
// not written. It returns how many lanes it sealed.
func (s *OutboxStore) SealLaneSecrets(ctx context.Context, split func(kind string, settings map[string]string) (shown, secret map[string]string)) (int, error) {
	type row struct{ name, kind, settings string }
	rows, err := queryAll(ctx, s.db.db, func(sc scanner) (r row, err error) {
		return r, sc.Scan(&r.name, &r.kind, &r.settings)
	}, `SELECT name, provider, settings FROM outbox_lanes ORDER BY name`)
	if err != nil {
		return 0, err
	}
	sealed := 0
	for _, r := range rows {
		var settings map[string]string
		if err := json.Unmarshal([]byte(r.settings), &settings); err != nil {
			return sealed, fmt.Errorf("lane %s: settings: %w", r.name, err)
		}
		shown, secret := split(r.kind, settings)
		if len(secret) == 0 {
			continue
		}
		if err := s.sealLane(ctx, r.name, r.settings, shown, secret); err != nil {
			return sealed, err
		}
		sealed++
	}
	return sealed, nil
}

func (s *OutboxStore) sealLane(ctx context.Context, name, was string, shown, secret map[string]string) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	kept, err := laneSecrets(ctx, tx, name, s.db.Dialect.LockRow)
	if err != nil {
		return err
	}
	maps.Copy(kept, secret)
	shownJSON, err := json.Marshal(shown)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE outbox_lanes SET settings = $2, updated_at = $4 WHERE name = $1 AND settings = $3`,
		name, string(shownJSON), was, ms(s.db.Clock.Now()))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("%w: rows affected: %v", tidemark.ErrUnconfirmed, err)
	} else if n == 0 {
		// Another process sealed the lane first (every process does this
		// at open); its secrets are already apart.
		return nil
	}
	if err := keepLaneSecrets(ctx, tx, name, kept); err != nil {
		return err
	}
	return tx.Commit()
}

const laneColumns = `name, provider, settings, min_gap_ms, skew_ms, retire_checks, retire_spacing_ms,
	lease_token, lease_holder, lease_expires_at, next_send_at, last_send_at, needs_reconcile, read_refusal,
	reconciled_at, unmatched_own_writes, duplicate_own_writes, stray_remote_ids,
	failing_since, failed_at, failures, last_failure`

func scanLane(sc scanner) (outbox.Lane, error) {
	var (
		l                        outbox.Lane
		settings                 string
		gap, skew, spacing, next int64
		holder                   sql.NullString
		expires, last            sql.NullInt64
		needs                    int
		reconciled               sql.NullInt64
		rec                      outbox.LastReconciliation
		strays                   string
		failingSince, failedAt   sql.NullInt64
		failure                  outbox.LaneFailure
	)
	if err := sc.Scan(&l.Name, &l.Provider, &settings, &gap, &skew, &l.Retirement.Checks, &spacing,
		&l.LeaseToken, &holder, &expires, &next, &last, &needs, &l.ReadRefusal,
		&reconciled, &rec.UnmatchedOwnWrites, &rec.DuplicateOwnWrites, &strays,
		&failingSince, &failedAt, &failure.Failures, &failure.Last); err != nil {
		return l, err
	}
	if failingSince.Valid {
		failure.Since, failure.At = fromMS(failingSince.Int64), fromMS(failedAt.Int64)
		l.Failing = &failure
	}
	if reconciled.Valid {
		rec.At, rec.RemoteIDs = fromMS(reconciled.Int64), strings.Fields(strays)
		if rec.RemoteIDs == nil {
			rec.RemoteIDs = []string{}
		}
		l.LastReconciliation = &rec
	}
	if err := json.Unmarshal([]byte(settings), &l.Settings); err != nil {
		return l, fmt.Errorf("lane %s: settings: %w", l.Name, err)
	}
	l.MinGap = tidemark.Duration(time.Duration(gap) * time.Millisecond)
	l.Skew = tidemark.Duration(time.Duration(skew) * time.Millisecond)
	l.Retirement.Spacing = tidemark.Duration(time.Duration(spacing) * time.Millisecond)
	l.LeaseHolder = holder.String
	l.LeaseExpiresAt = fromNullMS(expires)
	if next != 0 { // 0: the lane has never sent
		l.NextSendAt = new(fromMS(next))
	}
	l.LastSendAt = fromNullMS(last)
	l.NeedsReconcile = needs != 0
	return l, nil
}

// maxLaneFailureText bounds the error a lane keeps of its latest failed
// step.
const maxLaneFailureText = 1000

// RecordLaneFailure records a delivery step of lane that failed at at with
// failure: the first of a run starts it, and each adds to it
// (outbox.Lane.Failing) and to the lane's failed steps over its life
// (outbox.LaneStats.FailedSteps).
func (s *OutboxStore) RecordLaneFailure(ctx context.Context, lane string, at time.Time, failure string) error {
	if len(failure) > maxLaneFailureText {
		failure = failure[:maxLaneFailureText] + "…"
	}
	err := exec1(ctx, s.db.w, fmt.Errorf("lane %q: %w", lane, tidemark.ErrNotFound),
		`UPDATE outbox_lanes SET failing_since = COALESCE(failing_since, $2), failed_at = $2, failures = failures + 1, last_failure = $3,
		failed_steps = failed_steps + 1
		WHERE name = $1`, lane, ms(at), failure)
	return err
}

// Undecided implements outbox.Store.
func (s *OutboxStore) Undecided(ctx context.Context, lane string) (sending, unresolved int, err error) {
	err = s.db.db.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(CASE WHEN state = 'sending' THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN state = 'unresolved' THEN 1 ELSE 0 END), 0)
		FROM outbox_intents WHERE lane = $1 AND state IN ('sending', 'unresolved')`, lane).Scan(&sending, &unresolved)
	return sending, unresolved, err
}

// ClearLaneFailure ends lane's run of failed delivery steps: one went
// through. A lane not failing is left as it is.
func (s *OutboxStore) ClearLaneFailure(ctx context.Context, lane string) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE outbox_lanes SET failing_since = NULL, failed_at = NULL, failures = 0, last_failure = ''
		WHERE name = $1 AND failing_since IS NOT NULL`, lane)
	return err
}

// Lane implements outbox.Store: the lane with its counts by state and the
// intent in flight.
// Lane reads a lane's settings, writer and gate: what a deliverer needs
// before every send, so it counts nothing (LaneDetail does).
func (s *OutboxStore) Lane(ctx context.Context, name string) (outbox.Lane, error) {
	l, err := scanLane(s.db.db.QueryRowContext(ctx, `SELECT `+laneColumns+` FROM outbox_lanes WHERE name = $1`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("lane %q: %w", name, tidemark.ErrNotFound)
	}
	return l, err
}

// LaneDetail is Lane with the lane's intents counted by state and its
// write in flight, for people.
func (s *OutboxStore) LaneDetail(ctx context.Context, name string) (outbox.Lane, error) {
	l, err := s.Lane(ctx, name)
	if err != nil {
		return l, err
	}
	return l, s.laneDetail(ctx, &l)
}

func (s *OutboxStore) laneDetail(ctx context.Context, l *outbox.Lane) error {
	type stateCount struct {
		state string
		n     int
	}
	counts, err := queryAll(ctx, s.db.db, func(sc scanner) (c stateCount, err error) {
		return c, sc.Scan(&c.state, &c.n)
	}, `SELECT state, COUNT(*) FROM outbox_intents WHERE lane = $1 GROUP BY state`, l.Name)
	if err != nil {
		return err
	}
	// The lease's state, by the rule a source's claim is read by.
	l.ClaimState = s.db.liveness.ClaimState(tidemark.Source{ClaimHolder: l.LeaseHolder, LeaseExpiresAt: l.LeaseExpiresAt}, s.db.Clock.Now())
	l.Counts = make(map[outbox.State]int, len(counts))
	for _, c := range counts {
		l.Counts[outbox.State(c.state)] = c.n
	}
	err = s.db.db.QueryRowContext(ctx, `SELECT intent_id FROM outbox_attempts WHERE lane = $1 AND finished_at IS NULL`, l.Name).Scan(&l.InFlight)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	if err != nil {
		return err
	}
	l.Refusal, err = s.refusalOf(ctx, l.Name)
	return err
}

// refusalQuery finds the latest refusal that still stands on a lane: a
// pending intent whose latest attempt the provider refused (its refused
// check is no older than that attempt). A write that lands, an attempt
// answered otherwise, or the intent retired ends it.
const refusalQuery = `SELECT c.evidence FROM outbox_checks c JOIN outbox_intents i ON i.id = c.intent_id
	WHERE i.lane = $1 AND i.state = 'pending' AND c.verdict = $2 AND c.checked_at >= COALESCE(i.last_attempt_at, 0)
	ORDER BY c.checked_at DESC, c.id DESC LIMIT 1`

// refusalOf is why the provider refuses the lane's writes ("" when it
// does not).
func (s *OutboxStore) refusalOf(ctx context.Context, lane string) (string, error) {
	var ev string
	err := s.db.db.QueryRowContext(ctx, refusalQuery, lane, outbox.VerdictRefused).Scan(&ev)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return ev, err
}

// LaneNames lists the lanes' names: what the delivery loop looks up every
// round, so it counts nothing.
func (s *OutboxStore) LaneNames(ctx context.Context) ([]string, error) {
	return queryAll(ctx, s.db.db, scanString, `SELECT name FROM outbox_lanes ORDER BY name`)
}

// Lanes returns every lane, by name, with its intents counted by state.
func (s *OutboxStore) Lanes(ctx context.Context) ([]outbox.Lane, error) {
	out, err := queryAll(ctx, s.db.db, scanLane, `SELECT `+laneColumns+` FROM outbox_lanes ORDER BY name`)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if err := s.laneDetail(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AddChannel configures a source (by id or name) to draft an intent on
// lane for target (and parent) each time one of its pages is published.
// It is audited as done by no one in particular; see AddChannelAs.
func (s *OutboxStore) AddChannel(ctx context.Context, sourceRef, lane, target, parent string) (outbox.Channel, error) {
	return s.AddChannelAs(ctx, "", sourceRef, lane, target, parent)
}

// AddChannelAs is AddChannel, audited as done by actor in the same
// transaction: a channel that cannot be audited is not added.
func (s *OutboxStore) AddChannelAs(ctx context.Context, actor, sourceRef, lane, target, parent string) (outbox.Channel, error) {
	if strings.TrimSpace(target) == "" {
		return outbox.Channel{}, tidemark.Invalidf("target", target, "required")
	}
	var c outbox.Channel
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return c, err
	}
	defer tx.Rollback()
	err = tx.QueryRowContext(ctx, `SELECT id, name FROM sources WHERE id = $1 OR name = $1`, sourceRef).Scan(&c.SourceID, &c.Source)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("source %q: %w", sourceRef, tidemark.ErrNotFound)
	}
	if err != nil {
		return c, err
	}
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM outbox_lanes WHERE name = $1`, lane).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("lane %q: %w", lane, tidemark.ErrNotFound)
	}
	if err != nil {
		return c, err
	}
	c.ID, c.Lane, c.Target, c.Parent, c.CreatedAt = s.db.IDs.New(), lane, target, parent, s.db.Clock.Now().UTC().Truncate(time.Millisecond)
	_, err = tx.ExecContext(ctx, `INSERT INTO outbox_channels (id, source_id, lane, target, parent, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, c.ID, c.SourceID, lane, target, parent, ms(c.CreatedAt))
	if IsUniqueViolation(err) {
		return c, fmt.Errorf("source %s already delivers to %s on lane %s: %w", c.Source, target, lane, tidemark.ErrConflict)
	}
	if err != nil {
		return c, err
	}
	if err := s.audit(ctx, tx, c.Lane, outbox.ActionChannelAdd, actor, channelDetail(c)); err != nil {
		return c, err
	}
	return c, tx.Commit()
}

// Channels returns every channel.
func (s *OutboxStore) Channels(ctx context.Context) ([]outbox.Channel, error) {
	return queryAll(ctx, s.db.db, func(sc scanner) (c outbox.Channel, err error) {
		var at int64
		err = sc.Scan(&c.ID, &c.SourceID, &c.Source, &c.Lane, &c.Target, &c.Parent, &c.Template, &at)
		c.CreatedAt = fromMS(at)
		return c, err
	}, `SELECT c.id, c.source_id, s.name, c.lane, c.target, c.parent, c.template, c.created_at
		FROM outbox_channels c JOIN sources s ON s.id = c.source_id ORDER BY s.name, c.lane, c.target, c.parent`)
}

// ChannelPreview is what a channel's preview is rendered from: its lane's
// provider kind, its template, and a message: the published page of its
// source's latest change, the first its wiki page lists (by when the change
// happened, not when its page was last written: publishing relinks and
// resummarizes older pages), or a sample when the source has none yet.
type ChannelPreview struct {
	Channel outbox.Channel
	Kind    string
	Message outbox.Message
	// Sample: the source has no published page; Message is made up.
	Sample bool
}

// ChannelPreview reads what outbox.Preview needs to show what a channel
// would send (`outbox channel test`): render it with
// outbox.Preview(cp.Kind, template or cp.Channel.Template, cp.Message).
// The message's Link is left to the caller, which knows the wiki's URL.
func (s *OutboxStore) ChannelPreview(ctx context.Context, channelID string) (ChannelPreview, error) {
	var cp ChannelPreview
	cs, err := s.Channels(ctx)
	if err != nil {
		return cp, err
	}
	found := false
	for _, c := range cs {
		if c.ID == channelID {
			cp.Channel, found = c, true
		}
	}
	if !found {
		return cp, fmt.Errorf("channel %q: %w", channelID, tidemark.ErrNotFound)
	}
	l, err := s.Lane(ctx, cp.Channel.Lane)
	if err != nil {
		return cp, err
	}
	cp.Kind = l.Provider
	cp.Message = outbox.Message{Source: cp.Channel.Source}
	err = s.db.db.QueryRowContext(ctx, `SELECT e.title, su.text, p.id
		FROM pages p JOIN summaries su ON su.id = p.published_summary_id JOIN events e ON e.id = p.event_id
		WHERE p.source_id = $1 AND p.published_at IS NOT NULL
		ORDER BY e.occurred_at DESC, p.id DESC LIMIT 1`, cp.Channel.SourceID).Scan(&cp.Message.Title, &cp.Message.Summary, &cp.Message.Page)
	if errors.Is(err, sql.ErrNoRows) {
		cp.Sample = true
		cp.Message.Title, cp.Message.Summary, cp.Message.Page = "An example change", "What changed, as its summary says it.", "example-page"
		return cp, nil
	}
	return cp, err
}

// Draft implements outbox.Store.
func (s *OutboxStore) Draft(ctx context.Context, d outbox.Draft) (outbox.Intent, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return outbox.Intent{}, err
	}
	defer tx.Rollback()
	in, err := s.draft(ctx, tx, d)
	if err != nil {
		return in, err
	}
	return in, tx.Commit()
}

// PublishHook returns the hook the publish pipeline runs inside the
// transaction that marks a page published: it drafts one intent per
// channel of the page's source, so a published page always has its intents
// and an unpublished one never does. A channel announces what is published
// since it was added: a summary first published before it (a page
// republished because its neighbours or its style changed) drafts nothing
// for it. Publishing the same summary again
// drafts nothing new; a draft whose remote identity another intent already
// has is kept in collision, never an error that rolls the mark back.
func (s *OutboxStore) PublishHook() MarkHook {
	return func(ctx context.Context, tx *sql.Tx, p tidemark.Publication) error {
		drafts, err := queryAll(ctx, tx, func(sc scanner) (outbox.Draft, error) {
			d := outbox.Draft{SourceID: p.SourceID, PageID: p.PageID, SummaryID: p.SummaryID}
			var kind, template, source string
			if err := sc.Scan(&d.ChannelID, &d.Lane, &d.Target, &d.Parent, &template, &kind, &source); err != nil {
				return d, err
			}
			// A template that fails on this page drafts PublicationBody:
			// the page is published whatever its notification says.
			d.Body, _ = outbox.ChannelBody(kind, template, p, source)
			return d, nil
		}, `SELECT c.id, c.lane, c.target, c.parent, c.template, l.provider, s.name
			FROM outbox_channels c JOIN outbox_lanes l ON l.name = c.lane JOIN sources s ON s.id = c.source_id
			WHERE c.source_id = $1
			  AND c.created_at <= COALESCE((SELECT published_at FROM summaries WHERE id = $2), c.created_at)
			ORDER BY c.created_at, c.id`, p.SourceID, p.SummaryID)
		if err != nil {
			return fmt.Errorf("outbox: channels of source %s: %w", p.SourceID, err)
		}
		for _, d := range drafts {
			if _, err := s.draft(ctx, tx, d); err != nil {
				return fmt.Errorf("outbox: draft for page %s on lane %s: %w", p.PageID, d.Lane, err)
			}
		}
		return nil
	}
}

// draft inserts an intent at the end of its lane, unless its origin (the
// channel, page and summary that drafted it) already has one, which it
// returns. A draft whose remote identity (target, parent, body) an earlier
// intent has is: for a draft made by hand, refused (tidemark.ErrConflict);
// for the same page, the earlier intent; for another page, a new intent in
// StateCollision, never sent, with its own idempotency key.
func (s *OutboxStore) draft(ctx context.Context, tx *sql.Tx, d outbox.Draft) (outbox.Intent, error) {
	if d.Body == "" {
		return outbox.Intent{}, tidemark.Invalidf("body", "", "an intent needs a body")
	}
	id := outbox.NewIdentity(d.Target, d.Parent, []byte(d.Body))
	if err := id.Validate(); err != nil {
		return outbox.Intent{}, err
	}
	var kind string
	err := tx.QueryRowContext(ctx, `SELECT provider FROM outbox_lanes WHERE name = $1`, d.Lane).Scan(&kind)
	if errors.Is(err, sql.ErrNoRows) {
		return outbox.Intent{}, fmt.Errorf("lane %q: %w", d.Lane, tidemark.ErrNotFound)
	}
	if err != nil {
		return outbox.Intent{}, err
	}
	// The identity drafting compares is what the lane's provider can tell
	// apart: an intent drafted before match_sha256 is matched on its body.
	match := outbox.MatchSHA256(kind, []byte(d.Body))
	origin := d.ChannelID != "" && d.PageID != "" && d.SummaryID != ""
	if origin {
		in, err := s.intentBy(ctx, tx, `channel_id = $1 AND page_id = $2 AND summary_id = $3`, d.ChannelID, d.PageID, d.SummaryID)
		if err == nil || !errors.Is(err, tidemark.ErrNotFound) {
			return in, err
		}
	}
	if d.PageID != "" {
		// The page's summary came back to a text it already drafted (or
		// the intent was drafted before origins were recorded).
		in, err := s.intentBy(ctx, tx, `lane = $1 AND target = $2 AND parent = $3 AND page_id = $6 AND `+sameMatch+` ORDER BY rank LIMIT 1`,
			d.Lane, d.Target, d.Parent, match, id.BodySHA256, d.PageID)
		if err == nil || !errors.Is(err, tidemark.ErrNotFound) {
			return in, err
		}
	}
	state, reason, key := outbox.StatePending, "", outbox.IdempotencyKey(d.Lane, id)
	twin, err := s.intentBy(ctx, tx, `lane = $1 AND target = $2 AND parent = $3 AND `+sameMatch+` ORDER BY rank LIMIT 1`,
		d.Lane, d.Target, d.Parent, match, id.BodySHA256)
	switch {
	case errors.Is(err, tidemark.ErrNotFound):
	case err != nil:
		return outbox.Intent{}, err
	case d.PageID == "":
		return outbox.Intent{}, fmt.Errorf("intent %s on lane %s already has this identity (target %q, parent %q, body %s…%s): %w",
			twin.ID, d.Lane, d.Target, d.Parent, id.BodySHA256[:12], sameAs(twin, id), tidemark.ErrConflict)
	default:
		state, key = outbox.StateCollision, outbox.CollisionKey(d.Lane, id, d.ChannelID, d.PageID, d.SummaryID)
		reason = fmt.Sprintf("same target, parent and body%s as intent %s%s; not sent: retire one of the two, or retire %s and revive this one",
			sameAs(twin, id), twin.ID, pageNote(twin.PageID), twin.ID)
	}
	var rank int64
	err = tx.QueryRowContext(ctx, `UPDATE outbox_lanes SET next_rank = next_rank + 1 WHERE name = $1 RETURNING next_rank`, d.Lane).Scan(&rank)
	if errors.Is(err, sql.ErrNoRows) {
		return outbox.Intent{}, fmt.Errorf("lane %q: %w", d.Lane, tidemark.ErrNotFound)
	}
	if err != nil {
		return outbox.Intent{}, err
	}
	now := ms(s.db.Clock.Now())
	intentID := s.db.IDs.New()
	if _, err := tx.ExecContext(ctx, `INSERT INTO outbox_intents
		(id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, state_reason, source_id, page_id, channel_id, summary_id, created_at, updated_at, match_sha256)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16)`,
		intentID, d.Lane, rank, d.Target, d.Parent, d.Body, id.BodySHA256, key, string(state), reason,
		nullString(d.SourceID), nullString(d.PageID), nullString(d.ChannelID), nullString(d.SummaryID), now, match); err != nil {
		return outbox.Intent{}, fmt.Errorf("draft intent: %w", err)
	}
	return s.intent(ctx, tx, intentID)
}

// fillBatch is how many intents FillMatches fills in one transaction.
const fillBatch = 500

// FillMatches gives the intents drafted before match_sha256 was kept what
// their lane's provider tells bodies apart by (outbox.MatchSHA256), a batch
// at a time, and returns how many it filled. Until then drafting matches
// them on their body's SHA-256. Run at open (pipeline.Open), as
// SealLaneSecrets is; a second run finds nothing to do.
func (s *OutboxStore) FillMatches(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := s.fillMatches(ctx)
		total += n
		if err != nil || n < fillBatch {
			return total, err
		}
	}
}

func (s *OutboxStore) fillMatches(ctx context.Context) (int, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	type row struct{ id, body, kind string }
	rows, err := queryAll(ctx, tx, func(sc scanner) (r row, err error) {
		return r, sc.Scan(&r.id, &r.body, &r.kind)
	}, `SELECT i.id, i.body, l.provider FROM outbox_intents i JOIN outbox_lanes l ON l.name = i.lane
		WHERE i.match_sha256 IS NULL ORDER BY i.id LIMIT $1`, fillBatch)
	if err != nil {
		return 0, err
	}
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, `UPDATE outbox_intents SET match_sha256 = $2 WHERE id = $1 AND match_sha256 IS NULL`,
			r.id, outbox.MatchSHA256(r.kind, []byte(r.body))); err != nil {
			return 0, err
		}
	}
	return len(rows), tx.Commit()
}

// sameMatch finds an intent whose body the lane's provider cannot tell
// from the draft's ($4, its match_sha256; $5, its body's SHA-256, for an
// intent drafted before match_sha256 was kept).
const sameMatch = `(match_sha256 = $4 OR match_sha256 IS NULL AND body_sha256 = $5)`

// sameAs says, when the twin's body is not the same text, that the
// provider cannot tell the two apart.
func sameAs(twin outbox.Intent, id outbox.Identity) string {
	if twin.BodySHA256 == id.BodySHA256 {
		return ""
	}
	return " as the provider compares them (white space, escapes)"
}

func pageNote(pageID string) string {
	if pageID == "" {
		return " (drafted by hand)"
	}
	return " (page " + pageID + ")"
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

const intentColumns = `id, lane, rank, target, parent, body, body_sha256, idempotency_key, state, state_reason,
	remote_id, source_id, page_id, channel_id, summary_id, attempts, last_attempt_at, landed_at, created_at, updated_at, attempt_until,
	first_attempt_at, key_scope`

func scanIntent(sc scanner) (outbox.Intent, error) {
	var (
		in               outbox.Intent
		state            string
		src, page        sql.NullString
		channel, summary sql.NullString
		lastAt, landed   sql.NullInt64
		until, firstAt   sql.NullInt64
		scope            sql.NullString
		created, updated int64
	)
	err := sc.Scan(&in.ID, &in.Lane, &in.Rank, &in.Target, &in.Parent, &in.Body, &in.BodySHA256, &in.IdempotencyKey,
		&state, &in.StateReason, &in.RemoteID, &src, &page, &channel, &summary, &in.Attempts, &lastAt, &landed, &created, &updated, &until, &firstAt, &scope)
	in.AttemptUntil, in.FirstAttemptAt = fromNullMS(until), fromNullMS(firstAt)
	if scope.Valid {
		in.KeyScope = &scope.String
	}
	in.State = outbox.State(state)
	in.SourceID, in.PageID, in.ChannelID, in.SummaryID = src.String, page.String, channel.String, summary.String
	in.LastAttemptAt, in.LandedAt = fromNullMS(lastAt), fromNullMS(landed)
	in.CreatedAt, in.UpdatedAt = fromMS(created), fromMS(updated)
	return in, err
}

func (s *OutboxStore) intent(ctx context.Context, q querier, id string) (outbox.Intent, error) {
	return s.intentBy(ctx, q, `id = $1`, id)
}

func (s *OutboxStore) intentBy(ctx context.Context, q querier, where string, args ...any) (outbox.Intent, error) {
	in, err := scanIntent(q.QueryRowContext(ctx, `SELECT `+intentColumns+` FROM outbox_intents WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return in, fmt.Errorf("intent: %w", tidemark.ErrNotFound)
	}
	return in, err
}

// Intent returns one intent.
func (s *OutboxStore) Intent(ctx context.Context, id string) (outbox.Intent, error) {
	in, err := s.intent(ctx, s.db.db, id)
	if errors.Is(err, tidemark.ErrNotFound) {
		return in, fmt.Errorf("intent %q: %w", id, tidemark.ErrNotFound)
	}
	return in, err
}

// ListIntents lists intents by lane and rank.
func (s *OutboxStore) ListIntents(ctx context.Context, f outbox.IntentFilter) ([]outbox.Intent, error) {
	q := `SELECT ` + intentColumns + ` FROM outbox_intents WHERE ($1 = '' OR lane = $1) AND ($2 = '' OR state = $2)
		AND ($3 = '' OR lane > $3 OR (lane = $3 AND rank > $4)) ORDER BY lane, rank`
	q += fmt.Sprintf(" LIMIT %d", f.Bounded())
	return queryAll(ctx, s.db.db, scanIntent, q, f.Lane, string(f.State), f.AfterLane, f.AfterRank)
}

// Acquire implements outbox.Store.
func (s *OutboxStore) Acquire(ctx context.Context, lane, holder string, ttl time.Duration) (outbox.Lease, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return outbox.Lease{}, err
	}
	defer tx.Rollback()
	var (
		token   int64
		cur     sql.NullString
		expires sql.NullInt64
	)
	err = tx.QueryRowContext(ctx, `SELECT lease_token, lease_holder, lease_expires_at FROM outbox_lanes WHERE name = $1`+s.db.Dialect.LockRow, lane).
		Scan(&token, &cur, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return outbox.Lease{}, fmt.Errorf("lane %q: %w", lane, tidemark.ErrNotFound)
	}
	if err != nil {
		return outbox.Lease{}, err
	}
	now := s.db.Clock.Now()
	// A lease runs until it expires, or until its holder is known gone (a
	// process of this host that is no longer running): an attempt it left
	// open is then in doubt for the next writer, as after an expiry.
	if cur.Valid && cur.String != holder && s.db.liveness.Stands(cur.String, fromMS(expires.Int64), now) {
		return outbox.Lease{}, outbox.OfLane(lane, &outbox.LeaseHeldError{Lane: lane, Holder: cur.String,
			Until: fromMS(expires.Int64), Running: s.db.liveness.Running(cur.String)})
	}
	l := outbox.Lease{Lane: lane, Holder: holder, Token: token + 1, ExpiresAt: now.Add(ttl)}
	if err := exec1(ctx, tx, fmt.Errorf("lane %s: lease taken meanwhile: %w", lane, tidemark.ErrClaimHeld),
		`UPDATE outbox_lanes SET lease_token = $2, lease_holder = $3, lease_expires_at = $4, updated_at = $5
		WHERE name = $1 AND lease_token = $6`, lane, l.Token, holder, ms(l.ExpiresAt), ms(now), token); err != nil {
		return outbox.Lease{}, err
	}
	return l, tx.Commit()
}

func staleLease(l outbox.Lease) error {
	return fmt.Errorf("lane %s: lease token %d of %s is no longer current: %w", l.Lane, l.Token, l.Holder, tidemark.ErrStaleClaim)
}

// Renew implements outbox.Store.
func (s *OutboxStore) Renew(ctx context.Context, l outbox.Lease, ttl time.Duration) (outbox.Lease, error) {
	now := s.db.Clock.Now()
	exp := now.Add(ttl)
	err := exec1(ctx, s.db.w, staleLease(l), `UPDATE outbox_lanes SET lease_expires_at = $4, updated_at = $5
		WHERE name = $1 AND lease_token = $2 AND lease_holder = $3 AND lease_expires_at > $5`,
		l.Lane, l.Token, l.Holder, ms(exp), ms(now))
	if err != nil {
		return l, err
	}
	l.ExpiresAt = exp
	return l, nil
}

// Release implements outbox.Store. Releasing a lease already lost is not
// an error: there is nothing left to give up.
func (s *OutboxStore) Release(ctx context.Context, l outbox.Lease) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE outbox_lanes SET lease_holder = NULL, lease_expires_at = NULL, updated_at = $4
		WHERE name = $1 AND lease_token = $2 AND lease_holder = $3`, l.Lane, l.Token, l.Holder, ms(s.db.Clock.Now()))
	return err
}

// CheckLease implements outbox.Store.
func (s *OutboxStore) CheckLease(ctx context.Context, l outbox.Lease) error {
	var n int
	err := s.db.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_lanes
		WHERE name = $1 AND lease_token = $2 AND lease_holder = $3 AND lease_expires_at > $4`,
		l.Lane, l.Token, l.Holder, ms(s.db.Clock.Now())).Scan(&n)
	if err != nil {
		return err
	}
	if n != 1 {
		return staleLease(l)
	}
	return nil
}

// fence makes a transaction conditional on the lease: it touches the lane
// row only if the token is current and unexpired (locking the row on
// PostgreSQL until commit), else ErrStaleClaim.
func (s *OutboxStore) fence(ctx context.Context, tx *sql.Tx, l outbox.Lease) error {
	now := ms(s.db.Clock.Now())
	return exec1(ctx, tx, staleLease(l), `UPDATE outbox_lanes SET updated_at = $4
		WHERE name = $1 AND lease_token = $2 AND lease_holder = $3 AND lease_expires_at > $4`,
		l.Lane, l.Token, l.Holder, now)
}

// NextPending implements outbox.Store.
func (s *OutboxStore) NextPending(ctx context.Context, l outbox.Lease) (outbox.Intent, bool, error) {
	in, err := s.intentBy(ctx, s.db.db, `lane = $1 AND state = 'pending' ORDER BY rank LIMIT 1`, l.Lane)
	if errors.Is(err, tidemark.ErrNotFound) {
		return in, false, nil
	}
	return in, err == nil, err
}

// InDoubt implements outbox.Store.
func (s *OutboxStore) InDoubt(ctx context.Context, l outbox.Lease) (bool, error) {
	var (
		needs, open, waiting int
		recheck              sql.NullInt64
	)
	err := s.db.db.QueryRowContext(ctx, `SELECT needs_reconcile, recheck_at,
		(SELECT COUNT(*) FROM outbox_attempts WHERE lane = $1 AND finished_at IS NULL),
		(SELECT COUNT(*) FROM outbox_intents WHERE lane = $1 AND state IN ('sending', 'unresolved', 'unexecutable'))
		FROM outbox_lanes WHERE name = $1`, l.Lane).Scan(&needs, &recheck, &open, &waiting)
	if err != nil {
		return false, err
	}
	due := !recheck.Valid || recheck.Int64 <= ms(s.db.Clock.Now())
	return needs != 0 || open > 0 || waiting > 0 && due, nil
}

// Begin implements outbox.Store: the write-ahead journal. The attempt row
// commits before the provider is called.
func (s *OutboxStore) Begin(ctx context.Context, l outbox.Lease, na outbox.NewAttempt) (outbox.Attempt, error) {
	intentID, countBefore, bound := na.IntentID, na.CountBefore, na.Bound
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return outbox.Attempt{}, err
	}
	defer tx.Rollback()
	if err := s.fence(ctx, tx, l); err != nil {
		return outbox.Attempt{}, err
	}
	now := s.db.Clock.Now()
	var next int64
	if err := tx.QueryRowContext(ctx, `SELECT next_send_at FROM outbox_lanes WHERE name = $1`, l.Lane).Scan(&next); err != nil {
		return outbox.Attempt{}, err
	}
	if ms(now) < next {
		return outbox.Attempt{}, &outbox.GateClosedError{Until: fromMS(next)}
	}
	why, err := s.withdrawnOrigin(ctx, tx, l.Lane, intentID)
	if err != nil {
		return outbox.Attempt{}, err
	}
	if why != "" {
		if err := s.transition(ctx, tx, outbox.Move{Intent: intentID, Op: outbox.OpRetire}, "tidemark", why); err != nil {
			return outbox.Attempt{}, err
		}
		if err := tx.Commit(); err != nil {
			return outbox.Attempt{}, err
		}
		return outbox.Attempt{}, fmt.Errorf("intent %s retired, not sent: %s: %w", intentID, why, tidemark.ErrConflict)
	}
	var key string
	// The key's scope stays the first attempt's while every attempt is
	// sent in it, and is '' (no scope the key can be trusted in) once one
	// is not. A SET reads the row as it was: attempts before this one.
	if err := tx.QueryRowContext(ctx, `UPDATE outbox_intents SET state = 'sending', attempts = attempts + 1, last_attempt_at = $3, updated_at = $3,
		attempt_until = $4, first_attempt_at = COALESCE(first_attempt_at, $3),
		key_scope = CASE WHEN attempts = 0 OR key_scope = $5 THEN $5 ELSE '' END
		WHERE id = $1 AND lane = $2 AND state = 'pending' RETURNING idempotency_key`, intentID, l.Lane, ms(now), ms(now.Add(bound)), na.KeyScope).Scan(&key); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return outbox.Attempt{}, fmt.Errorf("intent %s is not pending on lane %s: %w", intentID, l.Lane, tidemark.ErrConflict)
		}
		return outbox.Attempt{}, err
	}
	a := outbox.Attempt{ID: s.db.IDs.New(), IntentID: intentID, Lane: l.Lane, Token: l.Token, StartedAt: now, Until: now.Add(bound), CountBefore: countBefore}
	_, err = tx.ExecContext(ctx, `INSERT INTO outbox_attempts (id, intent_id, lane, token, holder, idempotency_key, started_at, count_before)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, a.ID, intentID, l.Lane, l.Token, l.Holder, key, ms(now), nullInt(countBefore))
	if IsUniqueViolation(err) {
		return outbox.Attempt{}, fmt.Errorf("lane %s already has a write in flight: %w", l.Lane, tidemark.ErrConflict)
	}
	if err != nil {
		return outbox.Attempt{}, err
	}
	return a, tx.Commit()
}

// withdrawnOrigin says why a pending intent that a publication drafted
// must not be sent ("" when it may, or when it is not pending): its
// summary was rejected. A rejected summary is never published, and what
// a publication drafted is sent only while it stands: decided here, the
// last moment before the journal. The summary's row is locked, so a
// rejection either committed before (the intent is retired) or waits for
// this journal (the write was decided first). A source's removal and a
// rejection retire their intents themselves (retireOfSource,
// retireOfSummary), and one that comes back after it (a replay of one in
// flight then) is retired here.
func (s *OutboxStore) withdrawnOrigin(ctx context.Context, tx *sql.Tx, lane, intentID string) (string, error) {
	// Not pending: the journal's update says so.
	return s.whyWithdrawn(ctx, tx, `i.id = $1 AND i.lane = $2 AND i.state = 'pending'`, intentID, lane)
}

// whyWithdrawn says why the intent that where (over outbox_intents i)
// selects announces what is withdrawn: its source was removed or its
// summary rejected ("" when neither, or when where selects none).
func (s *OutboxStore) whyWithdrawn(ctx context.Context, tx *sql.Tx, where string, args ...any) (string, error) {
	var summaryID, removed sql.NullString
	// A source's removal outlives it in its audit: an intent of a removed
	// source that comes back (an operator's revive, a replay of one that
	// was in flight at the removal) is never sent either.
	err := tx.QueryRowContext(ctx, `SELECT i.summary_id,
		(SELECT a.source_name FROM source_actions a WHERE a.source_id = i.source_id AND a.action = 'remove' ORDER BY a.at DESC LIMIT 1)
		FROM outbox_intents i WHERE `+where, args...).Scan(&summaryID, &removed)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !summaryID.Valid {
		return "", nil // none, or drafted by hand
	}
	if err != nil {
		return "", err
	}
	if removed.Valid {
		return "its source " + removed.String + " was removed", nil
	}
	var rejected string
	err = tx.QueryRowContext(ctx, `SELECT rejected_reason FROM summaries WHERE id = $1`+s.db.Dialect.LockRow, summaryID.String).Scan(&rejected)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", err
	case rejected != "":
		return rejectedWhy(rejected), nil
	}
	return "", nil
}

// rejectedWhy is why an intent of a rejected summary is retired.
func rejectedWhy(reason string) string { return "its summary was rejected: " + reason }

// retireOfSource retires, in tx, the intents drafted for a source's pages
// that are not sent yet (pending, or kept in collision), with an audit row
// each saying why, and returns how many: the source is being removed, and
// its pages withdrawn, so nothing may announce them any more. Intents in
// flight or sent stay as they are.
func (s *OutboxStore) retireOfSource(ctx context.Context, tx *sql.Tx, sourceID, actor, why string) (int, error) {
	return s.retireUnsent(ctx, tx, "source_id", sourceID, actor, why)
}

// retireOfSummary is retireOfSource for the intents a summary's
// publications drafted: it is being rejected.
func (s *OutboxStore) retireOfSummary(ctx context.Context, tx *sql.Tx, summaryID, actor, why string) (int, error) {
	return s.retireUnsent(ctx, tx, "summary_id", summaryID, actor, why)
}

// retireUnsent retires the pending and colliding intents whose origin
// column (source_id or summary_id) is id.
func (s *OutboxStore) retireUnsent(ctx context.Context, tx *sql.Tx, column, id, actor, why string) (int, error) {
	if column != "source_id" && column != "summary_id" {
		panic("sqlstore: retireUnsent by " + column) // a programming error, never input
	}
	ids, err := queryAll(ctx, tx, scanString, `SELECT id FROM outbox_intents
		WHERE `+column+` = $1 AND state IN ('pending', 'collision') ORDER BY lane, rank`, id)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if err := s.transition(ctx, tx, outbox.Move{Intent: id, Op: outbox.OpRetire}, actor, why); err != nil {
			return 0, fmt.Errorf("retire intent %s: %w", id, err)
		}
	}
	return len(ids), nil
}

func nullInt(p *int64) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *p, Valid: true}
}

// Finish implements outbox.Store.
func (s *OutboxStore) Finish(ctx context.Context, l outbox.Lease, a outbox.Attempt, r outbox.Result) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.fence(ctx, tx, l); err != nil {
		return err
	}
	now := s.db.Clock.Now()
	var sent sql.NullInt64
	if !r.SentAt.IsZero() {
		sent = sql.NullInt64{Int64: ms(r.SentAt), Valid: true}
	}
	// The journal's outcomes are fixed by its schema: a refusal is a write
	// that did not land, and the intent's check says it was refused.
	recorded := r.Outcome
	if recorded == outbox.OutcomeRefused {
		recorded = outbox.OutcomeNotLanded
	}
	if err := exec1(ctx, tx, fmt.Errorf("attempt %s is no longer open for token %d: %w", a.ID, l.Token, tidemark.ErrStaleClaim),
		`UPDATE outbox_attempts SET finished_at = $3, outcome = $4, sent_at = $5, remote_id = $6, count_after = $7, count_verdict = $8, error = $9
		WHERE id = $1 AND token = $2 AND finished_at IS NULL`,
		a.ID, l.Token, ms(now), string(recorded), sent, r.RemoteID, nullInt(r.CountAfter), string(r.CountVerdict), r.Error); err != nil {
		return err
	}
	notSending := fmt.Errorf("intent %s is no longer sending: %w", a.IntentID, tidemark.ErrConflict)
	switch r.Outcome {
	case outbox.OutcomeLanded:
		err = exec1(ctx, tx, notSending, `UPDATE outbox_intents SET state = 'landed', state_reason = $2, remote_id = $3, landed_at = $4, updated_at = $4
			WHERE id = $1 AND state = 'sending'`, a.IntentID, string(r.CountVerdict), r.RemoteID, ms(now))
	case outbox.OutcomeNotLanded, outbox.OutcomeDeferred:
		err = exec1(ctx, tx, notSending, `UPDATE outbox_intents SET state = 'pending', state_reason = $2, updated_at = $3
			WHERE id = $1 AND state = 'sending'`, a.IntentID, r.Error, ms(now))
	case outbox.OutcomeRefused:
		// Pending again, not given up on: the refusal is the lane's. The
		// check is what shows the lane refused while this intent waits
		// (refusalOf).
		err = exec1(ctx, tx, notSending, `UPDATE outbox_intents SET state = 'pending', state_reason = $2, updated_at = $3
			WHERE id = $1 AND state = 'sending'`, a.IntentID, "refused: "+r.Error, ms(now))
		if err == nil {
			err = s.addCheck(ctx, tx, a.IntentID, outbox.Check{At: now, Verdict: outbox.VerdictRefused, Evidence: "the provider refused the write: " + r.Error})
		}
	case outbox.OutcomeUnexecutable:
		err = exec1(ctx, tx, notSending, `UPDATE outbox_intents SET state = 'unexecutable', state_reason = $2, updated_at = $3
			WHERE id = $1 AND state = 'sending'`, a.IntentID, r.Error, ms(now))
		if err == nil {
			err = s.addCheck(ctx, tx, a.IntentID, outbox.Check{At: now, Verdict: "unexecutable", Evidence: "the provider refused the write: " + r.Error})
		}
		if err == nil {
			err = s.scheduleRecheck(ctx, tx, l.Lane, now, nil, false)
		}
	case outbox.OutcomeUnknown:
		err = exec1(ctx, tx, notSending, `UPDATE outbox_intents SET state = 'unresolved', state_reason = $2, updated_at = $3
			WHERE id = $1 AND state = 'sending'`, a.IntentID, r.Error, ms(now))
		if err == nil {
			_, err = tx.ExecContext(ctx, `UPDATE outbox_lanes SET needs_reconcile = 1 WHERE name = $1`, l.Lane)
		}
	default:
		err = fmt.Errorf("outbox: unknown outcome %q", r.Outcome)
	}
	if err != nil {
		return err
	}
	if sent.Valid {
		if err := s.moveGate(ctx, tx, l, a, r, now); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// moveGate records the achieved gap since the lane's previous send and
// sets the next send time: the minimum gap after this send, or later if
// the provider asked (Retry-After).
func (s *OutboxStore) moveGate(ctx context.Context, tx *sql.Tx, l outbox.Lease, a outbox.Attempt, r outbox.Result, now time.Time) error {
	var (
		last sql.NullInt64
		gap  int64
	)
	if err := tx.QueryRowContext(ctx, `SELECT last_send_at, min_gap_ms FROM outbox_lanes WHERE name = $1`, l.Lane).Scan(&last, &gap); err != nil {
		return err
	}
	if last.Valid {
		if _, err := tx.ExecContext(ctx, `INSERT INTO outbox_gaps (attempt_id, lane, sent_at, gap_ms, min_gap_ms) VALUES ($1, $2, $3, $4, $5)`,
			a.ID, l.Lane, ms(r.SentAt), ms(r.SentAt)-last.Int64, gap); err != nil {
			return err
		}
	}
	next := ms(r.SentAt) + gap
	if r.RetryAfter > 0 {
		next = max(next, ms(now.Add(r.RetryAfter)))
	}
	return exec1(ctx, tx, staleLease(l), `UPDATE outbox_lanes SET last_send_at = $3, next_send_at = $4 WHERE name = $1 AND lease_token = $2`,
		l.Lane, l.Token, ms(r.SentAt), next)
}

// Bucket implements outbox.Store.
func (s *OutboxStore) Bucket(ctx context.Context, l outbox.Lease, intentID, reason string, check outbox.Check) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.fence(ctx, tx, l); err != nil {
		return err
	}
	now := s.db.Clock.Now()
	if err := exec1(ctx, tx, fmt.Errorf("intent %s is not pending: %w", intentID, tidemark.ErrConflict),
		`UPDATE outbox_intents SET state = 'unexecutable', state_reason = $3, updated_at = $4 WHERE id = $1 AND lane = $2 AND state = 'pending'`,
		intentID, l.Lane, reason, ms(now)); err != nil {
		return err
	}
	if err := s.addCheck(ctx, tx, intentID, check); err != nil {
		return err
	}
	if err := s.scheduleRecheck(ctx, tx, l.Lane, now, nil, false); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *OutboxStore) addCheck(ctx context.Context, tx *sql.Tx, intentID string, c outbox.Check) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO outbox_checks (id, intent_id, checked_at, verdict, evidence) VALUES ($1, $2, $3, $4, $5)`,
		s.db.IDs.New(), intentID, ms(c.At), c.Verdict, c.Evidence)
	return err
}

// scheduleRecheck sets when the lane's unresolved and unexecutable intents
// are looked at again: the policy's spacing from now, or sooner, when a
// check could decide more then (an attempt that could still land until
// then). Unless replace, an earlier time already set stands.
func (s *OutboxStore) scheduleRecheck(ctx context.Context, tx *sql.Tx, lane string, now time.Time, sooner *time.Time, replace bool) error {
	var spacing int64
	if err := tx.QueryRowContext(ctx, `SELECT retire_spacing_ms FROM outbox_lanes WHERE name = $1`, lane).Scan(&spacing); err != nil {
		return err
	}
	at := ms(now) + max(spacing, minRecheck.Milliseconds())
	if sooner != nil {
		at = min(at, max(ms(*sooner), ms(now)))
	}
	q := `UPDATE outbox_lanes SET recheck_at = COALESCE(recheck_at, $2) WHERE name = $1`
	if replace {
		q = `UPDATE outbox_lanes SET recheck_at = $2 WHERE name = $1`
	}
	_, err := tx.ExecContext(ctx, q, lane, at)
	return err
}

// Intents implements outbox.Store.
func (s *OutboxStore) Intents(ctx context.Context, l outbox.Lease) ([]outbox.Intent, error) {
	return queryAll(ctx, s.db.db, scanIntent, `SELECT `+intentColumns+` FROM outbox_intents WHERE lane = $1 AND state NOT IN ('retired', 'collision') ORDER BY rank`, l.Lane)
}

// Checks implements outbox.Store.
func (s *OutboxStore) Checks(ctx context.Context, intentID string) ([]outbox.Check, error) {
	return queryAll(ctx, s.db.db, func(sc scanner) (c outbox.Check, err error) {
		var at int64
		err = sc.Scan(&at, &c.Verdict, &c.Evidence)
		c.At = fromMS(at)
		return c, err
	}, `SELECT checked_at, verdict, evidence FROM outbox_checks WHERE intent_id = $1 ORDER BY checked_at, id`, intentID)
}

// Apply implements outbox.Store: a reconciliation, in one transaction
// conditional on the lease.
func (s *OutboxStore) Apply(ctx context.Context, l outbox.Lease, r outbox.Reconciliation) error {
	p := r.Plan
	if p == nil || !p.Accounting.Balanced || len(p.ReplayAlreadyLanded) > 0 {
		return fmt.Errorf("outbox: refusing to apply a plan that does not balance: %w", outbox.ErrUnbalanced)
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.fence(ctx, tx, l); err != nil {
		return err
	}
	now := ms(s.db.Clock.Now())
	if _, err := tx.ExecContext(ctx, `UPDATE outbox_attempts SET finished_at = $2, outcome = 'reconciled', error = $3
		WHERE lane = $1 AND finished_at IS NULL`, l.Lane, now, fmt.Sprintf("closed by reconciliation under token %d", l.Token)); err != nil {
		return err
	}
	for _, id := range p.Landed {
		w := p.LandedAs[id]
		if _, err := tx.ExecContext(ctx, `UPDATE outbox_intents SET state = 'landed', state_reason = 'reconciled', remote_id = $2,
			landed_at = COALESCE(landed_at, $3), updated_at = $3 WHERE id = $1 AND lane = $4 AND state <> 'landed'`,
			id, w.RemoteID, now, l.Lane); err != nil {
			return err
		}
	}
	for _, id := range p.Replay {
		if _, err := tx.ExecContext(ctx, `UPDATE outbox_intents SET state = 'pending', state_reason = 'reconciled: not landed', updated_at = $2
			WHERE id = $1 AND lane = $3 AND state IN ('sending', 'unresolved')`, id, now, l.Lane); err != nil {
			return err
		}
	}
	for _, id := range p.Unresolved {
		why := r.Reasons[id]
		if why == "" {
			why = "no fresh answer yet"
		}
		if _, err := tx.ExecContext(ctx, `UPDATE outbox_intents SET state = 'unresolved', state_reason = $4, updated_at = $2
			WHERE id = $1 AND lane = $3 AND state IN ('sending', 'unresolved')`, id, now, l.Lane, why); err != nil {
			return err
		}
	}
	for _, id := range r.Revive {
		if _, err := tx.ExecContext(ctx, `UPDATE outbox_intents SET state = 'pending', state_reason = 'target accepts writes again', updated_at = $2
			WHERE id = $1 AND lane = $3 AND state = 'unexecutable'`, id, now, l.Lane); err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(r.Checks)) {
		if err := s.addCheck(ctx, tx, id, r.Checks[id]); err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(r.Retire)) {
		if err := s.transition(ctx, tx, outbox.Move{Intent: id, Op: outbox.OpRetire, ByPolicy: true}, "policy", r.Retire[id]); err != nil {
			return err
		}
	}
	var waiting int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_intents WHERE lane = $1 AND state IN ('unresolved', 'unexecutable')`, l.Lane).Scan(&waiting); err != nil {
		return err
	}
	strays := append(slices.Clone(p.DuplicateOwnWrites), p.UnmatchedOwnWrites...)
	strays = strays[:min(len(strays), outbox.MaxLastReconciliationIDs)]
	if _, err := tx.ExecContext(ctx, `UPDATE outbox_lanes SET needs_reconcile = 0, recheck_at = NULL, read_refusal = '',
		reconciled_at = $2, unmatched_own_writes = $3, duplicate_own_writes = $4, stray_remote_ids = $5 WHERE name = $1`,
		l.Lane, now, len(p.UnmatchedOwnWrites), len(p.DuplicateOwnWrites), strings.Join(strays, " ")); err != nil {
		return err
	}
	if waiting > 0 {
		if err := s.scheduleRecheck(ctx, tx, l.Lane, s.db.Clock.Now(), r.RecheckAt, true); err != nil {
			return err
		}
	}
	// The read it was planned from is done: nothing of it is gone on from.
	if _, err := tx.ExecContext(ctx, `DELETE FROM outbox_read_progress WHERE lane = $1`, l.Lane); err != nil {
		return err
	}
	return tx.Commit()
}

// KeepRead implements outbox.Store: under the current token, it keeps how
// far the lane's read of its own writes got, in place of any kept before.
func (s *OutboxStore) KeepRead(ctx context.Context, l outbox.Lease, p outbox.ReadProgress) error {
	listing, err := json.Marshal(p.Listing)
	if err != nil {
		return fmt.Errorf("keep read of lane %s: %w", l.Lane, err)
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.fence(ctx, tx, l); err != nil {
		return err
	}
	if err := exec1(ctx, tx, staleLease(l), `INSERT INTO outbox_read_progress (lane, read_key, cursor, listing, kept_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (lane) DO UPDATE SET read_key = excluded.read_key, cursor = excluded.cursor, listing = excluded.listing, kept_at = excluded.kept_at`,
		l.Lane, p.Key, p.Cursor, string(listing), ms(s.db.Clock.Now())); err != nil {
		return err
	}
	return tx.Commit()
}

// KeptRead implements outbox.Store.
func (s *OutboxStore) KeptRead(ctx context.Context, l outbox.Lease) (outbox.ReadProgress, bool, error) {
	var (
		p       outbox.ReadProgress
		listing string
	)
	err := s.db.db.QueryRowContext(ctx, `SELECT read_key, cursor, listing FROM outbox_read_progress WHERE lane = $1`, l.Lane).Scan(&p.Key, &p.Cursor, &listing)
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, err
	}
	if err := json.Unmarshal([]byte(listing), &p.Listing); err != nil {
		return p, false, fmt.Errorf("kept read of lane %s: %w", l.Lane, err)
	}
	return p, true, nil
}

// DropRead implements outbox.Store: under the current token, it discards
// the lane's kept read, if any.
func (s *OutboxStore) DropRead(ctx context.Context, l outbox.Lease) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.fence(ctx, tx, l); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM outbox_read_progress WHERE lane = $1`, l.Lane); err != nil {
		return err
	}
	return tx.Commit()
}

// RefuseRead implements outbox.Store: it records, under the current
// token, why the provider refused a read the lane needs; the lane stays as
// in doubt as it was, and Apply clears it.
func (s *OutboxStore) RefuseRead(ctx context.Context, l outbox.Lease, reason string) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.fence(ctx, tx, l); err != nil {
		return err
	}
	if err := exec1(ctx, tx, staleLease(l), `UPDATE outbox_lanes SET read_refusal = $2 WHERE name = $1`, l.Lane, reason); err != nil {
		return err
	}
	return tx.Commit()
}

// transition applies a retire or revive that outbox.Move decides, with an
// audit row: the move is read under the intent's row lock and applied
// only if the intent is still in the state it was decided from.
func (s *OutboxStore) transition(ctx context.Context, tx *sql.Tx, m outbox.Move, actor, reason string) error {
	var state, retiredFrom, lane string
	err := tx.QueryRowContext(ctx, `SELECT state, retired_from, lane FROM outbox_intents WHERE id = $1`+s.db.Dialect.LockRow, m.Intent).Scan(&state, &retiredFrom, &lane)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("intent %q: %w", m.Intent, tidemark.ErrNotFound)
	}
	if err != nil {
		return err
	}
	m.State, m.RetiredFrom = outbox.State(state), outbox.State(retiredFrom)
	if m.AsksTwin() {
		err := tx.QueryRowContext(ctx, `SELECT t.id FROM outbox_intents t JOIN outbox_intents i ON i.id = $1
			WHERE t.lane = i.lane AND t.target = i.target AND t.parent = i.parent
			  AND COALESCE(t.match_sha256, t.body_sha256) = COALESCE(i.match_sha256, i.body_sha256)
			  AND t.id <> i.id AND t.state NOT IN ('retired', 'collision') ORDER BY t.rank LIMIT 1`, m.Intent).Scan(&m.Twin)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	t, err := m.Decide()
	if err != nil {
		return err
	}
	if m.Op == outbox.OpRevive {
		// What it announces is withdrawn: the writer would only retire it
		// again, so the revive is refused, saying why.
		why, err := s.whyWithdrawn(ctx, tx, `i.id = $1`, m.Intent)
		if err != nil {
			return err
		}
		if why != "" {
			return fmt.Errorf("intent %s cannot be revived: %s, so it is never sent: %w", m.Intent, why, tidemark.ErrConflict)
		}
	}
	now := ms(s.db.Clock.Now())
	if err := exec1(ctx, tx, fmt.Errorf("intent %s changed meanwhile: %w", m.Intent, tidemark.ErrConflict),
		`UPDATE outbox_intents SET state = $2, retired_from = $3, state_reason = $4, updated_at = $5 WHERE id = $1 AND state = $6`,
		m.Intent, string(t.To), string(t.RetiredFrom), string(m.Op)+": "+reason, now, string(t.From)); err != nil {
		return err
	}
	if t.To == outbox.StateUnresolved {
		if _, err := tx.ExecContext(ctx, `UPDATE outbox_lanes SET needs_reconcile = 1 WHERE name = $1`, lane); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO outbox_actions (id, intent_id, action, actor, reason, from_state, to_state, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, s.db.IDs.New(), m.Intent, string(m.Op), actor, reason, string(t.From), string(t.To), now)
	return err
}

// Retire gives up an unresolved, unexecutable or colliding intent (or a
// pending one an operator no longer wants sent), with an audit row.
func (s *OutboxStore) Retire(ctx context.Context, id, actor, reason string) (outbox.Intent, error) {
	return s.operate(ctx, outbox.Move{Intent: id, Op: outbox.OpRetire}, actor, reason)
}

// Revive brings back a retired, unexecutable or colliding intent, where
// outbox.Move.Decide says.
func (s *OutboxStore) Revive(ctx context.Context, id, actor, reason string) (outbox.Intent, error) {
	return s.operate(ctx, outbox.Move{Intent: id, Op: outbox.OpRevive}, actor, reason)
}

func (s *OutboxStore) operate(ctx context.Context, m outbox.Move, actor, reason string) (outbox.Intent, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return outbox.Intent{}, err
	}
	defer tx.Rollback()
	if err := s.transition(ctx, tx, m, actor, reason); err != nil {
		return outbox.Intent{}, err
	}
	if err := tx.Commit(); err != nil {
		return outbox.Intent{}, err
	}
	return s.Intent(ctx, m.Intent)
}

// Actions returns an intent's audit trail, oldest first.
func (s *OutboxStore) Actions(ctx context.Context, intentID string) ([]outbox.Action, error) {
	return queryAll(ctx, s.db.db, func(sc scanner) (a outbox.Action, err error) {
		var at int64
		err = sc.Scan(&a.IntentID, &a.Action, &a.Actor, &a.Reason, &a.From, &a.To, &at)
		a.At = fromMS(at)
		return a, err
	}, `SELECT intent_id, action, actor, reason, from_state, to_state, at FROM outbox_actions
		WHERE intent_id = $1 ORDER BY at, id`, intentID)
}

// Gaps reports each lane's achieved gaps (lane "": every lane).
func (s *OutboxStore) Gaps(ctx context.Context, lane string) ([]outbox.GapReport, error) {
	out, err := queryAll(ctx, s.db.db, func(sc scanner) (r outbox.GapReport, err error) {
		return r, sc.Scan(&r.Lane, &r.ThresholdMS)
	}, `SELECT name, min_gap_ms FROM outbox_lanes WHERE $1 = '' OR name = $1 ORDER BY name`, lane)
	if err != nil {
		return nil, err
	}
	if lane != "" && len(out) == 0 {
		return nil, fmt.Errorf("lane %q: %w", lane, tidemark.ErrNotFound)
	}
	for i, r := range out {
		gaps, err := queryAll(ctx, s.db.db, func(sc scanner) (g outbox.Gap, err error) {
			return g, sc.Scan(&g.MS, &g.ThresholdMS)
		}, `SELECT gap_ms, min_gap_ms FROM outbox_gaps WHERE lane = $1 ORDER BY gap_ms`, r.Lane)
		if err != nil {
			return nil, err
		}
		out[i] = outbox.ReportGaps(r.Lane, r.ThresholdMS, gaps)
	}
	return out, nil
}
