package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/publish"
)

// PublishStats is what /metrics reads of publication (sqlstore's
// PublishStore).
type PublishStats interface {
	PublishStats(ctx context.Context) (publish.Stats, error)
}

// OutboxStats is what /metrics reads of the outbox (sqlstore's
// OutboxStore).
type OutboxStats interface {
	LaneStats(ctx context.Context) ([]outbox.LaneStats, error)
}

// MigrationStats is what /metrics reads of field migrations (sqlstore's
// ContentStore).
type MigrationStats interface {
	MigrationStats(ctx context.Context) (content.Stats, error)
}

// collector reads its metrics from the database at scrape time, so every
// process of a deployment reports the same truth, whichever of them is
// scraped. A part whose reader is nil is left out; a part whose query
// fails is left out of that scrape and tidemark_database_up says 0.
type collector struct {
	ingest  ingest.Store
	publish PublishStats
	outbox  OutboxStats
	// laneViews, when set (the server has OutboxOps), are the lanes with
	// their health as this process judges it: a lane whose provider it
	// cannot build (a secret's variable unset here, a setting refused) is
	// broken here, which the database alone cannot say.
	laneViews  func(context.Context) (outbox.LaneViews, error)
	migrations MigrationStats
	logger     *slog.Logger

	runs, sources, attempts, lastRun, up *prometheus.Desc

	pages, pagesPublished, pagesBehind, pagesWithdrawing, pagesMissing, summaries *prometheus.Desc

	intents, sends, duplicates, gaps, gapsBelow, minGap, laneFailing, failedSteps, laneBroken, laneHealth *prometheus.Desc

	migrationRuns, converted, restored, batches, openRun *prometheus.Desc
}

func newCollector(s *Server) *collector {
	d := prometheus.NewDesc
	c := &collector{
		ingest:  s.Ingest,
		publish: s.Publish,
		logger:  s.logger(),

		runs: d("tidemark_runs_total", "Finished ingest runs by outcome.", []string{"outcome"}, nil),
		sources: d("tidemark_source_health", "1 for the source's current health (ok, empty, unreachable, invalid, error, terminal, paused, running, new).",
			[]string{"source", "kind", "health"}, nil),
		attempts: d("tidemark_source_window_attempts", "Attempts spent at the source's current window.", []string{"source"}, nil),
		lastRun:  d("tidemark_source_last_run_timestamp_seconds", "When the source's last run ended.", []string{"source"}, nil),
		up:       d("tidemark_database_up", "1 when every query of the scrape answered, 0 when one failed (its metrics are missing).", nil, nil),

		pages:          d("tidemark_publish_pages", "Wiki pages that exist: one per event ever summarized.", nil, nil),
		pagesPublished: d("tidemark_publish_pages_published", "Wiki pages showing a published summary.", nil, nil),
		pagesBehind: d("tidemark_publish_pages_behind",
			"Wiki pages whose current summary is not the one they show: waiting to be published or repaired.", nil, nil),
		pagesWithdrawing: d("tidemark_publish_pages_withdrawing",
			"Wiki pages still showing a summary that was rejected since: the next publishing round (publish, run --once, the daemon's round) withdraws them.", nil, nil),
		pagesMissing: d("tidemark_publish_pages_missing",
			"Published wiki pages the books record missing from the object store (a sweep could not republish them, or the wiki was rebound to a store without them): no listing links to them until a sweep republishes them.", nil, nil),
		summaries: d("tidemark_publish_summaries", "Summaries by state (current, rejected, superseded).", []string{"state"}, nil),

		intents:    d("tidemark_outbox_intents", "Outbox intents by lane and state.", []string{"lane", "state"}, nil),
		sends:      d("tidemark_outbox_sends_total", "Outbox attempts that called the provider, whatever it answered.", []string{"lane"}, nil),
		duplicates: d("tidemark_outbox_duplicates_total", "Outbox attempts whose provider's counter moved by more than one: duplicates to go and find.", []string{"lane"}, nil),
		gaps:       d("tidemark_outbox_gap_seconds", "Achieved gaps between consecutive sends on a lane.", []string{"lane"}, nil),
		gapsBelow: d("tidemark_outbox_gaps_below_threshold_total",
			"Achieved gaps shorter than the lane's minimum gap in force when they were made (should stay 0).", []string{"lane"}, nil),
		minGap: d("tidemark_outbox_min_gap_seconds", "The lane's configured minimum gap between sends.", []string{"lane"}, nil),
		laneFailing: d("tidemark_outbox_lane_failing",
			"1 while the lane's delivery steps fail in a row (its health is failing: nothing goes out until one goes through), else 0.", []string{"lane"}, nil),
		failedSteps: d("tidemark_outbox_failed_steps_total",
			"Delivery steps of the lane that failed (its receiver could not be reached, a read before a write failed), by every process that delivers it.", []string{"lane"}, nil),
		laneBroken: d("tidemark_outbox_lane_broken",
			"1 while the lane cannot deliver as the scraped process judges it (its provider cannot be built here: a secret's variable unset, a setting refused; or the provider refuses its writes): it sends nothing until it is fixed, else 0.", []string{"lane"}, nil),
		laneHealth: d("tidemark_outbox_lane_health",
			"1 for the lane's current health as the scraped process judges it (broken, failing, in doubt, unresolved, ok).", []string{"lane", "health"}, nil),

		migrationRuns: d("tidemark_migration_runs", "Field migration runs by status; failed runs wait for an operator to resume or abort.", []string{"status"}, nil),
		converted:     d("tidemark_migration_documents_converted_total", "Documents converted by field migrations, over every run.", nil, nil),
		restored:      d("tidemark_migration_documents_restored_total", "Documents restored by aborted field migrations, over every run.", nil, nil),
		batches:       d("tidemark_migration_batches_total", "Batches committed by field migrations, over every run.", nil, nil),
		openRun: d("tidemark_migration_open_run_documents",
			"Progress of a migration that still holds its field: the documents to walk (total), walked and converted.",
			[]string{"collection", "field", "status", "count"}, nil),
	}
	// Typed nil interfaces would pass a nil check and panic on use.
	if s.Outbox != nil {
		c.outbox = s.Outbox
	}
	if s.OutboxOps != nil {
		c.laneViews = s.OutboxOps.Lanes
	}
	if s.Migrations != nil {
		c.migrations = s.Migrations
	}
	return c
}

// Describe lists every metric without a query (DescribeByCollect would
// read the database at registration).
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.runs, c.sources, c.attempts, c.lastRun, c.up,
		c.pages, c.pagesPublished, c.pagesBehind, c.pagesWithdrawing, c.pagesMissing, c.summaries,
		c.intents, c.sends, c.duplicates, c.gaps, c.gapsBelow, c.minGap, c.laneFailing, c.failedSteps, c.laneBroken, c.laneHealth,
		c.migrationRuns, c.converted, c.restored, c.batches, c.openRun} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	up := 1.0
	for part, collect := range map[string]func(context.Context, chan<- prometheus.Metric) error{
		"ingest": c.collectIngest, "publish": c.collectPublish, "outbox": c.collectOutbox, "migrations": c.collectMigrations,
	} {
		if err := collect(ctx, ch); err != nil {
			c.logger.Error("metrics", "part", part, "err", err)
			up = 0
		}
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}

func (c *collector) collectIngest(ctx context.Context, ch chan<- prometheus.Metric) error {
	if c.ingest == nil {
		return nil
	}
	counts, err := c.ingest.OutcomeCounts(ctx)
	if err != nil {
		return err
	}
	srcs, err := c.ingest.Sources(ctx)
	if err != nil {
		return err
	}
	for _, o := range tidemark.Outcomes {
		ch <- prometheus.MustNewConstMetric(c.runs, prometheus.CounterValue, float64(counts[o]), string(o))
	}
	for _, s := range srcs {
		ch <- prometheus.MustNewConstMetric(c.sources, prometheus.GaugeValue, 1, s.Name, s.Kind, s.Health())
		ch <- prometheus.MustNewConstMetric(c.attempts, prometheus.GaugeValue, float64(s.WindowAttempts), s.Name)
		if s.LastRunAt != nil {
			ch <- prometheus.MustNewConstMetric(c.lastRun, prometheus.GaugeValue, float64(s.LastRunAt.Unix()), s.Name)
		}
	}
	return nil
}

func (c *collector) collectPublish(ctx context.Context, ch chan<- prometheus.Metric) error {
	if c.publish == nil {
		return nil
	}
	st, err := c.publish.PublishStats(ctx)
	if err != nil {
		return err
	}
	ch <- prometheus.MustNewConstMetric(c.pages, prometheus.GaugeValue, float64(st.Pages))
	ch <- prometheus.MustNewConstMetric(c.pagesPublished, prometheus.GaugeValue, float64(st.Published))
	ch <- prometheus.MustNewConstMetric(c.pagesBehind, prometheus.GaugeValue, float64(st.Behind))
	ch <- prometheus.MustNewConstMetric(c.pagesWithdrawing, prometheus.GaugeValue, float64(st.Withdrawing))
	ch <- prometheus.MustNewConstMetric(c.pagesMissing, prometheus.GaugeValue, float64(st.Missing))
	for _, state := range publish.SummaryStates {
		ch <- prometheus.MustNewConstMetric(c.summaries, prometheus.GaugeValue, float64(st.Summaries[state]), state)
	}
	return nil
}

func (c *collector) collectOutbox(ctx context.Context, ch chan<- prometheus.Metric) error {
	if c.outbox == nil {
		return nil
	}
	lanes, err := c.outbox.LaneStats(ctx)
	if err != nil {
		return err
	}
	if c.laneViews != nil {
		views, err := c.laneViews(ctx)
		if err != nil {
			return err
		}
		for _, v := range views {
			broken := 0.0
			if v.Health == outbox.HealthBroken {
				broken = 1
			}
			ch <- prometheus.MustNewConstMetric(c.laneBroken, prometheus.GaugeValue, broken, v.Name)
			ch <- prometheus.MustNewConstMetric(c.laneHealth, prometheus.GaugeValue, 1, v.Name, v.Health)
		}
	}
	for _, l := range lanes {
		for _, st := range outbox.States {
			ch <- prometheus.MustNewConstMetric(c.intents, prometheus.GaugeValue, float64(l.Intents[st]), l.Lane, string(st))
		}
		ch <- prometheus.MustNewConstMetric(c.sends, prometheus.CounterValue, float64(l.Sends), l.Lane)
		ch <- prometheus.MustNewConstMetric(c.duplicates, prometheus.CounterValue, float64(l.Duplicates), l.Lane)
		ch <- prometheus.MustNewConstMetric(c.gapsBelow, prometheus.CounterValue, float64(l.Gaps.BelowThreshold), l.Lane)
		ch <- prometheus.MustNewConstMetric(c.minGap, prometheus.GaugeValue, float64(l.MinGapMS)/1000, l.Lane)
		failing := 0.0
		if l.Failing {
			failing = 1
		}
		ch <- prometheus.MustNewConstMetric(c.laneFailing, prometheus.GaugeValue, failing, l.Lane)
		ch <- prometheus.MustNewConstMetric(c.failedSteps, prometheus.CounterValue, float64(l.FailedSteps), l.Lane)
		buckets := make(map[float64]uint64, len(outbox.GapBucketsMS))
		for i, b := range outbox.GapBucketsMS {
			if i < len(l.Gaps.Buckets) {
				buckets[float64(b)/1000] = uint64(l.Gaps.Buckets[i])
			}
		}
		ch <- prometheus.MustNewConstHistogram(c.gaps, uint64(l.Gaps.Count), float64(l.Gaps.SumMS)/1000, buckets, l.Lane)
	}
	return nil
}

func (c *collector) collectMigrations(ctx context.Context, ch chan<- prometheus.Metric) error {
	if c.migrations == nil {
		return nil
	}
	st, err := c.migrations.MigrationStats(ctx)
	if err != nil {
		return err
	}
	for _, status := range content.RunStatuses {
		ch <- prometheus.MustNewConstMetric(c.migrationRuns, prometheus.GaugeValue, float64(st.Runs[status]), string(status))
	}
	ch <- prometheus.MustNewConstMetric(c.converted, prometheus.CounterValue, float64(st.Converted))
	ch <- prometheus.MustNewConstMetric(c.restored, prometheus.CounterValue, float64(st.Restored))
	ch <- prometheus.MustNewConstMetric(c.batches, prometheus.CounterValue, float64(st.Batches))
	for _, r := range st.Open {
		for count, n := range map[string]int64{"total": r.Total, "walked": r.Walked, "converted": r.Converted} {
			ch <- prometheus.MustNewConstMetric(c.openRun, prometheus.GaugeValue, float64(n), r.Collection, r.Field, string(r.Status), count)
		}
	}
	return nil
}

// PipelineMetrics counts what only the process doing the work can know:
// publications that failed or were repaired, and how long sweeps took.
// Everything else /metrics shows is read from the database at scrape time.
// A process that publishes records its reports here (ObservePublish,
// ObserveSweep) and serves them with MetricsHandler; the zero value is not
// usable, make one with NewPipelineMetrics.
type PipelineMetrics struct {
	published, failed prometheus.Counter
	repairs           *prometheus.CounterVec
	sweep             prometheus.Histogram
	republished       prometheus.Counter
}

// NewPipelineMetrics returns process-local counters, all at zero.
func NewPipelineMetrics() *PipelineMetrics {
	const local = " Counted in this process only (the database does not record it)."
	return &PipelineMetrics{
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "tidemark_publish_published_total",
			Help: "Publications this process completed; the database's count across processes is tidemark_publish_pages_published." + local}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Name: "tidemark_publish_failures_total",
			Help: "Publications that failed (a lost race included), by this process's publish rounds and sweeps." + local}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tidemark_publish_repairs_total",
			Help: "Repairs after a lost race, by result (ok, failed)." + local}, []string{"result"}),
		sweep: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tidemark_publish_sweep_duration_seconds",
			Help: "How long a convergence sweep took." + local, Buckets: prometheus.ExponentialBuckets(0.01, 4, 9)}),
		republished: prometheus.NewCounter(prometheus.CounterOpts{Name: "tidemark_publish_sweep_republished_total",
			Help: "Pages a sweep found not showing their published summary and republished." + local}),
	}
}

// ObservePublish records a PublishPending round.
func (m *PipelineMetrics) ObservePublish(rep publish.PublishReport) {
	m.published.Add(float64(rep.Published + rep.Relinked + rep.Restyled))
	m.failed.Add(float64(rep.Failed))
	m.repairs.WithLabelValues("ok").Add(float64(rep.Repaired))
	m.repairs.WithLabelValues("failed").Add(float64(rep.RepairFailed))
}

// ObserveSweep records a sweep that took d.
func (m *PipelineMetrics) ObserveSweep(d time.Duration, rep publish.SweepReport) {
	m.sweep.Observe(d.Seconds())
	m.republished.Add(float64(rep.Republished))
	m.failed.Add(float64(rep.Failed))
}

func (m *PipelineMetrics) collectors() []prometheus.Collector {
	// Both repair results show from the start, so a rate never misses
	// the first failure.
	m.repairs.WithLabelValues("ok")
	m.repairs.WithLabelValues("failed")
	return []prometheus.Collector{m.published, m.failed, m.repairs, m.sweep, m.republished}
}

// databaseDownMetrics is /metrics when the scrape's token cannot be
// checked because the database is unavailable: tidemark_database_up 0 and
// nothing else, answered 200 so a scraper records it (a scraper drops the
// samples of an error's answer). It shows no more than the public /healthz
// says, so answering it to a token nobody could check gives nothing away;
// a request with no token at all is still refused.
func (s *Server) databaseDownMetrics() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(databaseDown{newCollector(s).up})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// databaseDown says tidemark_database_up 0.
type databaseDown struct{ up *prometheus.Desc }

func (d databaseDown) Describe(ch chan<- *prometheus.Desc) { ch <- d.up }

func (d databaseDown) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(d.up, prometheus.GaugeValue, 0)
}

// MetricsHandler serves the Prometheus exposition: every pipeline's
// metrics read from the database at scrape time, the process-local
// PipelineMetrics when set, and the Go runtime's and the process's.
func (s *Server) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(s), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if s.Pipeline != nil {
		reg.MustRegister(s.Pipeline.collectors()...)
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
