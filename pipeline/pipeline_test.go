package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/internal/gittest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/summarize/summarizers"
)

// gitRepo makes a repository with two commits.
func gitRepo(t *testing.T) string {
	return gittest.Repo(t, "parser: read <feeds>\n\nThe parser reads RSS and Atom.", "cursor: never move past unread data")
}

func open(t *testing.T, home string, logger *slog.Logger, obs ...PublishObserver) *Pipeline {
	t.Helper()
	cfg := Defaults()
	cfg.Home, cfg.Logger = home, logger
	if len(obs) > 0 {
		cfg.Observer = obs[0]
	}
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// cancelOnRound cancels the daemon's context when the publish loop logs the
// end of a round.
type cancelOnRound struct {
	slog.Handler
	cancel func()
}

func (h cancelOnRound) Enabled(context.Context, slog.Level) bool { return true }

func (h cancelOnRound) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "publish round" {
		h.cancel()
	}
	return nil
}

// The daemon's publish loop sweeps: a page deleted behind the books' back
// (which publish alone leaves alone: it is marked published) is back after
// one round.
func TestPublishLoopSweeps(t *testing.T) {
	home := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := &observer{}
	p := open(t, home, slog.New(cancelOnRound{Handler: slog.DiscardHandler, cancel: cancel}), obs)
	if _, err := p.RunOnce(context.Background(), OnceOptions{Track: []string{gitRepo(t)}}); err != nil {
		t.Fatalf("run once: %v", err)
	}
	*obs = observer{} // what the loop does, not run --once's publishing
	objs, err := dir.Open(filepath.Join(home, "wiki"))
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob(filepath.Join(home, "wiki", "changes", "*.html"))
	if len(pages) != 2 {
		t.Fatalf("pages %v", pages)
	}
	key := "changes/" + filepath.Base(pages[0])
	if err := objs.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if err := p.publishLoop(ctx); err != context.Canceled {
		t.Fatalf("publish loop: %v, want context.Canceled after one round", err)
	}
	if _, err := objs.Get(context.Background(), key); err != nil {
		t.Fatalf("%s after one round of the loop: %v", key, err)
	}
	// The loop tells its observer what only this process knows.
	if obs.rounds != 1 || obs.sweeps != 1 || obs.republished != 1 {
		t.Fatalf("observed %d rounds, %d sweeps, %d republished; want 1, 1, 1", obs.rounds, obs.sweeps, obs.republished)
	}
}

type observer struct{ rounds, published, sweeps, republished int }

func (o *observer) ObservePublish(rep publish.PublishReport) {
	o.rounds++
	o.published += rep.Published
}
func (o *observer) ObserveSweep(_ time.Duration, rep publish.SweepReport) {
	o.sweeps++
	o.republished += rep.Republished
}

// RunOnce carries a change all the way: tracked, ingested, summarized and
// published; a second pass has nothing to do and says so by doing nothing.
func TestRunOnceTracksIngestsAndPublishes(t *testing.T) {
	home := t.TempDir()
	p := open(t, home, nil)
	repo := gitRepo(t)
	var tracked []tidemark.Source
	res, err := p.RunOnce(context.Background(), OnceOptions{Track: []string{repo, repo}, OnTracked: func(s tidemark.Source) { tracked = append(tracked, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(tracked) != 1 {
		t.Fatalf("tracked %d sources for one repository named twice", len(tracked))
	}
	if len(res.Reports) != 1 || res.Reports[0].EventsNew != 2 {
		t.Fatalf("reports %+v", res.Reports)
	}
	if res.Publish == nil || res.Publish.Published != 2 || !strings.HasSuffix(res.Publish.Index, "index.html") {
		t.Fatalf("publish %+v", res.Publish)
	}
	// What was ingested is shown: the newest events of the source that found them.
	recent := p.Recent(context.Background(), append(res.Reports, res.Reports...), 10)
	if len(recent.Sources) != 1 || recent.Sources[0].Source != res.Reports[0].Source || len(recent.Sources[0].Events) != 2 {
		t.Fatalf("recent %+v", recent)
	}
	var text strings.Builder
	if err := recent.WriteText(&text); err != nil || !strings.HasPrefix(text.String(), "\nnewest events of "+res.Reports[0].Source+":\nOCCURRED") ||
		!strings.HasSuffix(text.String(), "\ndata: "+p.DB().URL()+"\n") {
		t.Fatalf("recent text %q, %v", text.String(), err)
	}
	again, err := p.RunOnce(context.Background(), OnceOptions{})
	if err != nil || len(again.Reports) != 0 || (again.Publish != nil && again.Publish.Published != 0) {
		t.Fatalf("second pass: %+v, %v", again, err)
	}
}

// A pass where a source fails is incomplete (exit 5), and what the other
// sources did is kept.
func TestRunOnceIsIncompleteWhenASourceFails(t *testing.T) {
	home := t.TempDir()
	p := open(t, home, nil)
	repo := gitRepo(t)
	if _, err := p.AddSource(context.Background(), ingestSource("good", repo)); err != nil {
		t.Fatal(err)
	}
	gone := gitRepo(t)
	if _, err := p.AddSource(context.Background(), ingestSource("gone", gone)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	res, err := p.RunOnce(context.Background(), OnceOptions{})
	var inc *IncompleteError
	if !errors.As(err, &inc) || tidemark.ExitCode(err) != tidemark.ExitUnavailable || !strings.Contains(inc.What, "gone") {
		t.Fatalf("err %v (exit %d), want an incomplete pass naming the failed source", err, tidemark.ExitCode(err))
	}
	if res.Publish == nil || res.Publish.Published != 2 {
		t.Fatalf("the good source's pages were not published: %+v", res.Publish)
	}
}

// A store that is not the wiki's is refused before anything is claimed.
func TestRunOnceRefusesAnotherStore(t *testing.T) {
	home := t.TempDir()
	p := open(t, home, nil)
	if _, err := p.RunOnce(context.Background(), OnceOptions{Track: []string{gitRepo(t)}}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	cfg := Defaults()
	cfg.Home, cfg.Store = home, t.TempDir()
	q, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	res, err := q.RunOnce(context.Background(), OnceOptions{})
	if !errors.Is(err, tidemark.ErrInvalid) || res.Ingested {
		t.Fatalf("err %v, ingested %v: want a refusal before any claim", err, res.Ingested)
	}
}

func ingestSource(name, loc string) ingest.NewSource {
	return ingest.NewSource{Name: name, Location: loc, Interval: DefaultInterval, RetryBudget: DefaultRetryBudget}
}

// listCounter counts the listings of a prefix of the store it wraps.
type listCounter struct {
	objstore.Store
	prefix string
	n      int
}

func (c *listCounter) List(ctx context.Context, prefix string, fn func(objstore.Info) error) error {
	if prefix == c.prefix {
		c.n++
	}
	return c.Store.List(ctx, prefix, fn)
}

// relinkCounter counts the store's searches for pages to relink.
type relinkCounter struct {
	publish.Store
	n int
}

func (c *relinkCounter) Relink(ctx context.Context, limit int) ([]string, error) {
	c.n++
	return c.Store.Relink(ctx, limit)
}

// A daemon's round publishes, then sweeps; the sweep relinks and refreshes
// the listings from the store's listing it reads, so the round lists the
// store's pages once (a listing per page thousand on S3) and looks for
// pages to relink once (a query over every page), not once more each for
// the publishing, and the index and the neighbour still show the new page.
func TestADaemonRoundListsThePagesOnce(t *testing.T) {
	ctx := context.Background()
	home, repo := t.TempDir(), gitRepo(t)
	p := open(t, home, nil)
	res, err := p.RunOnce(ctx, OnceOptions{Track: []string{repo}})
	if err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "feeds: a third change")
	if _, err := p.RunSource(ctx, res.Reports[0].Source, 1, nil); err != nil {
		t.Fatal(err)
	}
	svc, err := p.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	counter := &listCounter{Store: svc.Objects, prefix: "changes/"}
	relinks := &relinkCounter{Store: svc.Store}
	svc.Objects, svc.Store = counter, relinks
	if err := p.publishAndSweep(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if counter.n != 1 || relinks.n != 1 {
		t.Errorf("a round listed changes/ %d times and looked for pages to relink %d times, want 1 and 1", counter.n, relinks.n)
	}
	index, err := os.ReadFile(filepath.Join(home, "wiki", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(index), `href="changes/`); got != 3 {
		t.Fatalf("the index links %d change pages after the round, want 3", got)
	}
	pages, _ := filepath.Glob(filepath.Join(home, "wiki", "changes", "*.html"))
	linked := 0
	for _, page := range pages {
		if b, err := os.ReadFile(page); err == nil && strings.Contains(string(b), `rel="next">feeds: a third change →`) {
			linked++
		}
	}
	if linked != 1 {
		t.Fatalf("%d pages link the new change as the next one, want its older neighbour's", linked)
	}
}

// A pass that publishes every page republishes the pages the books record
// missing from the store: after the wiki is emptied and rebound on
// purpose, `run --once` puts every page back and the index lists them,
// where before it listed none until a sweep.
func TestRunOnceRestoresThePagesMissingFromTheStore(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	p := open(t, home, nil)
	res, err := p.RunOnce(ctx, OnceOptions{Track: []string{gitRepo(t)}})
	if err != nil || res.Publish == nil || res.Publish.Published != 2 {
		t.Fatalf("first pass: %+v %v", res.Publish, err)
	}
	wiki := filepath.Join(home, "wiki")
	if err := os.RemoveAll(wiki); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Rebind(ctx); err != nil {
		t.Fatal(err)
	}
	res, err = p.RunOnce(ctx, OnceOptions{})
	if err != nil || res.Publish == nil || res.Publish.Restored != 2 || res.Publish.Missing != 0 {
		t.Fatalf("pass after the rebind: %+v %v, want both pages restored", res.Publish, err)
	}
	index, err := os.ReadFile(filepath.Join(wiki, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(wiki, "changes", "*.html"))
	if err != nil || len(pages) != 2 {
		t.Fatalf("pages in the store: %v %v", pages, err)
	}
	for _, page := range pages {
		if !strings.Contains(string(index), "changes/"+filepath.Base(page)) {
			t.Errorf("the index does not list %s", filepath.Base(page))
		}
	}
	// Nothing missing: the next pass does not sweep.
	svc, err := p.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	counter := &listCounter{Store: svc.Objects, prefix: "changes/"}
	svc.Objects = counter
	if err := p.publishOnce(ctx, svc, OnceOptions{}, &tally{}, &OnceResult{}); err != nil || counter.n != 0 {
		t.Fatalf("a pass with nothing missing listed the page objects %d times (%v)", counter.n, err)
	}
}

// A run that was recorded as failed (here invalid: the history it read was
// rewritten) is a source that failed, not tidemark failing: RunSource says
// so with ErrUnavailable, like run --once, and never as an unexpected
// error; the message names the source and the outcome once.
func TestRunSourceReportsAFailedRunAsAFailedSource(t *testing.T) {
	ctx := context.Background()
	home, repo := t.TempDir(), gitRepo(t)
	p := open(t, home, nil)
	res, err := p.RunOnce(ctx, OnceOptions{Track: []string{repo}})
	if err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "reset", "-q", "--hard", "HEAD~1")
	gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "a rewritten second change")
	name := res.Reports[0].Source
	reports, err := p.RunSource(ctx, name, 1, nil)
	if len(reports) != 1 || reports[0].Outcome != tidemark.OutcomeInvalid {
		t.Fatalf("reports %+v, want one invalid run", reports)
	}
	if !errors.Is(err, tidemark.ErrUnavailable) || tidemark.ExitCode(err) != tidemark.ExitUnavailable {
		t.Fatalf("RunSource of a failed run: %v (exit %d), want unavailable (exit %d)", err, tidemark.ExitCode(err), tidemark.ExitUnavailable)
	}
	msg := err.Error()
	if !strings.Contains(msg, name) || strings.Count(msg, "invalid") != 1 {
		t.Errorf("message %q: want the source's name and the outcome once", msg)
	}
}

// A source is added only where one was named: an empty location (a body
// whose fields were lost on the way) is refused, never read as the
// working directory of whoever runs the pipeline.
func TestAddSourceRefusesAnEmptyLocation(t *testing.T) {
	ctx := context.Background()
	home, repo := t.TempDir(), gitRepo(t)
	t.Chdir(repo) // a git repository, as a server's working directory may be
	p := open(t, home, nil)
	for _, loc := range []string{"", "   "} {
		src, err := p.AddSource(ctx, ingest.NewSource{Location: loc, Interval: time.Hour, RetryBudget: 3})
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "location") {
			t.Fatalf("AddSource(location %q) = %+v, %v; want invalid location", loc, src, err)
		}
	}
	if srcs, err := p.Sources(ctx); err != nil || len(srcs) != 0 {
		t.Fatalf("sources after the refusals: %v %v", srcs, err)
	}
}

// The README's first command, run again after a commit, reads the commit
// and publishes its page: a repository named by --track is run now, due
// or not (its interval paces the daemon, not the one who names it).
func TestRunOnceRunsATrackedRepositoryNow(t *testing.T) {
	ctx := context.Background()
	home, repo := t.TempDir(), gitRepo(t)
	p := open(t, home, nil)
	if _, err := p.RunOnce(ctx, OnceOptions{Track: []string{repo}}); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "feeds: a third change")
	res, err := p.RunOnce(ctx, OnceOptions{Track: []string{repo}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Reports) != 1 || res.Reports[0].EventsNew != 1 || res.Publish == nil || res.Publish.Published != 1 {
		t.Fatalf("the second run --once --track: reports %+v, publish %+v; want the new commit read and published", res.Reports, res.Publish)
	}
	// The tracked run is claimed with the pass's --lease, as the drain's runs are.
	gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "feeds: a leased change")
	if _, err := p.RunOnce(ctx, OnceOptions{Track: []string{repo}, Lease: 7 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	var lease int64
	if err := p.DB().SQL().QueryRowContext(ctx, `SELECT lease_expires_at - started_at FROM ingest_runs ORDER BY started_at DESC, id DESC LIMIT 1`).Scan(&lease); err != nil || lease != (7*time.Minute).Milliseconds() {
		t.Fatalf("the tracked run's lease: %d ms (%v), want --lease's %d", lease, err, (7 * time.Minute).Milliseconds())
	}
	// Without --track the interval decides: nothing is due.
	gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "feeds: a fourth change")
	if res, err := p.RunOnce(ctx, OnceOptions{}); err != nil || len(res.Reports) != 0 {
		t.Fatalf("run --once without --track: %+v %v, want no run", res.Reports, err)
	}
}

// run --once's progress moves with the work, not by rounds: when ingest
// ends the display says publishing is under way before anything is
// summarized, and then every summary accepted and every page published is
// told as it happens (a round is 1,000 of each).
func TestRunOnceTellsProgressAsItGoes(t *testing.T) {
	p := open(t, t.TempDir(), nil)
	if _, err := p.AddSource(context.Background(), ingestSource("notes", notesDir(t, "a", "b", "c"))); err != nil {
		t.Fatal(err)
	}
	var descs []string
	if _, err := p.RunOnce(context.Background(), OnceOptions{OnProgress: func(d string) { descs = append(descs, d) }}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i, d := range descs {
		seen[d] = i + 1
	}
	want := []string{
		"ingest: 1 runs, 3 events",
		"publish: 0 summaries, 0 pages",
		"publish: 1 summaries, 0 pages", "publish: 2 summaries, 0 pages", "publish: 3 summaries, 0 pages",
		"publish: 3 summaries, 1 pages", "publish: 3 summaries, 2 pages", "publish: 3 summaries, 3 pages",
	}
	last := 0
	for _, w := range want {
		if seen[w] == 0 || seen[w] < last {
			t.Fatalf("progress %q, want in order %q", descs, want)
		}
		last = seen[w]
	}
}

// A daemon's round whose summarizer failed part-way still sweeps: the
// pages it published are linked from the listings at once, not only once
// the summarizer answers again.
func TestADaemonRoundSweepsWhenTheSummarizerFails(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), "cursor: never move") {
			http.Error(w, `{"error":{"message":"the model crashed"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Reads feeds."}}]}`)
	}))
	defer srv.Close()
	home, repo := t.TempDir(), gitRepo(t)
	p := open(t, home, nil)
	p.cfg.Summarizer, p.cfg.OpenAI = "openai", summarizers.OpenAI{BaseURL: srv.URL + "/v1", Model: "m"}
	src, _, err := p.TrackRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunSource(ctx, src.Name, 1, nil); err != nil {
		t.Fatal(err)
	}
	svc, err := p.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.publishAndSweep(ctx, svc); !errors.Is(err, tidemark.ErrUnavailable) {
		t.Fatalf("round: %v, want the summarizer's outage", err)
	}
	index, err := os.ReadFile(filepath.Join(home, "wiki", "index.html"))
	if err != nil || strings.Count(string(index), `href="changes/`) != 1 {
		t.Fatalf("the index after a round that published one page before the summarizer failed: %v\n%s", err, index)
	}
}

// A detached migration that fails in the pass is work the pass set out to
// do and did not: the pass finishes its other steps, then is incomplete
// (exit 5), naming the run and what to do.
func TestRunOnceIsIncompleteWhenADetachedMigrationFails(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	if _, err := p.CreateCollection(ctx, "ann", "notes", []string{"title:text"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ImportDocuments(ctx, "ann", "notes", "in.jsonl", strings.NewReader("{\"title\":\"1\"}\n{\"title\":\"t1\"}\n")); err != nil {
		t.Fatal(err)
	}
	run, err := p.StartMigration(ctx, "ann", "notes", "title", "number", 100)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.RunOnce(ctx, OnceOptions{})
	var inc *IncompleteError
	if !errors.As(err, &inc) || tidemark.ExitCode(err) != tidemark.ExitUnavailable || !strings.Contains(inc.What, run.ID) ||
		!strings.Contains(inc.What, "migrate resume") {
		t.Fatalf("err %v (exit %d), want an incomplete pass naming migration %s and how to go on", err, tidemark.ExitCode(err), run.ID)
	}
	if res.MigrationErr == nil || res.Migrations != 0 {
		t.Fatalf("result %+v, want the migration's failure", res)
	}
}

// publish tells its progress as each summary and page is done, as run
// --once does, so a slow model does not mean minutes of silence.
func TestPublishTellsProgressAsItGoes(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	if _, err := p.AddSource(ctx, ingestSource("notes", notesDir(t, "a", "b"))); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunSource(ctx, "notes", 1, nil); err != nil {
		t.Fatal(err)
	}
	var descs []string
	if _, err := p.Publish(WithPublishProgress(ctx, func(d string) { descs = append(descs, d) }), "", 100); err != nil {
		t.Fatal(err)
	}
	want := []string{"publish: 0 summaries, 0 pages", "publish: 1 summaries, 0 pages", "publish: 2 summaries, 0 pages",
		"publish: 2 summaries, 1 pages", "publish: 2 summaries, 2 pages"}
	if strings.Join(descs, "|") != strings.Join(want, "|") {
		t.Fatalf("progress %q, want %q", descs, want)
	}
}

// --max-passes bounds the runs of a source --track names, counted across
// the tracked run and the drain after it: a backlog left after them is
// reported, never read by a second helping of runs.
func TestRunOnceTrackedMaxPassesCountsEveryRun(t *testing.T) {
	ctx := context.Background()
	h := gittest.NewHistory(t)
	head := h.Line(0, "first", 2)
	repo := h.Write(head)
	p := open(t, t.TempDir(), nil)
	if _, err := p.RunOnce(ctx, OnceOptions{Track: []string{repo}}); err != nil {
		t.Fatal(err)
	}
	h.Extend(repo, h.Line(head, "backlog", 1200)) // three windows of 500
	res, err := p.RunOnce(ctx, OnceOptions{Track: []string{repo}, MaxPasses: 1})
	if len(res.Reports) != 1 || res.Reports[0].EventsNew != 500 {
		t.Fatalf("run --once --track --max-passes 1: %d runs (%+v), want one of 500 events", len(res.Reports), res.Reports)
	}
	if !errors.Is(err, tidemark.ErrUnavailable) || !strings.Contains(err.Error(), "1 sources still have a backlog after 1 runs each") {
		t.Fatalf("err %v: want the backlog left reported", err)
	}
	res, err = p.RunOnce(ctx, OnceOptions{Track: []string{repo}, MaxPasses: 2})
	if err != nil || len(res.Reports) != 2 || res.Reports[0].EventsNew+res.Reports[1].EventsNew != 700 {
		t.Fatalf("run --once --track --max-passes 2: %+v %v, want two runs reading the 700 left", res.Reports, err)
	}
}
