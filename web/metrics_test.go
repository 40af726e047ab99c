package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize"
	"github.com/tidemark/tidemark/web"
)

// mustScrape serves db's metrics and parses one scrape into samples keyed
// by name{labels} as the exposition writes them, sorted labels.
func mustScrape(t *testing.T, db *sqlstore.DB, pm *web.PipelineMetrics) map[string]float64 {
	t.Helper()
	do := mustServe(t, db, func(s *web.Server) { s.Publish = db.Publish(); s.Pipeline = pm; s.PublicMetrics = true })
	r := do("GET", "/metrics", "", nil)
	if r.Code != 200 {
		t.Fatalf("/metrics %d: %s", r.Code, r.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(r.Body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, r.Body)
	}
	out := map[string]float64{}
	for _, fam := range fams {
		vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, fam)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range vec {
			out[s.Metric.String()] = float64(s.Value)
		}
	}
	return out
}

func mustMetrics(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s missing", k)
			continue
		}
		if g != v {
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
}

// Every pipeline's metrics are read from the database: publish, outbox and
// migrations, each with values a wrong query would get wrong.
func TestMetricsFromTheDatabase(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(9)
		db := sqltest.MustOpen(t, b, env)
		clk := env.Clock

		// Publish: three events summarized, two published, one of those
		// then given a newer summary (behind), the third rejected.
		src, err := db.Ingest().AddSource(ctx, ingest.NewSource{Name: "repo", Kind: "git", Location: "/r", Interval: time.Hour, RetryBudget: 3})
		if err != nil {
			t.Fatal(err)
		}
		c, err := db.Ingest().Claim(ctx, src.ID, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := db.Ingest().Settle(ctx, c, ingest.Settlement{Cursor: "3", NextDueAt: clk.Now(), Items: []tidemark.Item{
			{Key: "1", Title: "one", OccurredAt: clk.Now(), Evidence: []byte("e1")},
			{Key: "2", Title: "two", OccurredAt: clk.Now(), Evidence: []byte("e2")},
			{Key: "3", Title: "three", OccurredAt: clk.Now(), Evidence: []byte("e3")},
		}})
		if err != nil {
			t.Fatal(err)
		}
		ps := db.Publish()
		svc := &publish.Service{Store: ps, Objects: mem.New()}
		accept := func(eventID, text string) publish.Summary {
			t.Helper()
			ev, err := db.Ingest().Event(ctx, eventID)
			if err != nil {
				t.Fatal(err)
			}
			s, _, err := ps.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash,
				Draft: summarize.Draft{Text: text, Model: "m", PromptVersion: "p" + text}})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		s1, s2, s3 := accept(rep.EventIDs[0], "a"), accept(rep.EventIDs[1], "b"), accept(rep.EventIDs[2], "c")
		for _, s := range []publish.Summary{s1, s2} {
			if _, err := svc.Publish(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
		}
		// A sweep found both pages' objects missing.
		if n := mustRecordMissing(t, ps); n != 2 {
			t.Fatalf("%d pages recorded missing", n)
		}
		accept(rep.EventIDs[0], "a2")
		if _, err := ps.Reject(ctx, s3.ID, "wrong"); err != nil {
			t.Fatal(err)
		}
		if _, err := ps.Reject(ctx, s2.ID, "also wrong"); err != nil { // published: its page waits to be withdrawn
			t.Fatal(err)
		}

		// Outbox: four intents on a lane paced at 1s; three sends, gaps of
		// 1.5s and (a gate that let one through early) 0.4s; one send's
		// counter moved by two.
		ob := db.Outbox()
		if _, err := ob.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "hooks", Provider: "webhook", Settings: map[string]string{"url": "http://127.0.0.1:1/"}, MinGap: tidemark.Duration(time.Second)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := ob.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "quiet", Provider: "webhook", Settings: map[string]string{"url": "http://127.0.0.1:1/"}, MinGap: tidemark.Duration(time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		var ins []outbox.Intent
		for _, body := range []string{"w", "x", "y", "z"} {
			in, err := ob.Draft(ctx, outbox.Draft{Lane: "hooks", Target: "chat", Body: body})
			if err != nil {
				t.Fatal(err)
			}
			ins = append(ins, in)
		}
		lease, err := ob.Acquire(ctx, "hooks", "w", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		send := func(in outbox.Intent, sentAt time.Time, verdict outbox.CountVerdict) {
			t.Helper()
			a, err := ob.Begin(ctx, lease, outbox.NewAttempt{IntentID: in.ID, Bound: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if err := ob.Finish(ctx, lease, a, outbox.Result{Outcome: outbox.OutcomeLanded, RemoteID: "r-" + in.ID, SentAt: sentAt, CountVerdict: verdict}); err != nil {
				t.Fatal(err)
			}
		}
		t0 := clk.Now()
		send(ins[0], t0, "")
		clk.Advance(1500 * time.Millisecond)
		send(ins[1], clk.Now(), outbox.CountDuplicate)
		clk.Advance(time.Second)
		send(ins[2], t0.Add(1900*time.Millisecond), outbox.CountLandedOnce)
		// Its steps failed three in a row, one went through, and one has
		// failed since: failing now, four failed in all.
		for i := range 5 {
			var err error
			if i == 3 {
				err = ob.ClearLaneFailure(ctx, "hooks")
			} else {
				err = ob.RecordLaneFailure(ctx, "hooks", clk.Now(), "count before: connection refused")
			}
			if err != nil {
				t.Fatal(err)
			}
		}

		// Migrations: notes.score text→number fails on its third document
		// after one batch of two; flags.on boolean→number converts both.
		cs := db.Content()
		if _, err := cs.CreateCollection(ctx, "notes", []content.Field{{Name: "score", Type: content.Text}}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CreateCollection(ctx, "flags", []content.Field{{Name: "on", Type: content.Boolean}}); err != nil {
			t.Fatal(err)
		}
		put := func(coll, field, raw string) {
			t.Helper()
			clk.Advance(time.Millisecond) // IDs in insertion order
			if _, err := cs.Put(ctx, coll, content.Put{Set: content.Fields{field: json.RawMessage(raw)}}); err != nil {
				t.Fatal(err)
			}
		}
		put("notes", "score", `"1"`)
		put("notes", "score", `"2"`)
		put("notes", "score", `"x"`)
		put("flags", "on", `true`)
		put("flags", "on", `false`)
		m := &content.Migrator{Store: cs, Holder: "w"}
		for _, mig := range []struct {
			coll, field string
			to          content.FieldType
			batch       int
		}{{"notes", "score", content.Number, 2}, {"flags", "on", content.Number, 10}} {
			run, err := m.Start(ctx, mig.coll, mig.field, mig.to, mig.batch)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = m.Drive(ctx, run.ID) // notes fails, as it should; the metrics say so
		}

		pm := web.NewPipelineMetrics()
		pm.ObservePublish(publish.PublishReport{Published: 3, Relinked: 1, Failed: 2, Repaired: 1, RepairFailed: 1})
		pm.ObserveSweep(1500*time.Millisecond, publish.SweepReport{Republished: 4, Failed: 1})
		got := mustScrape(t, db, pm)
		mustMetrics(t, got, map[string]float64{
			`tidemark_database_up`:                                        1,
			`tidemark_publish_pages`:                                      3,
			`tidemark_publish_pages_published`:                            2,
			`tidemark_publish_pages_behind`:                               1,
			`tidemark_publish_pages_withdrawing`:                          1,
			`tidemark_publish_pages_missing`:                              2,
			`tidemark_publish_summaries{state="current"}`:                 1,
			`tidemark_publish_summaries{state="rejected"}`:                2,
			`tidemark_publish_summaries{state="superseded"}`:              1,
			`tidemark_outbox_intents{lane="hooks", state="landed"}`:       3,
			`tidemark_outbox_intents{lane="hooks", state="pending"}`:      1,
			`tidemark_outbox_intents{lane="quiet", state="pending"}`:      0,
			`tidemark_outbox_sends_total{lane="hooks"}`:                   3,
			`tidemark_outbox_sends_total{lane="quiet"}`:                   0,
			`tidemark_outbox_duplicates_total{lane="hooks"}`:              1,
			`tidemark_outbox_gaps_below_threshold_total{lane="hooks"}`:    1,
			`tidemark_outbox_min_gap_seconds{lane="hooks"}`:               1,
			`tidemark_outbox_min_gap_seconds{lane="quiet"}`:               60,
			`tidemark_outbox_lane_failing{lane="hooks"}`:                  1,
			`tidemark_outbox_lane_failing{lane="quiet"}`:                  0,
			`tidemark_outbox_failed_steps_total{lane="hooks"}`:            4,
			`tidemark_outbox_failed_steps_total{lane="quiet"}`:            0,
			`tidemark_outbox_gap_seconds_count{lane="hooks"}`:             2,
			`tidemark_outbox_gap_seconds_sum{lane="hooks"}`:               1.9,
			`tidemark_outbox_gap_seconds_bucket{lane="hooks", le="0.25"}`: 0,
			`tidemark_outbox_gap_seconds_bucket{lane="hooks", le="0.5"}`:  1,
			`tidemark_outbox_gap_seconds_bucket{lane="hooks", le="1"}`:    1,
			`tidemark_outbox_gap_seconds_bucket{lane="hooks", le="2.5"}`:  2,
			`tidemark_outbox_gap_seconds_bucket{lane="hooks", le="+Inf"}`: 2,
			`tidemark_outbox_gap_seconds_count{lane="quiet"}`:             0,
			`tidemark_migration_runs{status="failed"}`:                    1,
			`tidemark_migration_runs{status="done"}`:                      1,
			`tidemark_migration_runs{status="running"}`:                   0,
			`tidemark_migration_documents_converted_total`:                4,
			// notes: one batch of two, one that stopped at "x"; flags: one.
			`tidemark_migration_batches_total`: 3,
			`tidemark_migration_open_run_documents{collection="notes", count="total", field="score", status="failed"}`:     3,
			`tidemark_migration_open_run_documents{collection="notes", count="converted", field="score", status="failed"}`: 2,
			// Process-local: what this process observed.
			`tidemark_publish_published_total`:                4,
			`tidemark_publish_failures_total`:                 3, // two publishing, one sweeping
			`tidemark_publish_repairs_total{result="ok"}`:     1,
			`tidemark_publish_repairs_total{result="failed"}`: 1,
			`tidemark_publish_sweep_duration_seconds_count`:   1,
			`tidemark_publish_sweep_duration_seconds_sum`:     1.5,
			`tidemark_publish_sweep_republished_total`:        4,
		})
		for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
			if _, ok := got[name]; !ok {
				t.Errorf("%s missing: the Go and process collectors are not registered", name)
			}
		}
		if t.Failed() {
			for k, v := range got {
				if strings.HasPrefix(k, "tidemark_") {
					t.Logf("%s %v", k, v)
				}
			}
		}
	})
}
