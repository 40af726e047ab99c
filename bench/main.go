// Command bench compares tidemark's claim → settle path with River's job
// burn-down on the same PostgreSQL, in one run, interleaved and repeated,
// and prints tidemark's throughput as a ratio of River's at each worker
// count; then tidemark's figures on SQLite.
//
// It is its own module, so the main module gains no dependency on River:
//
//	cd bench
//	go run . -db 'postgres://tidemark:tidemark@127.0.0.1:5432/tidemark?sslmode=disable'
//
// Both sides do nothing but their bookkeeping: River works no-op jobs that
// were inserted before the clock starts, counted when their completion is
// in the database (River's completer emits the event after its batch
// commits); tidemark's scheduler runs due sources whose fetch returns
// nothing new, counted when each settlement (cursor, run, audit row) has
// committed. Each measurement gets the same pool size and a fresh burn-down
// of the same number of items.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
)

func main() {
	var (
		dbURL    = flag.String("db", os.Getenv("TIDEMARK_TEST_POSTGRES_URL"), "PostgreSQL URL (default $TIDEMARK_TEST_POSTGRES_URL); empty: SQLite only")
		items    = flag.Int("n", 5000, "jobs (River) and due sources (tidemark) per measurement")
		workers  = flag.String("workers", "1,4,16,64", "worker counts, comma-separated")
		rounds   = flag.Int("rounds", 3, "repetitions of each measurement (the median is reported)")
		conns    = flag.Int("conns", 20, "connection pool size of each side")
		noSQLite = flag.Bool("no-sqlite", false, "skip the SQLite figures")
		cooldown = flag.Duration("river-fetch-cooldown", river.FetchCooldownMin, "River's FetchCooldown in the per-worker rows (its fastest by default)")
	)
	flag.Parse()
	var ws []int
	for _, f := range strings.Split(*workers, ",") {
		w, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || w < 1 {
			fatal(fmt.Errorf("-workers %q: want positive integers", *workers))
		}
		ws = append(ws, w)
	}
	ctx := context.Background()
	if *dbURL != "" {
		if err := comparePostgres(ctx, *dbURL, *items, ws, *rounds, *conns, *cooldown); err != nil {
			fatal(err)
		}
	}
	if !*noSQLite {
		if err := sqliteFigures(ctx, *items, ws, *rounds); err != nil {
			fatal(err)
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func comparePostgres(ctx context.Context, base string, n int, ws []int, rounds, conns int, cooldown time.Duration) error {
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return err
	}
	defer admin.Close()
	riverURL, dropRiver, err := freshSchema(ctx, admin, base, "river")
	if err != nil {
		return err
	}
	defer dropRiver()
	tideURL, dropTide, err := freshSchema(ctx, admin, base, "tidemark")
	if err != nil {
		return err
	}
	defer dropTide()

	rb, err := newRiverBench(ctx, riverURL, conns)
	if err != nil {
		return err
	}
	defer rb.close()
	tb, err := newTidemarkBench(ctx, tideURL, n, conns)
	if err != nil {
		return err
	}
	defer tb.close()

	riverRates := map[int][]float64{}
	tideRates := map[int][]float64{}
	var riverDefault, tideDefault []float64
	for r := 0; r < rounds; r++ {
		// Each at its defaults: River with 100 workers (its documentation's
		// example) and its default fetch cooldown; tidemark's run with its
		// default 4 workers.
		rr, err := rb.burnDown(ctx, 100, n, 0)
		if err != nil {
			return fmt.Errorf("river at defaults: %w", err)
		}
		tr, err := tb.settleAll(ctx, 4)
		if err != nil {
			return fmt.Errorf("tidemark at defaults: %w", err)
		}
		riverDefault, tideDefault = append(riverDefault, rr), append(tideDefault, tr)
		fmt.Fprintf(os.Stderr, "round %d, defaults:   river %8.0f jobs/s, tidemark %8.0f runs/s\n", r+1, rr, tr)
		for _, w := range ws {
			rr, err := rb.burnDown(ctx, w, n, cooldown)
			if err != nil {
				return fmt.Errorf("river, %d workers: %w", w, err)
			}
			tr, err := tb.settleAll(ctx, w)
			if err != nil {
				return fmt.Errorf("tidemark, %d workers: %w", w, err)
			}
			riverRates[w] = append(riverRates[w], rr)
			tideRates[w] = append(tideRates[w], tr)
			fmt.Fprintf(os.Stderr, "round %d, %2d workers: river %8.0f jobs/s, tidemark %8.0f runs/s\n", r+1, w, rr, tr)
		}
	}
	fmt.Printf("\nPostgreSQL, %d items per measurement, median of %d rounds, interleaved:\n", n, rounds)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\triver jobs/s\ttidemark runs/s\ttidemark/river\t")
	bestRiver, bestTide := 0.0, 0.0
	for _, w := range ws {
		rm, tm := median(riverRates[w]), median(tideRates[w])
		bestRiver, bestTide = max(bestRiver, rm), max(bestTide, tm)
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.2f×\t\n", w, rm, tm, tm/rm)
	}
	fmt.Fprintf(tw, "best\t%.0f\t%.0f\t%.2f×\t\n", bestRiver, bestTide, bestTide/bestRiver)
	rd, td := median(riverDefault), median(tideDefault)
	fmt.Fprintf(tw, "defaults\t%.0f\t%.0f\t%.2f×\t\n", rd, td, td/rd)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Printf("(River's FetchCooldown %s in the per-worker rows; \"defaults\": River 100 workers, FetchCooldown %s; tidemark 4 workers)\n",
		cooldown, river.FetchCooldownDefault)
	return nil
}

func sqliteFigures(ctx context.Context, n int, ws []int, rounds int) error {
	dir, err := os.MkdirTemp("", "tidemark-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tb, err := newTidemarkBench(ctx, "sqlite:"+filepath.Join(dir, "bench.db"), n, 0)
	if err != nil {
		return err
	}
	defer tb.close()
	fmt.Printf("\nSQLite, %d due sources per measurement, median of %d rounds:\n", n, rounds)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\ttidemark runs/s\t")
	for _, w := range ws {
		var rates []float64
		for r := 0; r < rounds; r++ {
			rate, err := tb.settleAll(ctx, w)
			if err != nil {
				return fmt.Errorf("sqlite, %d workers: %w", w, err)
			}
			rates = append(rates, rate)
		}
		fmt.Fprintf(tw, "%d\t%.0f\t\n", w, median(rates))
	}
	return tw.Flush()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// freshSchema creates a schema of its own and returns a URL whose
// connections use it, and a function that drops it.
func freshSchema(ctx context.Context, admin *sql.DB, base, name string) (string, func(), error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	schema := "bench_" + name + "_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(ctx, `CREATE SCHEMA `+schema); err != nil {
		return "", nil, fmt.Errorf("create schema: %w", err)
	}
	drop := func() { _, _ = admin.ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`) }
	u, err := url.Parse(base)
	if err != nil {
		drop()
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// River's side.

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

type riverBench struct {
	pool *pgxpool.Pool
}

func newRiverBench(ctx context.Context, dbURL string, conns int) (*riverBench, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		pool.Close()
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	return &riverBench{pool: pool}, nil
}

func (rb *riverBench) close() { rb.pool.Close() }

// burnDown inserts n jobs, then starts a client with w workers and returns
// jobs/s until every job's completion is in the database. A zero cooldown
// is River's default.
func (rb *riverBench) burnDown(ctx context.Context, w, n int, cooldown time.Duration) (float64, error) {
	if _, err := rb.pool.Exec(ctx, `DELETE FROM river_job`); err != nil {
		return 0, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	client, err := river.NewClient(riverpgxv5.New(rb.pool), &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: w}},
		Workers:       workers,
		FetchCooldown: cooldown, // 0: River's default
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return 0, err
	}
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{}}
	}
	if _, err := client.InsertManyFast(ctx, params); err != nil {
		return 0, err
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: n + 1})
	defer cancel()
	t0 := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	timeout := time.After(10 * time.Minute)
	for done := 0; done < n; {
		select {
		case <-events:
			done++
		case <-timeout:
			return 0, errors.New("river did not complete its jobs in 10 minutes")
		}
	}
	d := time.Since(t0)
	if err := client.Stop(ctx); err != nil {
		return 0, err
	}
	var completed int
	if err := rb.pool.QueryRow(ctx, `SELECT COUNT(*) FROM river_job WHERE state = 'completed'`).Scan(&completed); err != nil {
		return 0, err
	}
	if completed != n {
		return 0, fmt.Errorf("%d of %d jobs completed in the database", completed, n)
	}
	return float64(n) / d.Seconds(), nil
}

// tidemark's side.

type noopFetcher struct{}

func (noopFetcher) Fetch(_ context.Context, _ tidemark.Source, cursor string) (tidemark.FetchResult, error) {
	return tidemark.FetchResult{Cursor: cursor}, nil
}

type tidemarkBench struct {
	db *sqlstore.DB
	n  int
}

func newTidemarkBench(ctx context.Context, dbURL string, n, conns int) (*tidemarkBench, error) {
	// As the daemon opens it: with this host's liveness probe, so that the
	// claim path pays for the takeover of crashed holders as it does there.
	db, err := sqlstore.Open(ctx, dbURL, sqlstore.Options{MaxOpenConns: conns, Liveness: ingest.Local()})
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		if _, err := db.Ingest().AddSource(ctx, ingest.NewSource{Name: fmt.Sprintf("s%06d", i), Kind: "noop", Location: "x",
			Interval: time.Hour, RetryBudget: 3}); err != nil {
			db.Close()
			return nil, err
		}
	}
	return &tidemarkBench{db: db, n: n}, nil
}

func (tb *tidemarkBench) close() { tb.db.Close() }

// settleAll makes every source due, runs the daemon's scheduler with w
// workers until every source has settled, and returns runs/s.
func (tb *tidemarkBench) settleAll(ctx context.Context, w int) (float64, error) {
	if _, err := tb.db.SQL().ExecContext(ctx, `UPDATE sources SET next_due_at = 0`); err != nil {
		return 0, err
	}
	svc := &ingest.Service{Store: tb.db.Ingest(), Fetchers: ingest.Fetchers{"noop": noopFetcher{}}, Clock: clock.System{},
		Holder: "bench", LeaseTTL: time.Minute}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var settled, failed atomic.Int64
	var firstErr atomic.Value
	sc := &ingest.Scheduler{Service: svc, Workers: w, Poll: time.Second, OnReport: func(r ingest.Report, err error) {
		if err != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
		}
		if settled.Add(1) == int64(tb.n) {
			stop()
		}
	}}
	t0 := time.Now()
	if err := sc.Run(runCtx); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	if n := failed.Load(); n > 0 {
		return 0, fmt.Errorf("%d runs failed; first: %v", n, firstErr.Load())
	}
	return float64(tb.n) / d.Seconds(), nil
}
