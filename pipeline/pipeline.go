// Package pipeline joins tidemark's pipelines into one program: ingest,
// publish, the outbox and documents over one database and one object
// store. The CLI, the web console and the API, and any program that embeds
// tidemark, use the same operations from here:
//
//	p, err := pipeline.Open(ctx, cfg)
//	if err != nil {
//		return err
//	}
//	defer p.Close()
//	res, err := p.RunOnce(ctx, pipeline.OnceOptions{})
//
// Open wires the pipelines; RunOnce ingests every due source until it has
// caught up, publishes, and delivers; Run is the daemon: the ingest
// scheduler and the publish, outbox and migration loops in one group.
//
// A new source starts from NewSource (the configured defaults) and is
// stored by AddSource. The wiki's pages are objects of the store Objects
// opens: a change's page under publish.PageKey(eventID)
// ("changes/EVENT.html"), the index under publish.IndexKey; Events lists
// the changes.
package pipeline

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/ids"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/stores"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/summarize"
	"github.com/tidemark/tidemark/summarize/summarizers"
)

// Pipeline is an open tidemark: its database, its object store (opened on
// first use) and the pipelines over them. It is safe for concurrent use:
// RunOnce from several goroutines, Run beside RunOnce, or two Pipelines
// over one database in one process are separate workers, each claiming
// under a holder of its own (see Holder), and pass over what the others
// hold.
type Pipeline struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Clock
	db    *sqlstore.DB
	kinds *kinds.Set
	// live tells which holders of this host are gone: the store's, and
	// the lanes' health (a write in flight whose writer is gone).
	live *ingest.Liveness
	// running are the sources with a run in flight in this process
	// (ingest.Service.Running), shared by every Service Ingest makes.
	running ingest.Running
	// ops are the operations in flight, which Close stops.
	ops ops

	objsMu sync.Mutex
	objs   objstore.Store

	// observers are told every publishing round and sweep this process
	// runs (Config.Observer, and those AddObserver adds).
	obsMu     sync.Mutex
	observers []PublishObserver
}

// Open checks cfg (see Config.Check), opens the database (creating the
// embedded default under Home when no database is named) and wires the
// pipelines. The object store is opened when first used.
func Open(ctx context.Context, cfg Config) (*Pipeline, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	p := &Pipeline{cfg: cfg, log: cfg.Logger, clock: cfg.Clock}
	if cfg.Observer != nil {
		p.observers = []PublishObserver{cfg.Observer}
	}
	if p.log == nil {
		p.log = cfg.defaultLogger()
	}
	if p.clock == nil {
		p.clock = clock.System{}
	}
	if cfg.IDs == nil {
		p.cfg.IDs = ids.NewULIDs(p.clock, rand.Reader)
	}
	if cfg.Database == "" {
		if err := p.checkHome(); err != nil {
			return nil, err
		}
	}
	p.kinds = p.newKinds()
	// Liveness lets this process take over at once the claims of a crashed
	// process of this host, rather than wait out their leases.
	p.live = ingest.Local()
	db, err := sqlstore.Open(ctx, cfg.DatabaseURL(), sqlstore.Options{Clock: p.clock, IDs: p.cfg.IDs, Liveness: p.live,
		// A change of a source's settings keys it as source add does.
		SourceKey: p.kinds.Key})
	if err != nil {
		return nil, err
	}
	// Lanes stored before secrets were kept apart give them up now.
	if _, err := db.Outbox().SealLaneSecrets(ctx, providers.Split); err != nil {
		db.Close()
		return nil, fmt.Errorf("seal lane secrets: %w", err)
	}
	// Intents drafted before drafting compared what the provider tells
	// apart are given it now.
	if _, err := db.Outbox().FillMatches(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("fill intent matches: %w", err)
	}
	p.db = db
	p.checkDatabaseMode()
	return p, nil
}

// defaultLogger is the logger of a Config with none: what the CLI builds,
// text on stderr at LogLevel.
func (c Config) defaultLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: c.LogLevel}))
}

// warn says what a check could not decide but did not refuse: to
// Config.Warn, or logged.
func (p *Pipeline) warn(msg string) {
	if p.cfg.Warn != nil {
		p.cfg.Warn(msg)
		return
	}
	if p.log != nil {
		p.log.Warn(msg)
	}
}

// checkDatabaseMode warns when a SQLite database file may be read by
// other users than its owner: it holds the lanes' secrets in clear. So do
// its -wal and -shm files while they exist (a secret set a moment ago is
// in the -wal until a checkpoint), which keep the mode they were made
// with when the database's is changed: each is checked, and those others
// may read are named. A database tidemark creates is its owner's only;
// one made otherwise (or by an older tidemark) keeps the mode it has,
// since its owner may share it on purpose, but is said.
func (p *Pipeline) checkDatabaseMode() {
	path, ok := strings.CutPrefix(p.cfg.DatabaseURL(), "sqlite:")
	if !ok || runtime.GOOS == "windows" {
		return
	}
	path = strings.TrimPrefix(path, "//")
	var shown, names []string
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil || fi.Mode().Perm()&0o077 == 0 {
			continue // absent (the sidecars come and go), or its owner's only
		}
		shown = append(shown, fmt.Sprintf("%s (mode %#o)", name, fi.Mode().Perm()))
		names = append(names, name)
	}
	if len(names) == 0 {
		return
	}
	files := "the database file " + shown[0]
	if len(shown) > 1 {
		files = "the database's files " + strings.Join(shown, ", ")
	}
	p.warn(fmt.Sprintf("%s may be read by other users, and the database holds the outbox lanes' secrets in clear: "+
		"protect it as a password file (chmod 600 %s; its -wal and -shm files too, whenever they exist)",
		files, strings.Join(names, " ")))
}

// newKinds returns every source kind, with git mirrors under Home, the
// rest of this worker's data.
func (p *Pipeline) newKinds() *kinds.Set {
	cache, err := filepath.Abs(filepath.Join(p.cfg.Home, "git"))
	if err != nil {
		cache = filepath.Join(p.cfg.Home, "git")
	}
	return kinds.New(kinds.Options{GitCache: cache, Warn: p.warn})
}

// Close stops every operation in flight (Run, RunOnce, RunSource,
// DeliverOnce, DeliverLoop) as if its context had been cancelled, waits for
// them to return (a fetch in flight is failed without spending its budget,
// a lane's lease given back), and then closes the database and the object
// store. An operation that has not returned after a minute is left, and
// Close says so; to bound the wait yourself, cancel the contexts you gave
// Run and RunOnce and wait for them to return before Close. Once closed,
// those operations, and every other method that reads or writes the
// database or the store, return ErrClosed; closing again is harmless, and so is
// closing the nil *Pipeline a failed Open returns.
func (p *Pipeline) Close() error {
	if p == nil {
		return nil
	}
	var stuck error
	if !p.ops.stop(closeWait) {
		stuck = fmt.Errorf("close: operations still running after %v were stopped; closing under them: %w", closeWait, tidemark.ErrUnavailable)
	}
	p.objsMu.Lock()
	if c, ok := p.objs.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	p.objsMu.Unlock()
	return errors.Join(stuck, p.db.Close())
}

// Config is the configuration the pipeline was opened with.
func (p *Pipeline) Config() Config { return p.cfg }

// DB is the database, for reads the pipeline has no operation for.
func (p *Pipeline) DB() *sqlstore.DB { return p.db }

// Logger is the pipeline's logger.
func (p *Pipeline) Logger() *slog.Logger { return p.log }

// Clock is the pipeline's clock.
func (p *Pipeline) Clock() clock.Clock { return p.clock }

// Kinds are the source kinds this pipeline serves.
func (p *Pipeline) Kinds() *kinds.Set { return p.kinds }

// checkHome makes sure the data directory exists and can be written before
// the embedded default stores anything there. A home that cannot be used is
// the configuration's to fix (invalid input), said plainly.
func (p *Pipeline) checkHome() error {
	home := p.cfg.Home
	bad := func(err error) error {
		return tidemark.Invalidf("--home", home, "cannot use it as the data directory (%v); choose a writable directory with --home or TIDEMARK_HOME", err)
	}
	// The home holds the database, with the lanes' secrets in clear: one
	// made here is its owner's only. One that exists keeps its mode.
	if err := os.MkdirAll(home, 0o700); err != nil {
		return bad(err)
	}
	f, err := os.CreateTemp(home, ".write-check-*")
	if err != nil {
		return bad(err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// Holder is this worker's identity for claims: Config.Holder, or host:pid.
// Each operation that claims works under a slot of it of its own (see
// ingest.HolderSlot): Holder itself for the first in the process,
// Holder#n for each other one running beside it.
func (p *Pipeline) Holder() string {
	if p.cfg.Holder != "" {
		return p.cfg.Holder
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return ingest.HolderID(host, os.Getpid())
}

// Ingest is the ingest pipeline, working under Holder itself. It is for
// one operation at a time in the process: Run, RunOnce and RunSource each
// give theirs a holder slot of its own, and may run beside each other.
func (p *Pipeline) Ingest() *ingest.Service { return p.ingestAs(p.Holder()) }

// ingestAs is the ingest pipeline working under holder.
func (p *Pipeline) ingestAs(holder string) *ingest.Service {
	retry := ingest.DefaultRetryPolicy()
	retry.Span = p.cfg.OutageSpan
	return &ingest.Service{
		Retry:    &retry,
		Store:    p.db.Ingest(),
		Fetchers: p.kinds.Fetchers(),
		Clock:    p.clock,
		Rand:     ids.NewRand(uint64(os.Getpid())),
		Holder:   holder,
		// Every fetch ends: a hung upstream (a git remote that never
		// answers) is unreachable after this, not a run held forever by
		// its heartbeats.
		FetchTimeout: 10 * time.Minute,
		Logger:       p.log,
		Running:      &p.running,
	}
}

// Objects is the object store the wiki lives in, opened on first use.
func (p *Pipeline) Objects() (objstore.Store, error) {
	if err := p.checkOpen(context.Background()); err != nil {
		return nil, err // and no store opened that nobody would close
	}
	p.objsMu.Lock()
	defer p.objsMu.Unlock()
	if p.objs != nil {
		return p.objs, nil
	}
	if p.cfg.Store == "" {
		if err := p.checkHome(); err != nil {
			return nil, err
		}
	}
	objs, err := stores.Open(p.cfg.From("store", "--store"), p.cfg.StoreLocation(), p.cfg.S3)
	if err != nil {
		return nil, err
	}
	p.objs = objs
	return objs, nil
}

// IndexLocation is where a user finds the wiki's index.
func (p *Pipeline) IndexLocation() string {
	return stores.Locate(p.cfg.StoreLocation(), publish.IndexKey)
}

// Publisher is the publish pipeline over the wiki's store. Publications
// draft the outbox's intents inside the transaction that marks a page
// published, and page documents override what a change page shows. It
// does not check that the store is the wiki's: BindStore does.
func (p *Pipeline) Publisher() (*publish.Service, error) {
	if err := p.checkOpen(context.Background()); err != nil {
		return nil, err
	}
	objs, err := p.Objects()
	if err != nil {
		return nil, err
	}
	return &publish.Service{Store: p.db.Publish().WithHooks(p.db.Outbox().PublishHook()), Objects: objs, Logger: p.log,
		Holder:  p.Holder(),
		BaseURL: p.cfg.WikiURL, StoreLocation: stores.Canonical(p.cfg.StoreLocation()),
		Overrides: pageDocuments{p.db.Content()},
	}, nil
}

// BindStore returns the publish pipeline after checking that the store is
// the one this database's wiki lives in (binding it if the wiki lives in
// none yet). A worker whose store differs is refused, with the fix. The
// publisher claims the events it summarizes under the holder slot of the
// operation ctx carries (see enter), so two operations of one process do
// not take each other's claims for their own.
func (p *Pipeline) BindStore(ctx context.Context) (*publish.Service, error) {
	if err := p.checkOpen(ctx); err != nil {
		return nil, err
	}
	svc, err := p.Publisher()
	if err != nil {
		return nil, err
	}
	svc.Holder = p.holderOf(ctx)
	if _, err := svc.BindStore(ctx); err != nil {
		return nil, err
	}
	return svc, nil
}

// Summarizer builds the summarizer called name ("": Config.Summarizer).
func (p *Pipeline) Summarizer(name string) (summarize.Summarizer, error) {
	if err := p.checkOpen(context.Background()); err != nil {
		return nil, err
	}
	flag := "--summarizer"
	if name == "" {
		name, flag = p.cfg.Summarizer, "TIDEMARK_SUMMARIZER"
	}
	return summarizers.Open(flag, name, p.cfg.OpenAI)
}

// Migrator carries out field migrations of documents, working under
// Holder itself (as Ingest does).
func (p *Pipeline) Migrator() *content.Migrator { return p.migratorAs(p.Holder()) }

func (p *Pipeline) migratorAs(holder string) *content.Migrator {
	return &content.Migrator{Store: p.db.Content(), Holder: holder}
}

// pageDocuments adapts the documents' built-in pages collection to the
// publish pipeline's overrides.
type pageDocuments struct{ st *sqlstore.ContentStore }

func (d pageDocuments) PageOverride(ctx context.Context, eventID string) (publish.Override, bool, error) {
	o, ok, err := d.st.PageOverrides(ctx, eventID)
	if err != nil || !ok {
		return publish.Override{}, false, err
	}
	out := publish.Override{Notes: o.NotesText}
	if o.HasTitle {
		out.Title = o.Title
	}
	return out, true, nil
}
