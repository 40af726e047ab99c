package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func notesDir(t *testing.T, files ...string) string {
	t.Helper()
	d := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(d, f+".md"), []byte("# "+f+"\n\nAbout "+f+".\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func objectKeys(t *testing.T, objs objstore.Store, prefix string) []string {
	t.Helper()
	var keys []string
	if err := objs.List(context.Background(), prefix, func(in objstore.Info) error { keys = append(keys, in.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	return keys
}

// Removing a source is refused while it has events, unless forced; forced,
// it deletes the books, and the next sweep withdraws its pages and card
// from the wiki while another source's stay.
func TestRemoveSourceThenSweepWithdrawsItsPages(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	p := open(t, home, nil)
	gone, err := p.AddSource(ctx, ingestSource("gone", notesDir(t, "alpha", "beta")))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := p.AddSource(ctx, ingestSource("kept", notesDir(t, "gamma")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.RunOnce(ctx, OnceOptions{})
	if err != nil || res.Publish == nil || res.Publish.Published != 3 {
		t.Fatalf("run once: %v %+v", err, res.Publish)
	}
	objs, err := p.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(objectKeys(t, objs, "changes/")); n != 3 {
		t.Fatalf("%d pages published, want 3", n)
	}

	_, err = p.RemoveSource(ctx, "gone", "ada", false)
	if !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), "2 published pages") {
		t.Fatalf("unforced: %v", err)
	}
	rm, err := p.RemoveSource(ctx, "gone", "ada", true)
	if err != nil || rm.Events != 2 || rm.Published != 2 || rm.Action.Actor != "ada" {
		t.Fatalf("forced: %v %+v", err, rm)
	}
	svc, err := p.BindStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := svc.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Withdrawn != 2 || rep.Orphans != 0 {
		t.Fatalf("sweep: %+v, want the removed source's 2 pages withdrawn by the removal's record", rep)
	}
	if keys := objectKeys(t, objs, "changes/"); len(keys) != 1 {
		t.Fatalf("pages left: %v", keys)
	}
	cards := strings.Join(objectKeys(t, objs, "sources/"), " ")
	if strings.Contains(cards, gone.ID) || !strings.Contains(cards, kept.ID) {
		t.Fatalf("cards after the sweep: %s", cards)
	}
	idx, err := objs.Get(ctx, publish.IndexKey)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(idx.Body), gone.ID) || !strings.Contains(string(idx.Body), kept.ID) {
		t.Fatal("the index still lists the removed source, or lost the other")
	}
	removals, err := p.DB().Ingest().Removals(ctx, 5)
	if err != nil || len(removals) != 1 || removals[0].SourceName != "gone" {
		t.Fatalf("removals: %v %+v", err, removals)
	}
}

// A test fetch reports what a first run would record and stores nothing;
// a failed fetch is its outcome, mapped to an error kind.
func TestTestSourceReportsWithoutStoring(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/feed.xml" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/rss+xml")
		w.Write([]byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>b</title>
<item><guid>p1</guid><title>one</title><description>first</description></item></channel></rss>`))
	}))
	defer srv.Close()
	p := open(t, t.TempDir(), nil)
	rep, err := p.TestSource(ctx, TestRequest{Source: ingest.NewSource{Location: srv.URL + "/feed.xml", AllowPrivate: true}, Evidence: true})
	if err != nil || rep.Kind != "feed" || rep.Outcome != tidemark.OutcomeItems || len(rep.Items) != 1 || rep.Items[0].Evidence == "" || rep.Err() != nil {
		t.Fatalf("report: %v %+v", err, rep)
	}
	if srcs, _ := p.Sources(ctx); len(srcs) != 0 {
		t.Fatalf("a test stored sources: %+v", srcs)
	}
	rep, err = p.TestSource(ctx, TestRequest{Source: ingest.NewSource{Kind: "page", Location: srv.URL + "/nowhere", AllowPrivate: true}})
	if err != nil || rep.Outcome != tidemark.OutcomeInvalid || !errors.Is(rep.Err(), tidemark.ErrInvalid) {
		t.Fatalf("404: %v %+v", err, rep)
	}
}

// An OPML import adds each feed once, under a free name, and a dry run
// adds nothing; the export lists the feed sources.
func TestImportExportOPML(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	doc := `<opml version="2.0"><body><outline text="Go Blog" xmlUrl="https://go.dev/blog/feed.atom"/>
<outline text="Go Blog" xmlUrl="https://example.org/other.xml"/><outline text="x" xmlUrl="ftp://example.org/f"/></body></opml>`
	dry, err := p.ImportOPML(ctx, strings.NewReader(doc), OPMLImport{Interval: DefaultInterval, RetryBudget: 3, DryRun: true})
	if err != nil || len(dry.Added) != 2 || len(dry.Skipped) != 1 {
		t.Fatalf("dry run: %v %+v", err, dry)
	}
	if srcs, _ := p.Sources(ctx); len(srcs) != 0 {
		t.Fatal("a dry run added sources")
	}
	rep, err := p.ImportOPML(ctx, strings.NewReader(doc), OPMLImport{Interval: DefaultInterval, RetryBudget: 3})
	if err != nil || len(rep.Added) != 2 || rep.Added[1].Name != "go-blog-2" {
		t.Fatalf("import: %v %+v", err, rep)
	}
	again, err := p.ImportOPML(ctx, strings.NewReader(doc), OPMLImport{Interval: DefaultInterval, RetryBudget: 3})
	if err != nil || len(again.Added) != 0 || len(again.Skipped) != 3 {
		t.Fatalf("re-import: %v %+v", err, again)
	}
	var b strings.Builder
	if err := p.ExportOPML(ctx, &b); err != nil || strings.Count(b.String(), "xmlUrl=") != 2 {
		t.Fatalf("export: %v\n%s", err, b.String())
	}
}

// ValidateSource, which every add resolves through (ResolveSource) and an
// OPML import's dry run stops at, refuses the names the store would: one
// rule for a source's name everywhere (ingest.CheckName).
func TestValidateSourceChecksTheName(t *testing.T) {
	ok := ingest.NewSource{Name: "blog", Kind: "feed", Location: "https://example.com/feed", Interval: DefaultInterval, RetryBudget: DefaultRetryBudget}
	if err := ValidateSource(ok); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"..", "a%2Fb", "pay\u202egnp.exe", "blog\u200b"} {
		ns := ok
		ns.Name = name
		if err := ValidateSource(ns); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("ValidateSource named %q: %v, want an invalid-input error", name, err)
		}
	}
}

// Every list's filter that names something that does not exist is not
// found, naming it, as an unknown source always was: the CLI's
// `events list --run`, `publish summaries --event` and the API's
// /api/summaries?event= answer through these.
func TestListsByAnUnknownIDAreNotFound(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	if _, err := p.AddSource(ctx, ingestSource("notes", notesDir(t, "alpha"))); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunOnce(ctx, OnceOptions{}); err != nil {
		t.Fatal(err)
	}
	evs, err := p.Events(ctx, ingest.EventFilter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events: %v %+v", err, evs)
	}

	for name, list := range map[string]func() error{
		`source "nope"`: func() error { _, err := p.Runs(ctx, ingest.RunFilter{SourceID: "nope"}); return err },
		"run nope":      func() error { _, err := p.Events(ctx, ingest.EventFilter{RunID: "nope"}); return err },
		"event nope":    func() error { _, err := p.Summaries(ctx, publish.SummaryFilter{EventID: "nope"}); return err },
	} {
		if err := list(); !errors.Is(err, tidemark.ErrNotFound) || !strings.Contains(err.Error(), name) {
			t.Errorf("listing by %s: %v, want not found naming it", name, err)
		}
	}
	sums, err := p.Summaries(ctx, publish.SummaryFilter{EventID: evs[0].ID})
	if err != nil || len(sums) != 1 {
		t.Fatalf("the summaries of an event that exists: %v %+v", err, sums)
	}
}

// The same location, kind and config added twice is refused, naming the
// source that already watches it (src.md #21): it would file every change
// twice. A different config on a location may select other items (a dir's
// include, a json's items), so it is another source.
func TestAddSourceRefusesAnExactDuplicate(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	d := notesDir(t, "alpha")
	if _, err := p.AddSource(ctx, ingestSource("notes", d)); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{d, d + "/", filepath.Join(d, "..", filepath.Base(d)) + "//"} {
		_, err := p.AddSource(ctx, ingestSource("notes-again", loc))
		if !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), `"notes"`) {
			t.Fatalf("%s added again: %v, want a conflict naming notes", loc, err)
		}
	}
	other := ingestSource("notes-md", d)
	other.Config = map[string]string{"include": "*.md"}
	if _, err := p.AddSource(ctx, other); err != nil {
		t.Fatalf("another config on the same location: %v", err)
	}
	other.Name = "notes-md-again"
	if _, err := p.AddSource(ctx, other); !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), `"notes-md"`) {
		t.Fatalf("the same config again: %v", err)
	}
	srcs, err := p.Sources(ctx)
	if err != nil || len(srcs) != 2 {
		t.Fatalf("%d sources (%v), want 2", len(srcs), err)
	}
}

// An OPML import checks each feed's address as source add does (src.md
// #16): a feed on a loopback or private address is skipped, with the
// reason naming --allow-private, unless the import allows them.
func TestImportOPMLChecksPrivateAddresses(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	doc := `<opml version="2.0"><body><outline text="lan" xmlUrl="http://127.0.0.1:9/feed.xml"/></body></opml>`
	rep, err := p.ImportOPML(ctx, strings.NewReader(doc), OPMLImport{Interval: DefaultInterval, RetryBudget: 3})
	if err != nil || len(rep.Added) != 0 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "--allow-private") {
		t.Fatalf("a loopback feed: %v %+v", err, rep)
	}
	allow := true
	rep, err = p.ImportOPML(ctx, strings.NewReader(doc), OPMLImport{Interval: DefaultInterval, RetryBudget: 3, AllowPrivate: &allow})
	if err != nil || len(rep.Added) != 1 {
		t.Fatalf("allowed: %v %+v", err, rep)
	}
	srcs, err := p.Sources(ctx)
	if err != nil || len(srcs) != 1 || !srcs[0].AllowPrivate {
		t.Fatalf("sources: %v %+v", err, srcs)
	}
}

// Two processes adding one location at once both pass the check made
// before the insert; the database holds the location's key for one
// source, so exactly one is added and every other add is refused naming
// it, as the check would have, on SQLite and PostgreSQL. OPML imports and
// --track add through the same key.
func TestConcurrentAddsOfOneLocationAddOne(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		d := notesDir(t, "alpha")
		const n = 8
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			wins  []string
			errs  []error
			start = make(chan struct{})
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				// A location spelled another way is the same location.
				loc := d
				if i%2 == 1 {
					loc = d + "/"
				}
				src, err := p.AddSource(ctx, ingestSource(fmt.Sprintf("notes-%d", i), loc))
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					wins = append(wins, src.Name)
				} else {
					errs = append(errs, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("%d of %d concurrent adds of one location were added (%v), want 1; errors: %v", len(wins), n, wins, errs)
		}
		for _, err := range errs {
			if !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), fmt.Sprintf("source %q already watches", wins[0])) {
				t.Errorf("a losing add: %v, want a conflict naming %s", err, wins[0])
			}
		}
		srcs, err := p.Sources(ctx)
		if err != nil || len(srcs) != 1 {
			t.Fatalf("%d sources (%v), want 1", len(srcs), err)
		}
	})
}
