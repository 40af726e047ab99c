package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
)

// run --once exits 5 when a source failed, names it, and says that what
// succeeded was kept; the sources that succeeded did settle.
func TestRunOnceFailedSourceExits5(t *testing.T) {
	t.Setenv(AllowPrivateEnv, "1")
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	srv := newBlog(t)
	var down atomic.Bool
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer broken.Close()
	home := t.TempDir()
	mustTidemark(t, 0, "--home", home, "source", "add", srv.URL+"/blog/rss.xml", "--name", "good")
	mustTidemark(t, 0, "--home", home, "source", "add", broken.URL+"/blog/rss.xml", "--name", "flaky")
	down.Store(true)

	out, code := runCLI(t, "--home", home, "run", "--once")
	if code != 5 {
		t.Fatalf("run --once: exit %d, want 5\n%s", code, out)
	}
	for _, want := range []string{"1 of 2 sources failed (flaky unreachable)", "What succeeded is kept", "run the same command again"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if evs := mustTidemark(t, 0, "--home", home, "events", "list", "--source", "good"); !strings.Contains(evs, "Post one") {
		t.Errorf("the good source's events were not kept:\n%s", evs)
	}

	// Once nothing fails, the pass exits 0 again.
	down.Store(false)
	mustTidemark(t, 0, "--home", home, "source", "retry", "flaky")
	if out, code := runCLI(t, "--home", home, "run", "--once", "--json"); code != 0 {
		t.Fatalf("run --once after recovery: exit %d\n%s", code, out)
	}
}

// A source held by a live holder elsewhere is passed over by run --once
// (not a failure of this pass), with a hint naming --holder and the lease's
// end.
func TestRunOnceHeldSourceSuggestsHolder(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(home, "tidemark.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := db.Ingest().AddSource(ctx, ingest.NewSource{Name: "s", Kind: "git", Location: t.TempDir(), Interval: time.Minute, RetryBudget: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest().Claim(ctx, src.ID, "elsewhere:1", time.Hour); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out := mustTidemark(t, 0, "--home", home, "run", "--once")
	if !strings.Contains(out, "not run: source s: held by elsewhere:1 until") || !strings.Contains(out, "--holder elsewhere:1") {
		t.Fatalf("no hint:\n%s", out)
	}
}

// With the summarizer down, run --once still keeps what it ingested and
// still runs its later steps, then exits 5 saying the summarizer was
// unavailable.
func TestRunOnceSummarizerDownExits5(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	t.Setenv("TIDEMARK_SUMMARIZER", "openai")
	t.Setenv("TIDEMARK_OPENAI_BASE_URL", down.URL+"/v1")
	t.Setenv("TIDEMARK_OPENAI_API_KEY", "k")
	t.Setenv("TIDEMARK_OPENAI_MODEL", "m")
	// A lane, so that the delivery step has something to report.
	t.Setenv("TM_CLI_SECRET", "s3cret")
	repo := mustGitRepo(t)
	home := t.TempDir()
	mustTidemark(t, 0, "--home", home, "outbox", "lane", "add", "hook", "--provider", "webhook", "--min-gap", "0s",
		"--setting", "secret_env=TM_CLI_SECRET", "--setting", "url=http://127.0.0.1:1/hook")
	out, code := runCLI(t, "--home", home, "run", "--once", "--track", repo)
	if code != 5 {
		t.Fatalf("run --once: exit %d, want 5\n%s", code, out)
	}
	if !strings.Contains(out, "summarizer unavailable") || !strings.Contains(out, "What succeeded is kept") {
		t.Errorf("the output does not say the summarizer was unavailable:\n%s", out)
	}
	if !strings.Contains(out, "hook") || !strings.Contains(out, "landed 0") {
		t.Errorf("the delivery step did not run after publishing:\n%s", out)
	}
	if evs := mustTidemark(t, 0, "--home", home, "events", "list"); !strings.Contains(evs, "cursor: never move past unread data") {
		t.Errorf("the ingested events were not kept:\n%s", evs)
	}
}

// With nothing due, run --once --json prints an empty list, as every list
// does, not null.
func TestRunOnceJSONNothingDueIsEmptyList(t *testing.T) {
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	var out, errb bytes.Buffer
	if code := run([]string{"--home", t.TempDir(), "run", "--once", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("run --once --json: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if got := strings.TrimSpace(out.String()); got != "[]" {
		t.Fatalf("run --once --json with nothing due printed %q, want []", got)
	}
}

// A detached migration that fails in the pass makes it incomplete: exit 5,
// the last line naming the run and how to go on, once.
func TestRunOnceExits5WhenADetachedMigrationFails(t *testing.T) {
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	home := t.TempDir()
	mustTidemark(t, 0, "--home", home, "docs", "collection", "create", "notes", "--field", "title:text")
	mustTidemark(t, 0, "--home", home, "docs", "put", "notes", "--text", "title=t0")
	mustTidemark(t, 0, "--home", home, "docs", "field", "set-type", "notes", "title", "number", "--detach")
	out, code := runCLI(t, "--home", home, "run", "--once")
	if code != 5 || !strings.Contains(out, "left work undone: migration") || !strings.Contains(out, "migrate resume") {
		t.Fatalf("run --once with a failing detached migration: exit %d, want 5 naming the run\n%s", code, out)
	}
	if n := strings.Count(out, "failed at document"); n != 1 {
		t.Errorf("the failure is told %d times, want once:\n%s", n, out)
	}
}

// A lane whose write failed in the pass (its receiver answered 500, so the
// write is in doubt on a bare webhook, which nothing can decide) left work
// undone: `outbox deliver --once` and `run --once` exit 5, as a cron job
// must notice. With --json, stdout is one JSON document: the delivery
// lines go to stderr, as the publish summary does.
func TestAFailedWriteExits5(t *testing.T) {
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	t.Setenv("TM_CLI_SECRET", "s3cret")
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer failing.Close()
	home := t.TempDir()
	mustTidemark(t, 0, "--home", home, "outbox", "lane", "add", "hook", "--provider", "webhook", "--min-gap", "0s",
		"--setting", "secret_env=TM_CLI_SECRET", "--setting", "url="+failing.URL+"/hook")

	mustTidemark(t, 0, "--home", home, "outbox", "intents", "draft", "--lane", "hook", "--target", "room", "--body", "one")
	out, code := runCLI(t, "--home", home, "outbox", "deliver", "--once")
	if code != 5 || !strings.Contains(out, "unknown 1") || !strings.Contains(out, "failed") {
		t.Fatalf("deliver --once whose write the receiver failed: exit %d, want 5 saying the write failed\n%s", code, out)
	}

	mustTidemark(t, 0, "--home", home, "outbox", "intents", "draft", "--lane", "hook", "--target", "room", "--body", "two")
	out, code = runCLI(t, "--home", home, "run", "--once")
	if code != 5 || !strings.Contains(out, "unknown 1") {
		t.Fatalf("run --once whose write the receiver failed: exit %d, want 5\n%s", code, out)
	}

	mustTidemark(t, 0, "--home", home, "outbox", "intents", "draft", "--lane", "hook", "--target", "room", "--body", "three")
	var stdout, stderr bytes.Buffer
	code = run([]string{"--home", home, "run", "--once", "--json"}, &stdout, &stderr)
	var reports []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &reports); err != nil {
		t.Fatalf("run --once --json: stdout is not one JSON document (%v):\n%s", err, stdout.String())
	}
	if code != 5 || !strings.Contains(stderr.String(), "unknown 1") {
		t.Fatalf("run --once --json: exit %d, want 5, the delivery on stderr\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// run --once --json --track prints one JSON document on stdout: the line
// that says a repository is now tracked goes to stderr.
func TestRunOnceTrackJSONIsOneDocument(t *testing.T) {
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--home", t.TempDir(), "run", "--once", "--json", "--track", mustGitRepo(t)}, &stdout, &stderr); code != 0 {
		t.Fatalf("run --once --json --track: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	var reports []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &reports); err != nil || len(reports) == 0 {
		t.Fatalf("run --once --json --track: stdout is not the run reports (%v):\n%s", err, stdout.String())
	}
	if !strings.Contains(stderr.String(), "tracking git repository") {
		t.Fatalf("stderr does not say the repository is tracked:\n%s", stderr.String())
	}
}
