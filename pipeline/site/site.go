// Package site assembles tidemark's web console, wiki and API over an open
// pipeline: the one wiring `tidemark serve` uses, and the browser tests
// drive, so what is tested is what is served. Neither the pipeline nor the
// web package knows the other; this package joins them.
package site

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/web"
)

// Options are the server's own settings; everything else comes from the
// pipeline.
type Options struct {
	// Hosts are the names the server answers for besides IP addresses and
	// localhost (web.HostCheck).
	Hosts []string
	// PublicMetrics serves /metrics without a token.
	PublicMetrics bool
	// SecureCookies marks the session cookie Secure (TLS ends at a proxy).
	SecureCookies bool
	// SessionTTL is how long a console sign-in lasts (0:
	// web.DefaultSessionTTL).
	SessionTTL time.Duration
	// Logger receives the server's errors (nil: the pipeline's logger).
	Logger *slog.Logger
	// Admission is what the API and the console may add beyond web and
	// remote locations (kinds.Admission; the zero value: no location on
	// this machine, no source that may reach private addresses).
	Admission kinds.Admission
}

// New returns the whole site over p: the wiki from p's object store, the
// console and the API with every operation p offers, signed in with the
// database's tokens. It refuses a host name that is not one, and a store
// that is not the one this database's wiki lives in (a server on another
// store would show another wiki, or none). Starting the server only
// checks the store; it binds nothing. The console's writes (Publish now, a
// page document saved) publish through the pipeline as the CLI does, which
// binds an unbound store as the CLI's publish would, and its /metrics
// counts what they published (web.PipelineMetrics).
func New(ctx context.Context, p *pipeline.Pipeline, o Options) (*web.Server, error) {
	for _, h := range o.Hosts {
		if h == "" || strings.ContainsAny(h, "/ ") {
			return nil, tidemark.Invalidf("--host", h, "want a host name such as tidemark.example.org")
		}
	}
	log := o.Logger
	if log == nil {
		log = p.Logger()
	}
	objs, err := p.Objects()
	if err != nil {
		return nil, err
	}
	svc, err := p.Publisher()
	if err != nil {
		return nil, err
	}
	if err := svc.CheckStore(ctx); err != nil {
		return nil, err
	}
	db := p.DB()
	return &web.Server{
		Ingest: db.Ingest(), Outbox: db.Outbox(), Migrations: db.Content(), Publish: db.Publish(), Pipeline: publishMetrics(p),
		Sources: p, OutboxOps: p, PublishOps: p, Docs: p, Pages: db.Publish(),
		Wiki: web.WikiHandler(objs, db.Publish(), log), Objects: objs, Search: db.Publish(),
		Auth: db.Auth(), Hosts: o.Hosts, PublicMetrics: o.PublicMetrics, SecureCookies: o.SecureCookies, SessionTTL: o.SessionTTL,
		Logger: log, Clock: p.Clock(), Admission: o.Admission,
	}, nil
}

// publishMetrics are the counters of what p's process publishes (Publish
// now, Sweep now, the API's), for the site's /metrics: the pipeline's own
// when it has them (a daemon's), else new ones it is told of from now on.
func publishMetrics(p *pipeline.Pipeline) *web.PipelineMetrics {
	for _, o := range p.Observers() {
		if m, ok := o.(*web.PipelineMetrics); ok {
			return m
		}
	}
	m := web.NewPipelineMetrics()
	p.AddObserver(m)
	return m
}

// Metrics is the daemon's /metrics alone: the database's view, as New's
// site gives it, and what only this process counts (m: its publishing
// rounds and sweeps). It asks for no token: serve it on an address only
// the scraper reaches.
func Metrics(p *pipeline.Pipeline, m *web.PipelineMetrics, log *slog.Logger) http.Handler {
	if log == nil {
		log = p.Logger()
	}
	db := p.DB()
	// OutboxOps judge each lane's health as this process would deliver it
	// (a lane broken here is on /metrics); only /metrics is served.
	s := &web.Server{Ingest: db.Ingest(), Outbox: db.Outbox(), OutboxOps: p, Migrations: db.Content(), Publish: db.Publish(), Pipeline: m, Logger: log}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.MetricsHandler())
	return mux
}

// ServeMetrics serves Metrics on p's Config.MetricsAddr until ctx ends,
// counting p's publishing rounds and sweeps from now on (an observer added
// to p): the daemon's /metrics, which `tidemark run` serves this way and a
// program embedding tidemark serves by calling it beside Pipeline.Run
// (Run itself does not). It returns the address it listens on, and wait,
// which returns once the server has stopped (nil unless serving failed).
// An address that cannot be listened on (one in use) is an error at once.
func ServeMetrics(ctx context.Context, p *pipeline.Pipeline) (addr net.Addr, wait func() error, err error) {
	ln, err := web.Listen("TIDEMARK_METRICS_ADDR", p.Config().MetricsAddr)
	if err != nil {
		return nil, nil, err
	}
	m := web.NewPipelineMetrics()
	p.AddObserver(m)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, Metrics(p, m, nil)) }()
	return ln.Addr(), func() error { return <-done }, nil
}

// Serve serves h on ln until ctx ends, then closes the server. Ending ctx
// (a signal) is how a server is stopped: it returns nil then.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() { _ = hs.Close() })
	defer stop()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
