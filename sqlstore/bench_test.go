package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// BenchmarkFencedIngest compares the fenced path (claim → settle N events
// with the cursor advance and audit row) with the same event and revision
// rows inserted in one plain transaction without fences. It reports
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
					t0 := time.Now()
					c, err := st.Claim(ctx, src.ID, "bench", time.Minute)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := st.Settle(ctx, c, ingest.Settlement{Items: fi, Cursor: fmt.Sprint(i), NextDueAt: env.Clock.Now()}); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if err := plainInsert(ctx, db, plainSrc.ID, pi, env); err != nil {
						b.Fatal(err)
					}
					t2 := time.Now()
					fenced += t1.Sub(t0)
					plain += t2.Sub(t1)
				}
				b.ReportMetric(float64(plain)/float64(fenced), "fenced/plain")
				b.ReportMetric(float64(batch*b.N)/fenced.Seconds(), "fenced-events/s")
				b.ReportMetric(float64(batch*b.N)/plain.Seconds(), "plain-events/s")
			})
		}
	}
}

// plainInsert is the baseline: the same rows, one transaction, no claim,
// no fence, no cursor, no audit.
func plainInsert(ctx context.Context, db *sqlstore.DB, sourceID string, items []tidemark.Item, env sqltest.Env) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// The same statements the settlement runs for new events, with the
	// same parameters bound.
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
	now := env.Clock.Now().UnixMilli()
	for _, it := range items {
		id := env.IDs.New()
		hash := it.EvidenceHash()
		if _, err := ev.ExecContext(ctx, id, sourceID, it.Key, it.Title, it.URL, now, hash, "plain", now); err != nil {
			return err
		}
		if _, err := rev.ExecContext(ctx, id, 1, hash, it.Evidence, "plain", now); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// BenchmarkClaimThroughput measures claims per second with 1, 4 and 16
// concurrent claimers over 10,000 due sources (PostgreSQL; SQLite too,
// where its single writer is the expected ceiling), and reports each
// against the single claimer measured in the same run.
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
						if _, err := db.SQL().ExecContext(ctx, `DELETE FROM ingest_runs`); err != nil {
							b.Fatal(err)
						}
						if _, err := db.SQL().ExecContext(ctx, `UPDATE sources SET claim_token = NULL, claim_holder = NULL, claim_run_id = NULL, lease_expires_at = NULL`); err != nil {
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
					b.ReportMetric(rate, "claims/s")
					if single > 0 {
						b.ReportMetric(rate/single, "x-one-claimer")
					}
				})
			}
		})
	}
}
