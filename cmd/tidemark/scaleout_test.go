package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/s3"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// scaleWorker is one `tidemark run` process with a home of its own.
type scaleWorker struct {
	holder, home string
	cmd          *exec.Cmd
	log          *os.File
}

// The README's scale-out recipe, as docs/scale-out.md spells it out: three
// workers (separate processes and homes) on one PostgreSQL database and one
// S3-compatible bucket, sources of every kind served locally, workers
// killed (SIGKILL) and restarted at a seeded random pace. In the end every
// event has exactly one current page in the shared store, two sweeps in a
// row publish nothing, and no window spent any of its budget.
func TestScaleOut(t *testing.T) {
	pg := os.Getenv(sqltest.PostgresEnv)
	ep := os.Getenv("TIDEMARK_TEST_S3_ENDPOINT")
	if pg == "" || ep == "" {
		t.Skip("needs " + sqltest.PostgresEnv + " and TIDEMARK_TEST_S3_* (.ci/run sets them)")
	}
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("TIDEMARK_TEST_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	t.Logf("seed %d (TIDEMARK_TEST_SEED=%d replays the kill schedule)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	dbURL := sqltest.NewPostgresURL(t)
	bucket, prefix := os.Getenv("TIDEMARK_TEST_S3_BUCKET"), "scaleout-"+filepath.Base(t.TempDir())
	store := "s3://" + bucket + "/" + prefix
	env := []string{
		"TIDEMARK_DB=" + dbURL, "TIDEMARK_STORE=" + store,
		"TIDEMARK_S3_ENDPOINT=" + ep,
		"AWS_ACCESS_KEY_ID=" + os.Getenv("TIDEMARK_TEST_S3_ACCESS_KEY"),
		"AWS_SECRET_ACCESS_KEY=" + os.Getenv("TIDEMARK_TEST_S3_SECRET_KEY"),
		"TIDEMARK_SUMMARIZER=extractive", "TIDEMARK_SWEEP_INTERVAL=300ms", "TIDEMARK_ALLOW_PRIVATE=",
		"TIDEMARK_LOG_LEVEL=warn",
	}
	admin := func(args ...string) string {
		t.Helper()
		return mustOK(t, tm(t, env, args...)).stdout
	}

	// Sources of every kind, served locally; the web ones allow the
	// loopback server as a setting of their own.
	srv := newBlog(t)
	docs := t.TempDir()
	for i, body := range []string{"alpha", "beta", "gamma"} {
		if err := os.WriteFile(filepath.Join(docs, fmt.Sprintf("note%d.txt", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	admin("source", "add", srv.URL+"/blog/rss.xml", "--kind", "feed", "--name", "feed", "--allow-private", "--interval", "1s")
	admin("source", "add", srv.URL+"/blog/", "--kind", "page", "--name", "page", "--allow-private", "--interval", "1s")
	admin("source", "add", srv.URL+"/api", "--kind", "json", "--name", "json", "--allow-private", "--interval", "1s",
		"--config", "items=.releases[]", "--config", "id=tag")
	admin("source", "add", docs, "--kind", "dir", "--name", "dir", "--interval", "1s")
	admin("source", "add", mustGitRepo(t), "--kind", "git", "--name", "git", "--interval", "1s")
	const sources = 5

	db, err := sqlstore.Open(ctx, dbURL, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	objs, err := s3.New(s3.Config{Bucket: bucket, Prefix: prefix, Endpoint: ep, PathStyle: true,
		AccessKey: os.Getenv("TIDEMARK_TEST_S3_ACCESS_KEY"), SecretKey: os.Getenv("TIDEMARK_TEST_S3_SECRET_KEY")})
	if err != nil {
		t.Fatal(err)
	}

	workers := make([]*scaleWorker, 3)
	start := func(w *scaleWorker) {
		t.Helper()
		log, err := os.OpenFile(filepath.Join(w.home, "worker.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		w.log = log
		w.cmd = exec.Command(binary, "--home", w.home, "--holder", w.holder, "run", "--poll", "200ms", "--lease", "10s")
		w.cmd.Env = append(os.Environ(), env...)
		w.cmd.Stdout, w.cmd.Stderr = log, log
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	stop := func(w *scaleWorker, sig syscall.Signal) {
		t.Helper()
		_ = w.cmd.Process.Signal(sig)
		_ = w.cmd.Wait()
		w.log.Close()
	}
	for i := range workers {
		workers[i] = &scaleWorker{holder: fmt.Sprintf("worker-%d", i+1), home: t.TempDir()}
		start(workers[i])
	}
	defer func() {
		for _, w := range workers {
			if w.cmd.ProcessState == nil {
				stop(w, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			for _, w := range workers {
				b, _ := os.ReadFile(filepath.Join(w.home, "worker.log"))
				t.Logf("%s:\n%s", w.holder, b)
			}
		}
	}()

	deadline := time.Now().Add(45 * time.Second)
	poll := func(what string, ok func() (bool, string)) {
		t.Helper()
		last := ""
		for time.Now().Before(deadline) {
			done, state := ok()
			if done {
				return
			}
			last = state
			time.Sleep(100 * time.Millisecond) // polling the database, not waiting for a state
		}
		t.Fatalf("%s: not reached before the deadline (seed %d); last: %s", what, seed, last)
	}
	finishedRuns := func() int64 {
		counts, err := db.Ingest().OutcomeCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, c := range counts {
			n += c
		}
		return n
	}

	// Kill and restart workers at random, each time after the pool has
	// made some progress.
	for round := range 6 {
		before := finishedRuns()
		want := before + 1 + int64(rng.IntN(4))
		poll(fmt.Sprintf("round %d: progress", round), func() (bool, string) {
			n := finishedRuns()
			return n >= want, fmt.Sprintf("%d finished runs, want %d", n, want)
		})
		w := workers[rng.IntN(len(workers))]
		stop(w, syscall.SIGKILL)
		start(w)
	}

	// Converged: every source read, every event's page published.
	poll("converged", func() (bool, string) {
		srcs, err := db.Ingest().Sources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		read := 0
		for _, s := range srcs {
			if s.CursorVersion > 0 {
				read++
			}
		}
		evs, err := db.Ingest().Events(ctx, ingest.EventFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		pub, err := db.Publish().PublishedCount(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return read == sources && len(evs) > 0 && pub == len(evs), fmt.Sprintf("%d/%d sources read, %d events, %d published", read, sources, len(evs), pub)
	})
	for _, w := range workers {
		stop(w, syscall.SIGTERM)
	}

	// Every event has exactly one current page in the shared store, and
	// nothing else is there.
	evs, err := db.Ingest().Events(ctx, ingest.EventFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	byEvent := map[string]publish.PageState{}
	if err := db.Publish().PageStates(ctx, func(p publish.PageState) error { byEvent[p.EventID] = p; return nil }); err != nil {
		t.Fatal(err)
	}
	stored := map[string]objstore.Info{}
	if err := objs.List(ctx, "changes/", func(in objstore.Info) error { stored[in.Key] = in; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(evs) {
		t.Fatalf("%d page objects in the store for %d events", len(stored), len(evs))
	}
	for _, ev := range evs {
		p, ok := byEvent[ev.ID]
		if !ok || p.PublishedSummaryID == "" || p.PublishedSummaryID != p.SummaryID {
			t.Fatalf("event %s: page %+v, want its current summary published", ev.ID, p)
		}
		info, ok := stored[publish.PageKey(p.PageID)]
		if !ok || info.ETag != p.PublishedETag {
			t.Fatalf("event %s: object %+v, want the published version %s", ev.ID, info, p.PublishedETag)
		}
	}

	// Converged means quiet: two sweeps in a row publish nothing and no
	// page's generation grows.
	generations := func() int64 {
		var sum int64
		for key := range stored {
			info, err := objs.Head(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			sum += info.Generation
		}
		return sum
	}
	gen := generations()
	for i := range 2 {
		var rep publish.SweepReport
		if err := json.Unmarshal([]byte(admin("publish", "sweep", "--json")), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Republished != 0 || rep.Failed != 0 || rep.Pages != len(evs) {
			t.Fatalf("sweep %d after convergence: %+v", i, rep)
		}
	}
	if g := generations(); g != gen {
		t.Fatalf("published generations grew from %d to %d after convergence", gen, g)
	}

	// No window spent any budget: killed workers re-entered their runs,
	// and nothing a worker could not serve was charged to a source.
	srcs, err := db.Ingest().Sources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs {
		if s.WindowAttempts != 0 || s.Window != tidemark.WindowOpen {
			t.Errorf("source %s: %d attempts spent, window %s (last %s: %s)", s.Name, s.WindowAttempts, s.Window, s.LastOutcome, s.LastError)
		}
	}
	if out := admin("source", "list"); !strings.Contains(out, "git") {
		t.Fatalf("source list: %s", out)
	}
}
