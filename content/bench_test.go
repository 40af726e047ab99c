package content_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// The benchmark's size: -docs N (go test -bench Migration ./content -args
// -docs 1000000) or TIDEMARK_BENCH_DOCS. The default keeps a 2-core run
// short. The batch-size-1 reference walks -batch1-docs documents
// (TIDEMARK_BENCH_BATCH1_DOCS; default: the same), since one transaction
// per document over a million documents takes a long while; documents per
// second do not depend on the collection's size (keyset pagination).
var (
	benchDocs       = flag.Int("docs", envInt("TIDEMARK_BENCH_DOCS", 5000), "documents per collection in the migration benchmark")
	benchBatch1Docs = flag.Int("batch1-docs", envInt("TIDEMARK_BENCH_BATCH1_DOCS", 0), "documents for the batch-size-1 reference (0: -docs)")
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkMigrationTextToNumber migrates a text field of numbers to
// number, on each backend, three ways over collections of the same shape:
// with batch size 1 (one transaction per document: the reference), with the
// default batch, and with one raw UPDATE of the column (the physical limit:
// no snapshots, no cursor, no rule in Go). It reports documents per second
// for the migrations, the default batch's speed-up over batch size 1
// (target ≥ 10×), how much faster the raw UPDATE is, and the peak live heap
// of a default-batch migration over the full collection and over a tenth of
// it (at least two batches), whose ratio stays near 1 because a run streams
// in ID order one batch at a time.
func BenchmarkMigrationTextToNumber(b *testing.B) {
	for _, be := range sqltest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			for b.Loop() {
				benchMigration(b, be)
			}
		})
	}
}

func benchMigration(b *testing.B, be sqltest.Backend) {
	ctx := context.Background()
	n := *benchDocs
	n1 := *benchBatch1Docs
	if n1 <= 0 {
		n1 = n
	}
	small := max(n/10, 2*content.DefaultBatch)
	db := sqltest.MustOpen(b, be, sqltest.NewEnv(11))
	st := db.Content()
	m := &content.Migrator{Store: st, Holder: "bench"}

	b.StopTimer()
	benchSeed(b, db, "batch1", n1)
	benchSeed(b, db, "batched", n)
	benchSeed(b, db, "small", small)
	benchSeed(b, db, "raw", n)
	benchSeed(b, db, "abort", n)
	// The abort collection's last document refuses the rule, so its run
	// converts every other one and fails there, for an abort to restore.
	for _, table := range []string{"documents", "document_versions"} {
		if _, err := db.SQL().ExecContext(ctx, `UPDATE `+table+` SET fields = $1 WHERE collection = 'abort' AND fields LIKE $2`,
			`{"title":"the last","v":"not a number"}`, fmt.Sprintf(`%%"v":"%d"}`, n-1)); err != nil {
			b.Fatal(err)
		}
	}
	b.StartTimer()

	migrate := func(coll string, to content.FieldType, batch int) (time.Duration, uint64) {
		runtime.GC()
		stop := sampleHeap()
		start := time.Now()
		r, err := m.Start(ctx, coll, "v", to, batch)
		if err == nil {
			r, err = m.Drive(ctx, r.ID)
		}
		d := time.Since(start)
		peak := stop()
		if err != nil || r.Status != content.RunDone {
			b.Fatalf("migrate %s: %+v %v", coll, r, err)
		}
		return d, peak
	}
	d1, _ := migrate("batch1", content.Number, 1)
	dd, _ := migrate("batched", content.Number, content.DefaultBatch)

	// Memory: the same migration (number→text, default batch) over the
	// full collection and over a tenth of it, untimed, with the collector
	// running often so the live heap it marks follows the run closely.
	b.StopTimer()
	migrate("small", content.Number, content.DefaultBatch)
	gc := debug.SetGCPercent(10)
	_, peak := migrate("batched", content.Text, content.DefaultBatch)
	_, peakSmall := migrate("small", content.Text, content.DefaultBatch)
	debug.SetGCPercent(gc)
	b.StartTimer()

	start := time.Now()
	if _, err := db.SQL().ExecContext(ctx, rawConvert(db), "raw"); err != nil {
		b.Fatalf("raw update: %v", err)
	}
	dr := time.Since(start)
	d, err := st.Documents(ctx, "raw", "", 1)
	if err != nil || len(d) != 1 || (string(d[0].Fields["v"]) != "0" && string(d[0].Fields["v"]) != "0.0") {
		b.Fatalf("raw update did not convert: %+v %v", d, err)
	}

	// Abort: restoring what a run converted, against converting it.
	startConv := time.Now()
	r, err := m.Start(ctx, "abort", "v", content.Number, content.DefaultBatch)
	if err == nil {
		r, err = m.Drive(ctx, r.ID)
	}
	dc := time.Since(startConv)
	if _, failed := errors.AsType[*content.FailedError](err); !failed || r.ID == "" {
		b.Fatalf("the abort collection's migration: %+v %v, want it failed at its last document", r, err)
	}
	startAbort := time.Now()
	ar, err := m.Abort(ctx, r.ID)
	da := time.Since(startAbort)
	if err != nil || ar.Status != content.RunAborted || ar.Restored != int64(n-1) {
		b.Fatalf("abort: %+v %v, want %d restored", ar, err, n-1)
	}

	rate1 := float64(n1) / d1.Seconds()
	rateD := float64(n) / dd.Seconds()
	rateR := float64(n) / dr.Seconds()
	b.ReportMetric(rate1, "docs/s-batch1")
	b.ReportMetric(rateD, "docs/s-batched")
	b.ReportMetric(rateD/rate1, "x/batch1")
	b.ReportMetric(rateR/rateD, "raw-x/batched")
	b.ReportMetric(da.Seconds()/dc.Seconds(), "abort-x/convert")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(peak)/float64(max(peakSmall, 1)), "heap-x/tenth")
}

// rawConvert is the same conversion as one UPDATE statement.
func rawConvert(db *sqlstore.DB) string {
	if db.Dialect.Name == "postgres" {
		return `UPDATE documents SET fields = jsonb_set(fields::jsonb, '{v}', to_jsonb((fields::jsonb->>'v')::float8))::text, version = version + 1
			WHERE collection = $1`
	}
	return `UPDATE documents SET fields = json_set(fields, '$.v', CAST(json_extract(fields, '$.v') AS REAL)), version = version + 1
		WHERE collection = $1`
}

// benchSeed creates a collection of n documents, v holding text numbers,
// with plain multi-row INSERTs (seeding is not what is measured).
func benchSeed(b *testing.B, db *sqlstore.DB, coll string, n int) {
	ctx := context.Background()
	if _, err := db.Content().CreateCollection(ctx, coll, []content.Field{{Name: "v", Type: content.Text}, {Name: "title", Type: content.Text}}); err != nil {
		b.Fatal(err)
	}
	const chunk = 1000
	for start := 0; start < n; start += chunk {
		end := min(start+chunk, n)
		var sb strings.Builder
		args := []any{coll}
		for i := start; i < end; i++ {
			if i > start {
				sb.WriteString(", ")
			}
			k := len(args)
			fmt.Fprintf(&sb, "($1, $%d, 1, $%d, 0, 0)", k+1, k+2)
			args = append(args, db.IDs.New(), fmt.Sprintf(`{"title":"document number %d","v":"%d"}`, i, i))
		}
		if _, err := db.SQL().ExecContext(ctx, `INSERT INTO documents (collection, id, version, fields, created_at, updated_at) VALUES `+sb.String(), args...); err != nil {
			b.Fatal(err)
		}
		// Each document's first snapshot, as a create writes it: an abort
		// restores from the snapshot before a conversion.
		if _, err := db.SQL().ExecContext(ctx, `INSERT INTO document_versions (collection, document_id, version, fields, reason, at)
			SELECT collection, id, version, fields, 'create', 0 FROM documents WHERE collection = $1 AND version = 1
			AND id NOT IN (SELECT document_id FROM document_versions WHERE collection = $1)`, coll); err != nil {
			b.Fatal(err)
		}
	}
}

// sampleHeap samples the live heap (as the last GC marked it: what the
// process retains, not garbage awaiting collection) until the returned function is called,
// which returns the peak seen.
func sampleHeap() func() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var (
		mu   sync.Mutex
		peak uint64
	)
	read := func() {
		metrics.Read(sample)
		v := sample[0].Value.Uint64()
		mu.Lock()
		peak = max(peak, v)
		mu.Unlock()
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		read()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
