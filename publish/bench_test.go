package publish_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/objstore/objstoretest"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize"
)

var sweepPages = flag.Int("publish.sweep-pages", 100000, "pages in BenchmarkSweepNothingToRepair")

// BenchmarkPublish measures whole publications (pre-check, card, body
// write with compare-and-swap, read-back, conditional mark) against raw
// unconditional puts of the same bodies to the same store, measured in the
// same run: x/baseline is publications per second over raw puts per second.
func BenchmarkPublish(b *testing.B) {
	b.Run("dir", func(b *testing.B) {
		s, err := dir.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		benchPublish(b, s)
	})
	b.Run("s3", func(b *testing.B) { benchPublish(b, objstoretest.S3(b, "")) })
}

// benchDB is a fresh SQLite database with one source.
func benchDB(b *testing.B) (*sqlstore.DB, sqltest.Env, tidemark.Source) {
	return benchDBOn(b, sqltest.Backend{Name: "sqlite", NewURL: sqltest.NewSQLiteURL})
}

// benchDBOn is a fresh database of backend be with one source.
func benchDBOn(b *testing.B, be sqltest.Backend) (*sqlstore.DB, sqltest.Env, tidemark.Source) {
	env := sqltest.NewEnv(1)
	db := sqltest.MustOpenURL(b, be.NewURL(b), env)
	src, err := db.Ingest().AddSource(context.Background(), ingest.NewSource{Name: "bench", Kind: "git", Location: "/bench", Interval: time.Hour, RetryBudget: 3})
	if err != nil {
		b.Fatal(err)
	}
	return db, env, src
}

func benchPublish(b *testing.B, objs objstore.Store) {
	ctx := context.Background()
	db, env, src := benchDB(b)
	n := b.N
	items := make([]tidemark.Item, n)
	for i := range items {
		items[i] = tidemark.Item{Key: fmt.Sprintf("c%07d", i), Title: fmt.Sprintf("change %d", i), OccurredAt: env.Clock.Now(),
			Evidence: []byte(fmt.Sprintf("commit c%07d\n\n    change %d\n", i, i))}
	}
	c, err := db.Ingest().Claim(ctx, src.ID, "bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	rep, err := db.Ingest().Settle(ctx, c, ingest.Settlement{Items: items, Cursor: "end", NextDueAt: env.Clock.Now()})
	if err != nil {
		b.Fatal(err)
	}
	st := db.Publish()
	ids := make([]string, n)
	for i, evID := range rep.EventIDs {
		s, _, err := st.Accept(ctx, publish.NewSummary{EventID: evID, EvidenceHash: items[i].EvidenceHash(),
			Draft: summarize.Draft{Text: fmt.Sprintf("Change %d does a thing.\n\nIt matters because of reasons.", i), Model: "m", PromptVersion: "p"}})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = s.ID
	}
	svc := &publish.Service{Store: st, Objects: objs}
	// Publications and raw puts alternate, so both see the same machine
	// (fsync latency drifts with whatever else runs).
	var published, raw time.Duration
	b.ResetTimer()
	for i, id := range ids {
		start := time.Now()
		res, err := svc.Publish(ctx, id)
		published += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		o, err := objs.Get(ctx, res.Key)
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if _, err := objs.Put(ctx, fmt.Sprintf("raw/%d.html", i), o.Body, objstore.PutOptions{Generation: 1}); err != nil {
			b.Fatal(err)
		}
		raw += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	pagesPerSec := float64(n) / published.Seconds()
	rawPerSec := float64(n) / raw.Seconds()
	b.ReportMetric(pagesPerSec, "pages/s")
	b.ReportMetric(rawPerSec, "rawputs/s")
	b.ReportMetric(pagesPerSec/rawPerSec, "x/baseline")
}

// BenchmarkPublishPending measures a publishing pass (PublishPending over
// -publish.pending-pages new summaries: publications at the service's
// default concurrency, the relinks, the listings) against raw
// unconditional puts of the same page bodies to the same store by as many
// concurrent writers, measured in the same run: x/baseline is pages per
// second of the pass over raw puts per second.
func BenchmarkPublishPending(b *testing.B) {
	for _, be := range sqltest.Backends() {
		b.Run(be.Name+"/dir", func(b *testing.B) {
			s, err := dir.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			benchPublishPending(b, be, s)
		})
		b.Run(be.Name+"/s3", func(b *testing.B) { benchPublishPending(b, be, objstoretest.S3(b, "")) })
	}
}

var pendingPages = flag.Int("publish.pending-pages", 200, "new summaries per pass in BenchmarkPublishPending")

func benchPublishPending(b *testing.B, be sqltest.Backend, objs objstore.Store) {
	ctx := context.Background()
	db, env, src := benchDBOn(b, be)
	st := db.Publish()
	svc := &publish.Service{Store: st, Objects: objs}
	n := *pendingPages
	var published, raw time.Duration
	for round := range b.N {
		b.StopTimer()
		items := make([]tidemark.Item, n)
		for i := range items {
			key := fmt.Sprintf("r%03d-c%07d", round, i)
			items[i] = tidemark.Item{Key: key, Title: "change " + key, OccurredAt: env.Clock.Now(),
				Evidence: []byte("commit " + key + "\n\n    a change\n")}
		}
		c, err := db.Ingest().Claim(ctx, src.ID, "bench", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := db.Ingest().Settle(ctx, c, ingest.Settlement{Items: items, Cursor: fmt.Sprint(round), NextDueAt: env.Clock.Now()})
		if err != nil {
			b.Fatal(err)
		}
		for i, evID := range rep.EventIDs {
			if _, _, err := st.Accept(ctx, publish.NewSummary{EventID: evID, EvidenceHash: items[i].EvidenceHash(),
				Draft: summarize.Draft{Text: fmt.Sprintf("Change %d does a thing.\n\nIt matters because of reasons.", i), Model: "m", PromptVersion: "p"}}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		prep, err := svc.PublishPending(ctx, n)
		published += time.Since(start)
		if err != nil || prep.Published != n || prep.Failed != 0 {
			b.Fatalf("publish pending: %+v %v", prep, err)
		}
		b.StopTimer()
		// The same bodies, written raw by as many writers at once.
		var bodies [][]byte
		if err := objs.List(ctx, "changes/", func(in objstore.Info) error {
			if len(bodies) < n {
				o, err := objs.Get(ctx, in.Key)
				if err != nil {
					return err
				}
				bodies = append(bodies, o.Body)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if err := rawPuts(ctx, objs, fmt.Sprintf("raw/%d/", round), bodies, publish.DefaultConcurrency); err != nil {
			b.Fatal(err)
		}
		raw += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	pagesPerSec := float64(n*b.N) / published.Seconds()
	rawPerSec := float64(n*b.N) / raw.Seconds()
	b.ReportMetric(pagesPerSec, "pages/s")
	b.ReportMetric(rawPerSec, "rawputs/s")
	b.ReportMetric(pagesPerSec/rawPerSec, "x/baseline")
}

// rawPuts writes bodies under prefix, unconditionally, with w writers.
func rawPuts(ctx context.Context, objs objstore.Store, prefix string, bodies [][]byte, w int) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan int)
	)
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if _, err := objs.Put(ctx, fmt.Sprintf("%s%d.html", prefix, i), bodies[i], objstore.PutOptions{Generation: 1}); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range bodies {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// BenchmarkSweepNothingToRepair measures a sweep over -publish.sweep-pages
// published pages (100,000 by default) that are all as they should be,
// against a naive sweep that reads every body and compares its hash, in
// the same run: x/baseline is the sweep's time over the naive sweep's.
func BenchmarkSweepNothingToRepair(b *testing.B) {
	b.Run("mem", func(b *testing.B) { benchSweep(b, mem.New()) })
	b.Run("dir", func(b *testing.B) {
		s, err := dir.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		s.NoSync = true // setup speed only; a sweep never writes
		benchSweep(b, s)
	})
}

// seedWiki is a database and store holding n published pages of one
// source, written directly (setup speed), with the listings refreshed;
// hashes are the page bodies' hashes by page ID.
func seedWiki(b *testing.B, objs objstore.Store, n int) (db *sqlstore.DB, env sqltest.Env, src tidemark.Source, svc *publish.Service, hashes map[string]string) {
	ctx := context.Background()
	db, env, src = benchDB(b)
	hashes = make(map[string]string, n)
	tx, err := db.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	now := env.Clock.Now().UnixMilli()
	// Each page links to its neighbours, as a publication records them.
	link := func(i int) string {
		if i < 0 || i >= n {
			return ""
		}
		return fmt.Sprintf("p%07d/change e%07d", i, i)
	}
	for i := range n {
		evID, sumID, pageID := fmt.Sprintf("e%07d", i), fmt.Sprintf("s%07d", i), fmt.Sprintf("p%07d", i)
		ev := tidemark.HashEvidence([]byte(evID))
		body := []byte(fmt.Sprintf("<!doctype html><title>change %d</title><p>Change %d does a thing.</p>", i, i))
		info, err := objs.Put(ctx, publish.PageKey(pageID), body, objstore.PutOptions{Generation: 1})
		if err != nil {
			b.Fatal(err)
		}
		hashes[pageID] = tidemark.HashEvidence(body)
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO events (id, source_id, item_key, title, occurred_at, evidence_hash, revision, run_id, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, 1, 'r', $5, $5)`, []any{evID, src.ID, evID, "change " + evID, now + int64(i), ev}},
			{`INSERT INTO event_revisions (event_id, revision, evidence_hash, evidence, run_id, created_at)
				VALUES ($1, 1, $2, $3, 'r', $4)`, []any{evID, ev, []byte(evID), now}},
			{`INSERT INTO summaries (id, event_id, evidence_hash, prompt_version, model, text, text_hash, is_current, published_at, published_generation, created_at)
				VALUES ($1, $2, $3, 'p', 'm', 'text', 'h', 1, $4, 1, $4)`, []any{sumID, evID, ev, now}},
			{`INSERT INTO pages (id, event_id, source_id, summary_id, evidence_hash, generation, published_summary_id,
				published_generation, published_etag, published_at, created_at, updated_at, title, neighbours)
				VALUES ($1, $2, $3, $4, $5, 1, $4, 1, $6, $7, $7, $7, $8, $9)`,
				[]any{pageID, evID, src.ID, sumID, ev, info.ETag, now, "change " + evID, link(i-1) + "|" + link(i+1)}},
		} {
			if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	svc = &publish.Service{Store: db.Publish(), Objects: objs}
	if _, err := svc.RefreshListings(ctx); err != nil {
		b.Fatal(err)
	}
	if os.Getenv("TIDEMARK_BENCH_VERBOSE") != "" {
		b.Logf("%d pages set up", n)
	}
	return db, env, src, svc, hashes
}

func benchSweep(b *testing.B, objs objstore.Store) {
	ctx := context.Background()
	n := *sweepPages
	_, _, _, svc, hashes := seedWiki(b, objs, n)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		rep, err := svc.Sweep(ctx)
		if err != nil || rep.Republished+rep.Withdrawn+rep.Orphans+rep.Failed+rep.Relinked+rep.Listings.Written != 0 || rep.Pages != n {
			b.Fatalf("sweep with nothing to repair: %+v %v", rep, err)
		}
	}
	sweep := time.Since(start) / time.Duration(b.N)
	b.StopTimer()

	// The naive sweep: read every body and compare its hash with the books.
	start = time.Now()
	for pageID, want := range hashes {
		o, err := objs.Get(ctx, publish.PageKey(pageID))
		if err != nil || tidemark.HashEvidence(o.Body) != want {
			b.Fatalf("naive sweep: %s: %v", pageID, err)
		}
	}
	naive := time.Since(start)
	b.ReportMetric(float64(n), "pages")
	b.ReportMetric(sweep.Seconds(), "s/sweep")
	b.ReportMetric(naive.Seconds(), "s/naive")
	b.ReportMetric(sweep.Seconds()/naive.Seconds(), "x/baseline")
}

var historyPages = flag.Int("publish.history-pages", 20000, "published pages before the pass in BenchmarkPublishOneMore")

// BenchmarkPublishOneMore measures a publishing pass of one new change
// (the page, its neighbour's relink, the listings) over a wiki of
// -publish.history-pages pages, against the same pass over a wiki of two
// listing pages, measured in the same run: x/baseline is the long
// history's pass time over the short one's. A pass that rewrote or
// re-rendered the whole history would grow with it. The s3 case runs with
// TIDEMARK_TEST_S3_ENDPOINT set (.ci/s3.sh).
func BenchmarkPublishOneMore(b *testing.B) {
	for _, name := range []string{"mem", "dir", "s3"} {
		b.Run(name, func(b *testing.B) {
			open := func() objstore.Store {
				switch name {
				case "mem":
					return mem.New()
				case "s3":
					return objstoretest.S3(b, "")
				}
				s, err := dir.Open(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
			long, short := newOneMore(b, open(), *historyPages), newOneMore(b, open(), 2*publish.ListPageSize)
			var tLong, tShort time.Duration
			b.ResetTimer()
			for i := range b.N {
				tLong += long.pass(b, i)
				tShort += short.pass(b, i)
			}
			b.StopTimer()
			b.ReportMetric(tLong.Seconds()/float64(b.N), "s/pass")
			b.ReportMetric(tShort.Seconds()/float64(b.N), "s/baseline-pass")
			b.ReportMetric(tLong.Seconds()/tShort.Seconds(), "x/baseline")
		})
	}
}

type oneMore struct {
	db  *sqlstore.DB
	env sqltest.Env
	src tidemark.Source
	svc *publish.Service
}

func newOneMore(b *testing.B, objs objstore.Store, n int) *oneMore {
	db, env, src, svc, _ := seedWiki(b, objs, n)
	return &oneMore{db, env, src, svc}
}

// pass adds the i-th new change with its summary, untimed, and returns how
// long the publishing pass took.
func (o *oneMore) pass(b *testing.B, i int) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	key := fmt.Sprintf("new%06d", i)
	items := []tidemark.Item{{Key: key, Title: "change " + key, OccurredAt: o.env.Clock.Now().Add(time.Hour), Evidence: []byte("commit " + key + "\n")}}
	c, err := o.db.Ingest().Claim(ctx, o.src.ID, "bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	rep, err := o.db.Ingest().Settle(ctx, c, ingest.Settlement{Items: items, Cursor: key, NextDueAt: o.env.Clock.Now()})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := o.db.Publish().Accept(ctx, publish.NewSummary{EventID: rep.EventIDs[0], EvidenceHash: items[0].EvidenceHash(),
		Draft: summarize.Draft{Text: "Change " + key + " does a thing.", Model: "m", PromptVersion: "p"}}); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	start := time.Now()
	prep, err := o.svc.PublishPending(ctx, 10)
	took := time.Since(start)
	if err != nil || prep.Published != 1 || prep.Failed != 0 {
		b.Fatalf("pass: %+v %v", prep, err)
	}
	return took
}

// BenchmarkMarkGroupCommit measures what committing the marks of
// publications that finish together in one transaction (BatchMarker)
// buys a publishing pass: in each round the same number of new pages is
// published by a service whose store batches marks and by one whose store
// marks each page on its own, alternately, on one database and an
// in-memory object store (so the database is what is measured).
// x/baseline is the grouped pass's pages/s over the one-by-one pass's.
func BenchmarkMarkGroupCommit(b *testing.B) {
	for _, be := range sqltest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			ctx := context.Background()
			db, env, src := benchDBOn(b, be)
			st := db.Publish()
			objs := mem.New()
			grouped := &publish.Service{Store: st, Objects: objs}
			single := &publish.Service{Store: struct{ publish.Store }{st}, Objects: objs}
			if _, ok := grouped.Store.(publish.BatchMarker); !ok {
				b.Fatal("the SQL store does not batch marks")
			}
			if _, ok := single.Store.(publish.BatchMarker); ok {
				b.Fatal("the baseline's store batches marks")
			}
			n := *pendingPages
			var took [2]time.Duration
			seq := 0
			for range b.N {
				for i, svc := range []*publish.Service{grouped, single} {
					b.StopTimer()
					items := make([]tidemark.Item, n)
					for j := range items {
						key := fmt.Sprintf("m%07d", seq)
						seq++
						items[j] = tidemark.Item{Key: key, Title: "change " + key, OccurredAt: env.Clock.Now(),
							Evidence: []byte("commit " + key + "\n\n    a change\n")}
					}
					c, err := db.Ingest().Claim(ctx, src.ID, "bench", time.Hour)
					if err != nil {
						b.Fatal(err)
					}
					rep, err := db.Ingest().Settle(ctx, c, ingest.Settlement{Items: items, Cursor: fmt.Sprint(seq), NextDueAt: env.Clock.Now()})
					if err != nil {
						b.Fatal(err)
					}
					for j, evID := range rep.EventIDs {
						if _, _, err := st.Accept(ctx, publish.NewSummary{EventID: evID, EvidenceHash: items[j].EvidenceHash(),
							Draft: summarize.Draft{Text: fmt.Sprintf("Change %d does a thing.", j), Model: "m", PromptVersion: "p"}}); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					start := time.Now()
					prep, err := svc.PublishPendingPages(ctx, n)
					took[i] += time.Since(start)
					if err != nil || prep.Published != n || prep.Failed != 0 {
						b.Fatalf("publish pending: %+v %v", prep, err)
					}
				}
			}
			b.StopTimer()
			g, s := float64(n*b.N)/took[0].Seconds(), float64(n*b.N)/took[1].Seconds()
			b.ReportMetric(g, "grouped-pages/s")
			b.ReportMetric(s, "single-pages/s")
			b.ReportMetric(g/s, "x/baseline")
		})
	}
}
