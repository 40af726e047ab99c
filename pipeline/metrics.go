package pipeline

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/web"
)

// MetricsHandler is the daemon's /metrics alone over this pipeline: the
// database's view, as `serve` gives it, and what m counts of this process
// (its publishing rounds and sweeps; add m as an observer, see
// AddObserver). It has no token: serve it only where the scraper alone
// reaches. Run serves it on Config.MetricsAddr.
func (p *Pipeline) MetricsHandler(m *web.PipelineMetrics) http.Handler {
	db := p.db
	// OutboxOps judge each lane's health as this process would deliver it
	// (a lane broken here is on /metrics); only /metrics is served.
	s := &web.Server{Ingest: db.Ingest(), Outbox: db.Outbox(), OutboxOps: p, Migrations: db.Content(), Publish: db.Publish(), Pipeline: m, Logger: p.log}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.MetricsHandler())
	return mux
}

// serveMetrics listens on Config.MetricsAddr and serves MetricsHandler
// there, counting this process's publishing, until ctx ends; it returns
// the address it listens on, and a wait for the server to stop. A
// listener refused (the address is in use) is an error before anything
// runs.
func (p *Pipeline) serveMetrics(ctx context.Context) (net.Addr, func(), error) {
	ln, err := web.Listen("TIDEMARK_METRICS_ADDR", p.cfg.MetricsAddr)
	if err != nil {
		return nil, nil, err
	}
	m := web.NewPipelineMetrics()
	p.AddObserver(m)
	hs := &http.Server{Handler: p.MetricsHandler(m), ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() { _ = hs.Close() })
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer stop()
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("metrics: serving stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return ln.Addr(), func() { _ = hs.Close(); <-done }, nil
}
