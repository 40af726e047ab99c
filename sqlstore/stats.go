package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/publish"
)

// The queries behind the metrics: aggregates read at scrape time, so every
// process scraped reports the whole deployment's state.

const publishStatsQuery = `SELECT
	(SELECT COUNT(*) FROM pages),
	(SELECT COUNT(*) FROM pages WHERE published_summary_id IS NOT NULL),
	(SELECT COUNT(*) FROM pages p JOIN events e ON e.id = p.event_id
		WHERE p.summary_id IS NOT NULL AND p.evidence_hash = e.evidence_hash
		  AND (p.published_summary_id IS NULL OR p.published_summary_id <> p.summary_id)),
	(SELECT COUNT(*) FROM pages WHERE published_summary_id IS NOT NULL AND summary_id IS NULL),
	(SELECT COUNT(*) FROM pages WHERE absent = 1 AND published_summary_id IS NOT NULL),
	(SELECT COUNT(*) FROM summaries WHERE is_current = 1),
	(SELECT COUNT(*) FROM summaries WHERE rejected_reason <> ''),
	(SELECT COUNT(*) FROM summaries WHERE is_current = 0 AND rejected_reason = '')`

// PublishStats counts pages and summaries. Behind uses the condition of
// Unpublished: the pages a publisher would pick up next; Withdrawing, the
// sweep's: published pages whose event has no current summary; Missing,
// AbsentPages's.
func (s *PublishStore) PublishStats(ctx context.Context) (publish.Stats, error) {
	var st publish.Stats
	var current, rejected, superseded int64
	if err := s.db.db.QueryRowContext(ctx, publishStatsQuery).Scan(&st.Pages, &st.Published, &st.Behind,
		&st.Withdrawing, &st.Missing, &current, &rejected, &superseded); err != nil {
		return st, fmt.Errorf("publish stats: %w", err)
	}
	st.Summaries = map[string]int64{"current": current, "rejected": rejected, "superseded": superseded}
	return st, nil
}

// gapStatsQuery sums each lane's achieved gaps into the cumulative buckets
// of outbox.GapBucketsMS, in one pass over outbox_gaps.
var gapStatsQuery = func() string {
	cols := make([]string, len(outbox.GapBucketsMS))
	for i, b := range outbox.GapBucketsMS {
		cols[i] = fmt.Sprintf("SUM(CASE WHEN gap_ms <= %d THEN 1 ELSE 0 END)", b)
	}
	return `SELECT lane, COUNT(*), CAST(COALESCE(SUM(gap_ms), 0) AS BIGINT),
		SUM(CASE WHEN gap_ms < min_gap_ms THEN 1 ELSE 0 END), ` + strings.Join(cols, ", ") + `
		FROM outbox_gaps GROUP BY lane`
}()

// LaneStats counts every lane's intents by state, its sends and flagged
// duplicates, and its achieved gaps, and says whether it is failing and
// how many delivery steps it failed, ordered by lane.
func (s *OutboxStore) LaneStats(ctx context.Context) ([]outbox.LaneStats, error) {
	lanes, err := queryAll(ctx, s.db.db, func(sc scanner) (l outbox.LaneStats, err error) {
		return l, sc.Scan(&l.Lane, &l.Provider, &l.MinGapMS, &l.Failing, &l.FailedSteps)
	}, `SELECT name, provider, min_gap_ms, CASE WHEN failing_since IS NULL THEN 0 ELSE 1 END, failed_steps
		FROM outbox_lanes ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("lane stats: %w", err)
	}
	byLane := map[string]*outbox.LaneStats{}
	for i := range lanes {
		lanes[i].Intents = map[outbox.State]int64{}
		lanes[i].Gaps.Buckets = make([]int64, len(outbox.GapBucketsMS))
		byLane[lanes[i].Lane] = &lanes[i]
	}
	each := func(query string, scan func(l *outbox.LaneStats, sc scanner) error) error {
		rows, err := s.db.db.QueryContext(ctx, query)
		if err != nil {
			return fmt.Errorf("lane stats: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			// The lane is the first column; a row for a lane created
			// after the first query is skipped until the next scrape.
			var tmp outbox.LaneStats
			if err := scan(&tmp, rows); err != nil {
				return fmt.Errorf("lane stats: %w", err)
			}
			if l := byLane[tmp.Lane]; l != nil {
				if err := mergeLaneStats(l, &tmp); err != nil {
					return err
				}
			}
		}
		return rows.Err()
	}
	err = each(`SELECT lane, state, COUNT(*) FROM outbox_intents GROUP BY lane, state`, func(l *outbox.LaneStats, sc scanner) error {
		var st string
		var n int64
		if err := sc.Scan(&l.Lane, &st, &n); err != nil {
			return err
		}
		l.Intents = map[outbox.State]int64{outbox.State(st): n}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = each(`SELECT lane, SUM(CASE WHEN sent_at IS NOT NULL THEN 1 ELSE 0 END),
		SUM(CASE WHEN count_verdict = '`+string(outbox.CountDuplicate)+`' THEN 1 ELSE 0 END)
		FROM outbox_attempts GROUP BY lane`, func(l *outbox.LaneStats, sc scanner) error {
		return sc.Scan(&l.Lane, &l.Sends, &l.Duplicates)
	})
	if err != nil {
		return nil, err
	}
	err = each(gapStatsQuery, func(l *outbox.LaneStats, sc scanner) error {
		l.Gaps.Buckets = make([]int64, len(outbox.GapBucketsMS))
		dest := []any{&l.Lane, &l.Gaps.Count, &l.Gaps.SumMS, &l.Gaps.BelowThreshold}
		for i := range l.Gaps.Buckets {
			dest = append(dest, &l.Gaps.Buckets[i])
		}
		return sc.Scan(dest...)
	})
	if err != nil {
		return nil, err
	}
	return lanes, nil
}

// mergeLaneStats adds what one aggregate row read (src) into dst.
func mergeLaneStats(dst, src *outbox.LaneStats) error {
	for st, n := range src.Intents {
		dst.Intents[st] += n
	}
	dst.Sends += src.Sends
	dst.Duplicates += src.Duplicates
	if src.Gaps.Buckets != nil {
		if len(src.Gaps.Buckets) != len(dst.Gaps.Buckets) {
			return fmt.Errorf("lane stats: %d gap buckets, want %d", len(src.Gaps.Buckets), len(dst.Gaps.Buckets))
		}
		dst.Gaps.Count += src.Gaps.Count
		dst.Gaps.SumMS += src.Gaps.SumMS
		dst.Gaps.BelowThreshold += src.Gaps.BelowThreshold
		for i, n := range src.Gaps.Buckets {
			dst.Gaps.Buckets[i] += n
		}
	}
	return nil
}

// MigrationStats counts field migration runs by status, sums their
// documents and batches, and returns the open runs for progress.
func (s *ContentStore) MigrationStats(ctx context.Context) (content.Stats, error) {
	st := content.Stats{Runs: map[content.RunStatus]int64{}}
	rows, err := s.db.db.QueryContext(ctx, `SELECT status, COUNT(*), CAST(COALESCE(SUM(converted), 0) AS BIGINT),
		CAST(COALESCE(SUM(restored), 0) AS BIGINT), CAST(COALESCE(SUM(batches), 0) AS BIGINT) FROM field_migrations GROUP BY status`)
	if err != nil {
		return st, fmt.Errorf("migration stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n, converted, restored, batches int64
		if err := rows.Scan(&status, &n, &converted, &restored, &batches); err != nil {
			return st, fmt.Errorf("migration stats: %w", err)
		}
		st.Runs[content.RunStatus(status)] = n
		st.Converted += converted
		st.Restored += restored
		st.Batches += batches
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("migration stats: %w", err)
	}
	open, err := queryAll(ctx, s.db.db, scanRunRow, `SELECT `+migrationRunColumns+` FROM field_migrations
		WHERE status IN ('running', 'failed', 'aborting') ORDER BY created_at, id`)
	if err != nil {
		return st, fmt.Errorf("migration stats: %w", err)
	}
	st.Open = make([]content.Run, len(open))
	for i, r := range open {
		st.Open[i] = r.Run
	}
	return st, nil
}
