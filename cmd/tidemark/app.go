package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/ids"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/sqlstore"
)

// app is what every subcommand shares: configuration from flags and the
// environment, and the database, opened on first use.
type app struct {
	stdout, stderr io.Writer
	log            *slog.Logger

	home, dbURL, storeURL, holder, logLevel string

	clock clock.Clock
	ids   ids.Source
	db    *sqlstore.DB

	// onceUndone, during `run --once`, collects what its steps after
	// ingest left undone ("2 pages not published"); nil otherwise.
	onceUndone *[]string
}

// leftUndone records work a `run --once` step could not do.
func (a *app) leftUndone(format string, args ...any) {
	if a.onceUndone != nil {
		*a.onceUndone = append(*a.onceUndone, fmt.Sprintf(format, args...))
	}
}

func (a *app) close() {
	if a.db != nil {
		a.db.Close()
	}
}

func (a *app) clk() clock.Clock {
	if a.clock == nil {
		a.clock = clock.System{}
	}
	return a.clock
}

// databaseURL is --db, or the embedded default under --home.
func (a *app) databaseURL() string {
	if a.dbURL != "" {
		return a.dbURL
	}
	return "sqlite:" + filepath.Join(a.home, "tidemark.db")
}

// storeLocation is --store, or the embedded default under --home.
func (a *app) storeLocation() string {
	if a.storeURL != "" {
		return a.storeURL
	}
	return filepath.Join(a.home, "wiki")
}

func (a *app) open(ctx context.Context) (*sqlstore.DB, error) {
	if a.db != nil {
		return a.db, nil
	}
	if a.dbURL == "" {
		if err := a.checkHome(); err != nil {
			return nil, err
		}
	}
	if a.ids == nil {
		a.ids = ids.NewULIDs(a.clk(), rand.Reader)
	}
	// Liveness lets this process take over at once the claims of a crashed
	// process of this host, rather than wait out their leases.
	db, err := sqlstore.Open(ctx, a.databaseURL(), sqlstore.Options{Clock: a.clk(), IDs: a.ids, Liveness: ingest.Local()})
	if err != nil {
		return nil, err
	}
	// Lanes stored before secrets were kept apart give them up now.
	if _, err := db.Outbox().SealLaneSecrets(ctx, providers.Split); err != nil {
		db.Close()
		return nil, fmt.Errorf("seal lane secrets: %w", err)
	}
	a.db = db
	return db, nil
}

// checkHome makes sure the data directory exists and can be written before
// the embedded default stores anything there. A home that cannot be used is
// the command line's to fix (exit 2), said plainly, not an internal error.
func (a *app) checkHome() error {
	bad := func(err error) error {
		return tidemark.Invalidf("--home", a.home, "cannot use it as the data directory (%v); choose a writable directory with --home or TIDEMARK_HOME", err)
	}
	if err := os.MkdirAll(a.home, 0o755); err != nil {
		return bad(err)
	}
	f, err := os.CreateTemp(a.home, ".write-check-*")
	if err != nil {
		return bad(err)
	}
	f.Close()
	return os.Remove(f.Name())
}

func (a *app) holderID() string {
	if a.holder != "" {
		return a.holder
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return ingest.HolderID(host, os.Getpid())
}

// fetcherKinds holds a constructor per source kind; each kind's file adds
// its own in init.
var fetcherKinds = map[string]func(*app) tidemark.Fetcher{}

func registerFetcher(kind string, f func(*app) tidemark.Fetcher) {
	if _, dup := fetcherKinds[kind]; dup {
		panic("duplicate fetcher kind " + kind)
	}
	fetcherKinds[kind] = f
}

func (a *app) fetchers() ingest.Fetchers {
	fs := ingest.Fetchers{}
	for kind, f := range fetcherKinds {
		fs[kind] = f(a)
	}
	return fs
}

// ingestService opens the database and wires the ingest pipeline.
func (a *app) ingestService(ctx context.Context) (*ingest.Service, error) {
	db, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	retry := ingest.DefaultRetryPolicy()
	if v := os.Getenv("TIDEMARK_OUTAGE_SPAN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, tidemark.Invalidf("TIDEMARK_OUTAGE_SPAN", v, "want a duration such as 24h or 72h (0: terminal as soon as the budget is spent)")
		}
		retry.Span = d
	}
	return &ingest.Service{
		Retry:    &retry,
		Store:    db.Ingest(),
		Fetchers: a.fetchers(),
		Clock:    a.clk(),
		Rand:     ids.NewRand(uint64(os.Getpid())),
		Holder:   a.holderID(),
		// Every fetch ends: a hung upstream (a git remote that never
		// answers) is unreachable after this, not a run held forever by
		// its heartbeats.
		FetchTimeout: 10 * time.Minute,
		Logger:       a.log,
	}, nil
}
