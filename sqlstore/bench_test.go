package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// BenchmarkFencedIngest compares the fenced path (claim → settle N events
// with the cursor advance and audit row) with the fastest honest way to
// write the same event and revision rows without fences: PostgreSQL's COPY
// (pgx CopyFrom) in one transaction; on SQLite, where a statement costs no
// round trip, one prepared insert per row in one transaction. It reports
// fenced/plain: the fenced path's throughput as a fraction of the plain
// path's, both measured in the same run.
//
//	go test ./sqlstore -run '^$' -bench FencedIngest
func BenchmarkFencedIngest(b *testing.B) {
	for _, be := range sqltest.Backends() {
		for _, batch := range []int{1, 100, 10000} {
			b.Run(fmt.Sprintf("%s/batch=%d", be.Name, batch), func(b *testing.B) {
				env := sqltest.NewEnv(3)
				db := sqltest.MustOpen(b, be, env)
				ctx := context.Background()
				st := db.Ingest()
				src, err := st.AddSource(ctx, ingest.NewSource{Name: "bench", Kind: "test", Location: "x", Interval: time.Minute, RetryBudget: 3})
				if err != nil {
					b.Fatal(err)
				}
				plainSrc, err := st.AddSource(ctx, ingest.NewSource{Name: "plain", Kind: "test", Location: "y", Interval: time.Minute, RetryBudget: 3})
				if err != nil {
					b.Fatal(err)
				}
				items := func(round, n int, prefix string) []tidemark.Item {
					out := make([]tidemark.Item, n)
					for i := range out {
						key := fmt.Sprintf("%s-%d-%d", prefix, round, i)
						out[i] = tidemark.Item{Key: key, Title: "commit " + key, Evidence: []byte("evidence of " + key + " with a realistic few hundred bytes of frozen text, canonicalized and hashed before it is stored")}
					}
					return out
				}
				var fenced, plain time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					fi, pi := items(i, batch, "f"), items(i, batch, "p")
					fencedRound := func() {
						t0 := time.Now()
						c, err := st.Claim(ctx, src.ID, "bench", time.Minute)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := st.Settle(ctx, c, ingest.Settlement{Items: fi, Cursor: fmt.Sprint(i), NextDueAt: env.Clock.Now()}); err != nil {
							b.Fatal(err)
						}
						fenced += time.Since(t0)
					}
					plainRound := func() {
						t0 := time.Now()
						if err := plainInsert(ctx, db, plainSrc.ID, pi, env); err != nil {
							b.Fatal(err)
						}
						plain += time.Since(t0)
					}
					// Each goes first every other round: whatever the first
					// write of a round pays (the last round's checkpoint,
					// a colder cache), both pay it alike.
					if i%2 == 0 {
						fencedRound()
						plainRound()
					} else {
						plainRound()
						fencedRound()
					}
				}
				b.ReportMetric(float64(plain)/float64(fenced), "fenced/plain")
				b.ReportMetric(float64(batch*b.N)/fenced.Seconds(), "fenced-events/s")
				b.ReportMetric(float64(batch*b.N)/plain.Seconds(), "plain-events/s")
			})
		}
	}
}

// plainInsert is the baseline: the same rows, one transaction, no claim,
// no fence, no cursor, no audit, written the fastest way the backend has.
func plainInsert(ctx context.Context, db *sqlstore.DB, sourceID string, items []tidemark.Item, env sqltest.Env) error {
	now := env.Clock.Now().UnixMilli()
	ids := make([]string, len(items))
	for i := range ids {
		ids[i] = env.IDs.New()
	}
	if db.Dialect.Name == sqlstore.Postgres.Name {
		return copyInsert(ctx, db, sourceID, items, ids, now)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ev, err := tx.PrepareContext(ctx, `INSERT INTO events (id, source_id, item_key, title, url, occurred_at, evidence_hash, revision, run_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9, $9)`)
	if err != nil {
		return err
	}
	defer ev.Close()
	rev, err := tx.PrepareContext(ctx, `INSERT INTO event_revisions (event_id, revision, evidence_hash, evidence, run_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)`)
	if err != nil {
		return err
	}
	defer rev.Close()
	for i, it := range items {
		hash := it.EvidenceHash()
		if _, err := ev.ExecContext(ctx, ids[i], sourceID, it.Key, it.Title, it.URL, now, hash, "plain", now); err != nil {
			return err
		}
		if _, err := rev.ExecContext(ctx, ids[i], 1, hash, it.Evidence, "plain", now); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// copyInsert writes the rows with COPY, in one transaction.
func copyInsert(ctx context.Context, db *sqlstore.DB, sourceID string, items []tidemark.Item, ids []string, now int64) error {
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		tx, err := pc.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		evRows := make([][]any, len(items))
		revRows := make([][]any, len(items))
		for i, it := range items {
			hash := it.EvidenceHash()
			evRows[i] = []any{ids[i], sourceID, it.Key, it.Title, it.URL, now, hash, 1, "plain", now, now}
			revRows[i] = []any{ids[i], 1, hash, it.Evidence, "plain", now}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, []string{"id", "source_id", "item_key", "title", "url", "occurred_at", "evidence_hash", "revision", "run_id", "created_at", "updated_at"}, pgx.CopyFromRows(evRows)); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"event_revisions"}, []string{"event_id", "revision", "evidence_hash", "evidence", "run_id", "created_at"}, pgx.CopyFromRows(revRows)); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

// BenchmarkClaimThroughput measures claim → settle per second with 1, 4
// and 16 concurrent workers over 10,000 due sources (PostgreSQL; SQLite
// too, where its single writer is the expected ceiling), and reports each
// against the single worker measured in the same run. Every claim is
// settled, as a worker would: claims never pile up.
//
//	go test ./sqlstore -run '^$' -bench ClaimThroughput
func BenchmarkClaimThroughput(b *testing.B) {
	sources := 10000
	if os.Getenv("TIDEMARK_BENCH_SMALL") != "" {
		sources = 1000
	}
	for _, be := range sqltest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			db := sqltest.MustOpenURL(b, be.NewURL(b), sqltest.Env{})
			ctx := context.Background()
			st := db.Ingest()
			for i := 0; i < sources; i++ {
				if _, err := st.AddSource(ctx, ingest.NewSource{Name: fmt.Sprintf("s%05d", i), Kind: "test", Location: "x", Interval: time.Minute, RetryBudget: 3}); err != nil {
					b.Fatal(err)
				}
			}
			var single float64
			for _, claimers := range []int{1, 4, 16} {
				b.Run(fmt.Sprintf("claimers=%d", claimers), func(b *testing.B) {
					var total time.Duration
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						if _, err := db.SQL().ExecContext(ctx, `UPDATE sources SET next_due_at = 0`); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
						t0 := time.Now()
						var wg sync.WaitGroup
						var mu sync.Mutex
						claimed := 0
						for w := 0; w < claimers; w++ {
							wg.Add(1)
							go func() {
								defer wg.Done()
								for {
									cs, err := st.ClaimDue(ctx, fmt.Sprintf("w%d", w), time.Hour, 1)
									if err != nil {
										b.Error(err)
										return
									}
									if len(cs) == 0 {
										return
									}
									for _, c := range cs {
										if _, err := st.Settle(ctx, c, ingest.Settlement{Cursor: "c", NextDueAt: time.Now().Add(time.Hour)}); err != nil {
											b.Error(err)
											return
										}
									}
									mu.Lock()
									claimed += len(cs)
									mu.Unlock()
								}
							}()
						}
						wg.Wait()
						total += time.Since(t0)
						if claimed != sources {
							b.Fatalf("claimed %d of %d", claimed, sources)
						}
					}
					rate := float64(sources*b.N) / total.Seconds()
					if claimers == 1 {
						single = rate
					}
					b.ReportMetric(rate, "settled/s")
					if single > 0 {
						b.ReportMetric(rate/single, "x-one-worker")
					}
				})
			}
		})
	}
}
