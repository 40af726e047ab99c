package sqlstore

import (
	"context"

	"github.com/tidemark/tidemark/ingest"
)

// Announce records p (a daemon's presence under its holder, seen at
// p.SeenAt) and returns the other instances of its holder seen within
// ingest.PresenceStale of it. Presences gone stale are removed on the way
// (daemons that died without withdrawing).
func (d *DB) Announce(ctx context.Context, p ingest.Presence) ([]ingest.Presence, error) {
	tx, err := d.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	now := ms(p.SeenAt)
	if _, err := tx.ExecContext(ctx, `DELETE FROM daemon_presence WHERE seen_at < $1`, now-ingest.PresenceStale.Milliseconds()); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO daemon_presence (holder, instance, host, pid, started_at, seen_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (holder, instance) DO UPDATE SET host = excluded.host, pid = excluded.pid, seen_at = excluded.seen_at`,
		p.Holder, p.Instance, p.Host, p.PID, ms(p.StartedAt), now); err != nil {
		return nil, err
	}
	others, err := queryAll(ctx, tx, func(sc scanner) (o ingest.Presence, err error) {
		var started, seen int64
		err = sc.Scan(&o.Holder, &o.Instance, &o.Host, &o.PID, &started, &seen)
		o.StartedAt, o.SeenAt = fromMS(started), fromMS(seen)
		return o, err
	}, `SELECT holder, instance, host, pid, started_at, seen_at FROM daemon_presence
		WHERE holder = $1 AND instance <> $2 ORDER BY started_at, instance`, p.Holder, p.Instance)
	if err != nil {
		return nil, err
	}
	return others, tx.Commit()
}

// Withdraw removes a stopping daemon's presence.
func (d *DB) Withdraw(ctx context.Context, holder, instance string) error {
	_, err := d.w.ExecContext(ctx, `DELETE FROM daemon_presence WHERE holder = $1 AND instance = $2`, holder, instance)
	return err
}
