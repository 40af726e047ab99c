package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

// collector reads its metrics from the database at scrape time, so every
// process of a deployment reports the same truth, whichever of them is
// scraped.
type collector struct {
	store  ingest.Store
	logger *slog.Logger

	runs, sources, attempts, lastRun, up *prometheus.Desc
}

func newCollector(st ingest.Store, logger *slog.Logger) *collector {
	return &collector{
		store:  st,
		logger: logger,
		runs: prometheus.NewDesc("tidemark_runs_total", "Finished ingest runs by outcome.",
			[]string{"outcome"}, nil),
		sources: prometheus.NewDesc("tidemark_source_health", "1 for the source's current health (ok, failing, terminal, paused, new).",
			[]string{"source", "kind", "health"}, nil),
		attempts: prometheus.NewDesc("tidemark_source_window_attempts", "Attempts spent at the source's current window.",
			[]string{"source"}, nil),
		lastRun: prometheus.NewDesc("tidemark_source_last_run_timestamp_seconds", "When the source's last run ended.",
			[]string{"source"}, nil),
		up: prometheus.NewDesc("tidemark_database_up", "1 when the database answered the scrape.", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.runs, c.sources, c.attempts, c.lastRun, c.up} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	counts, err := c.store.OutcomeCounts(ctx)
	var srcs []tidemark.Source
	if err == nil {
		srcs, err = c.store.Sources(ctx)
	}
	if err != nil {
		c.logger.Error("metrics", "err", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for _, o := range tidemark.Outcomes {
		ch <- prometheus.MustNewConstMetric(c.runs, prometheus.CounterValue, float64(counts[o]), string(o))
	}
	for _, s := range srcs {
		ch <- prometheus.MustNewConstMetric(c.sources, prometheus.GaugeValue, 1, s.Name, s.Kind, health(s))
		ch <- prometheus.MustNewConstMetric(c.attempts, prometheus.GaugeValue, float64(s.WindowAttempts), s.Name)
		if s.LastRunAt != nil {
			ch <- prometheus.MustNewConstMetric(c.lastRun, prometheus.GaugeValue, float64(s.LastRunAt.Unix()), s.Name)
		}
	}
}

// metricsHandler serves the Prometheus exposition of the store's metrics.
func (s *Server) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(s.Ingest, s.logger()))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
