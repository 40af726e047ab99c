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

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
)

// The operators' side of the outbox's configuration: changing and removing
// lanes, removing channels, and the audit of each (outbox_lane_actions).

// audit records who changed a lane or its channels, in the transaction
// that made the change.
func (s *OutboxStore) audit(ctx context.Context, q execer, lane, action, actor, detail string) error {
	if actor == "" {
		actor = "-"
	}
	_, err := q.ExecContext(ctx, `INSERT INTO outbox_lane_actions (id, lane, action, actor, detail, at) VALUES ($1, $2, $3, $4, $5, $6)`,
		s.db.IDs.New(), lane, action, actor, detail, ms(s.db.Clock.Now()))
	if err != nil {
		return fmt.Errorf("lane %s: audit %s: %w", lane, action, err)
	}
	return nil
}

// Audit records an operator's action on a lane that changes no
// configuration (a reconciliation asked for).
func (s *OutboxStore) Audit(ctx context.Context, lane, action, actor, detail string) error {
	return s.audit(ctx, s.db.db, lane, action, actor, detail)
}

// LaneActions returns the audit of a lane's configuration, newest first.
func (s *OutboxStore) LaneActions(ctx context.Context, lane string, limit int) ([]outbox.LaneAction, error) {
	if limit <= 0 {
		limit = 100
	}
	return queryAll(ctx, s.db.db, func(sc scanner) (a outbox.LaneAction, err error) {
		var at int64
		err = sc.Scan(&a.Lane, &a.Action, &a.Actor, &a.Detail, &at)
		a.At = fromMS(at)
		return a, err
	}, `SELECT lane, action, actor, detail, at FROM outbox_lane_actions WHERE lane = $1 ORDER BY at DESC, id DESC LIMIT $2`, lane, limit)
}

// SplitFunc divides a lane's settings into the shown form and the secrets
// kept apart (providers.Split).
type SplitFunc func(kind string, settings map[string]string) (shown, secret map[string]string)

// SetLane changes a lane in one transaction: edit is given the lane's
// configuration as stored, its secrets merged back into its settings, and
// returns the new configuration and what changed, for the audit. split
// keeps the new secrets apart again. The provider kind cannot change.
func (s *OutboxStore) SetLane(ctx context.Context, name, actor string, split SplitFunc,
	edit func(outbox.LaneConfig) (outbox.LaneConfig, string, error)) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	l, err := scanLane(tx.QueryRowContext(ctx, `SELECT `+laneColumns+` FROM outbox_lanes WHERE name = $1`+s.db.Dialect.LockRow, name))
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("lane %q: %w", name, tidemark.ErrNotFound)
	}
	if err != nil {
		return err
	}
	secrets, err := laneSecrets(ctx, tx, name, "")
	if err != nil {
		return err
	}
	cur := l.LaneConfig
	cur.Settings = maps.Clone(l.Settings)
	if cur.Settings == nil {
		cur.Settings = map[string]string{}
	}
	maps.Copy(cur.Settings, secrets)
	next, detail, err := edit(cur)
	if err != nil {
		return err
	}
	if next.Name != cur.Name || next.Provider != cur.Provider {
		return tidemark.Invalidf("lane "+name, next.Provider, "a lane's name and provider cannot change; add another lane")
	}
	if err := next.Validate(); err != nil {
		return err
	}
	shown, secret := split(next.Provider, next.Settings)
	shownJSON, err := json.Marshal(orEmpty(shown))
	if err != nil {
		return err
	}
	if err := exec1(ctx, tx, fmt.Errorf("lane %q: %w", name, tidemark.ErrNotFound), `UPDATE outbox_lanes
		SET settings = $2, min_gap_ms = $3, skew_ms = $4, retire_checks = $5, retire_spacing_ms = $6, updated_at = $7,
		revision = $8 WHERE name = $1`,
		name, string(shownJSON), next.MinGap.Std().Milliseconds(), next.Skew.Std().Milliseconds(), next.Retirement.Checks,
		next.Retirement.Spacing.Std().Milliseconds(), ms(s.db.Clock.Now()), s.db.IDs.New()); err != nil {
		return err
	}
	if err := keepLaneSecrets(ctx, tx, name, secret); err != nil {
		return err
	}
	if err := s.audit(ctx, tx, name, outbox.ActionLaneSet, actor, detail); err != nil {
		return err
	}
	return tx.Commit()
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// RemoveLane removes a lane with its channels, its intents and their
// journal, in one transaction. It counts the lane's intents by state
// first and refuses, changing nothing, what outbox.LaneRemoval.Check
// refuses (intents not yet delivered or decided) unless force is set. The
// audit keeps what was removed.
func (s *OutboxStore) RemoveLane(ctx context.Context, name, actor string, force bool) (outbox.LaneRemoval, error) {
	r := outbox.LaneRemoval{Lane: name, Intents: map[outbox.State]int{}, Forced: force}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return r, err
	}
	defer tx.Rollback()
	var got string
	err = tx.QueryRowContext(ctx, `SELECT name FROM outbox_lanes WHERE name = $1`+s.db.Dialect.LockRow, name).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("lane %q: %w", name, tidemark.ErrNotFound)
	}
	if err != nil {
		return r, err
	}
	type stateCount struct {
		state string
		n     int
	}
	counts, err := queryAll(ctx, tx, func(sc scanner) (c stateCount, err error) {
		return c, sc.Scan(&c.state, &c.n)
	}, `SELECT state, COUNT(*) FROM outbox_intents WHERE lane = $1 GROUP BY state`, name)
	if err != nil {
		return r, err
	}
	for _, c := range counts {
		r.Intents[outbox.State(c.state)] = c.n
	}
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_channels WHERE lane = $1`, name).Scan(&r.Channels); err != nil {
		return r, err
	}
	if err := r.Check(); err != nil {
		return r, err
	}
	for _, q := range []string{
		`DELETE FROM outbox_gaps WHERE lane = $1`,
		`DELETE FROM outbox_checks WHERE intent_id IN (SELECT id FROM outbox_intents WHERE lane = $1)`,
		`DELETE FROM outbox_actions WHERE intent_id IN (SELECT id FROM outbox_intents WHERE lane = $1)`,
		`DELETE FROM outbox_attempts WHERE lane = $1`,
		`DELETE FROM outbox_intents WHERE lane = $1`,
		`DELETE FROM outbox_channels WHERE lane = $1`,
		`DELETE FROM outbox_lane_secrets WHERE lane = $1`,
		`DELETE FROM outbox_read_progress WHERE lane = $1`,
	} {
		if _, err := tx.ExecContext(ctx, q, name); err != nil {
			return r, fmt.Errorf("remove lane %s: %w", name, err)
		}
	}
	if err := exec1(ctx, tx, fmt.Errorf("lane %q: %w", name, tidemark.ErrNotFound), `DELETE FROM outbox_lanes WHERE name = $1`, name); err != nil {
		return r, err
	}
	if err := s.audit(ctx, tx, name, outbox.ActionLaneRemove, actor, r.Detail()); err != nil {
		return r, err
	}
	return r, tx.Commit()
}

func channelDetail(c outbox.Channel) string {
	d := fmt.Sprintf("source %s → %s", c.Source, c.Target)
	if c.Parent != "" {
		d += " ↳ " + c.Parent
	}
	return d + " (channel " + c.ID + ")"
}

// RemoveChannel removes a channel: the source's pages are no longer
// delivered there. The intents it drafted stay on their lane and keep it
// as their origin.
func (s *OutboxStore) RemoveChannel(ctx context.Context, ref outbox.ChannelRef, actor string) (outbox.Channel, error) {
	return s.changeChannel(ctx, ref, outbox.ActionChannelRemove, actor, func(tx *sql.Tx, c *outbox.Channel) (string, error) {
		err := exec1(ctx, tx, fmt.Errorf("channel %s: %w", c.ID, tidemark.ErrNotFound), `DELETE FROM outbox_channels WHERE id = $1`, c.ID)
		return "", err
	})
}

// SetChannelTemplate sets a channel's message template (blank: the lane's
// provider kind's default), audited as done by actor. It is checked with
// outbox.ParseTemplate first: a template that would fail on every change
// is refused, and the channel keeps the one it had.
func (s *OutboxStore) SetChannelTemplate(ctx context.Context, channelID, template, actor string) (outbox.Channel, error) {
	if strings.TrimSpace(template) == "" {
		template = ""
	} else if _, err := outbox.ParseTemplate(template); err != nil {
		return outbox.Channel{}, err
	}
	return s.changeChannel(ctx, outbox.ChannelRef{ID: channelID}, outbox.ActionChannelTemplate, actor, func(tx *sql.Tx, c *outbox.Channel) (string, error) {
		err := exec1(ctx, tx, fmt.Errorf("channel %s: %w", c.ID, tidemark.ErrNotFound), `UPDATE outbox_channels SET template = $1 WHERE id = $2`, template, c.ID)
		c.Template = template
		if template == "" {
			return "the provider's default", err
		}
		return fmt.Sprintf("its own template (%d bytes)", len(template)), err
	})
}

// changeChannel locks the channel ref names, applies change to it and
// audits the change (with what change says of it) in one transaction.
func (s *OutboxStore) changeChannel(ctx context.Context, ref outbox.ChannelRef, action, actor string, change func(*sql.Tx, *outbox.Channel) (string, error)) (outbox.Channel, error) {
	var c outbox.Channel
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return c, err
	}
	defer tx.Rollback()
	q := `SELECT c.id, c.source_id, s.name, c.lane, c.target, c.parent, c.template, c.created_at FROM outbox_channels c JOIN sources s ON s.id = c.source_id `
	args := []any{ref.ID}
	if ref.ID != "" {
		q += `WHERE c.id = $1`
	} else {
		if ref.Source == "" || ref.Lane == "" || ref.Target == "" {
			return c, tidemark.Invalidf("channel", "", "name it by id, or by %s, %s and %s (and %s)",
				tidemark.Input("source"), tidemark.Input("lane"), tidemark.Input("target"), tidemark.Input("parent"))
		}
		q += `WHERE (s.id = $1 OR s.name = $1) AND c.lane = $2 AND c.target = $3 AND c.parent = $4`
		args = []any{ref.Source, ref.Lane, ref.Target, ref.Parent}
	}
	var at int64
	err = tx.QueryRowContext(ctx, q+s.db.Dialect.LockRow, args...).Scan(&c.ID, &c.SourceID, &c.Source, &c.Lane, &c.Target, &c.Parent, &c.Template, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("channel %s: %w", describeRef(ref), tidemark.ErrNotFound)
	}
	if err != nil {
		return c, err
	}
	c.CreatedAt = fromMS(at)
	what, err := change(tx, &c)
	if err != nil {
		return c, err
	}
	detail := channelDetail(c)
	if what != "" {
		detail += ": " + what
	}
	if err := s.audit(ctx, tx, c.Lane, action, actor, detail); err != nil {
		return c, err
	}
	return c, tx.Commit()
}

func describeRef(r outbox.ChannelRef) string {
	if r.ID != "" {
		return r.ID
	}
	d := fmt.Sprintf("of source %s on lane %s to %s", r.Source, r.Lane, r.Target)
	if r.Parent != "" {
		d += " ↳ " + r.Parent
	}
	return d
}

// RecentGaps returns a lane's latest achieved gaps, oldest first, at most
// limit.
func (s *OutboxStore) RecentGaps(ctx context.Context, lane string, limit int) ([]outbox.Gap, error) {
	gaps, err := queryAll(ctx, s.db.db, func(sc scanner) (g outbox.Gap, err error) {
		var at int64
		err = sc.Scan(&g.MS, &g.ThresholdMS, &at)
		g.At = fromMS(at)
		return g, err
	}, `SELECT gap_ms, min_gap_ms, sent_at FROM outbox_gaps WHERE lane = $1 ORDER BY sent_at DESC, attempt_id DESC LIMIT $2`, lane, limit)
	slices.Reverse(gaps)
	return gaps, err
}

// LaneRevisions returns each lane's name (only one, or every lane) with its
// revision, new at every add and change: what the delivery loop reads each
// round to rebuild the provider of a lane that changed.
func (s *OutboxStore) LaneRevisions(ctx context.Context, only string) (map[string]string, error) {
	type row struct{ name, rev string }
	rows, err := queryAll(ctx, s.db.db, func(sc scanner) (r row, err error) {
		return r, sc.Scan(&r.name, &r.rev)
	}, `SELECT name, revision FROM outbox_lanes WHERE $1 = '' OR name = $1`, only)
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.name] = r.rev
	}
	return out, err
}
