package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func pageBody(t *testing.T, p *Pipeline, pageID string) string {
	t.Helper()
	objs, err := p.Objects()
	if err != nil {
		t.Fatal(err)
	}
	o, err := objs.Get(context.Background(), publish.PageKey(pageID))
	if err != nil {
		t.Fatal(err)
	}
	return string(o.Body)
}

// Deleting a page document whose title a published page shows is refused
// without force, and with force republishes the page without it; the
// audit says who wrote and who deleted, and keeps the deleted fields.
func TestDeletePageDocument(t *testing.T) {
	repo := gitRepo(t)
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		if _, err := p.RunOnce(ctx, OnceOptions{Track: []string{repo}}); err != nil {
			t.Fatal(err)
		}
		evs, err := p.DB().Ingest().Events(ctx, ingest.EventFilter{Limit: 10})
		if err != nil || len(evs) == 0 {
			t.Fatalf("events: %v %v", evs, err)
		}
		ev := evs[0].ID
		title, _ := json.Marshal("A corrected title")
		d, res, err := p.PutDocument(ctx, "ann", content.PagesCollection, content.Put{ID: ev, Set: content.Fields{"title": title}})
		if err != nil || res == nil {
			t.Fatalf("put: %+v %v %v", d, res, err)
		}
		if !strings.Contains(pageBody(t, p, res.PageID), "A corrected title") {
			t.Fatal("the page does not show the corrected title")
		}
		del, err := p.Deletion(ctx, content.PagesCollection, ev)
		if err != nil || len(del.Shown) != 1 || del.Shown[0] != "title" || del.History != 0 {
			t.Fatalf("deletion: %+v %v", del, err)
		}
		if _, _, err := p.DeleteDocument(ctx, "bob", content.PagesCollection, ev, false); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("delete without force: %v", err)
		}
		if _, err := p.Document(ctx, content.PagesCollection, ev); err != nil {
			t.Fatalf("a refused delete lost the document: %v", err)
		}
		a, res, err := p.DeleteDocument(ctx, "bob", content.PagesCollection, ev, true)
		if err != nil || res == nil || !a.Forced || a.Actor != "bob" || string(a.Fields["title"]) != string(title) {
			t.Fatalf("forced delete: %+v %+v %v", a, res, err)
		}
		if strings.Contains(pageBody(t, p, res.PageID), "A corrected title") {
			t.Fatal("the page still shows the deleted title")
		}
		acts, err := p.DocumentActions(ctx, content.ActionFilter{Collection: content.PagesCollection, DocumentID: ev})
		if err != nil || len(acts) != 2 || acts[0].Actor != "bob" || acts[1].Actor != "ann" || acts[1].Action != content.ActionPut {
			t.Fatalf("audit: %+v %v", acts, err)
		}
		// A page document that overrides nothing, with no history, goes
		// without force.
		if _, _, err := p.PutDocument(ctx, "ann", content.PagesCollection, content.Put{ID: ev, Unset: []string{"title"}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.DeleteDocument(ctx, "ann", content.PagesCollection, ev, false); err != nil {
			t.Fatalf("delete of an empty override: %v", err)
		}
	})
}

// A document with earlier versions keeps them unless forced; migration
// runs are started, resumed and aborted through the pipeline, each
// audited with who asked.
func TestDocumentsAndMigrations(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		if _, err := p.CreateCollection(ctx, "ann", "things", []string{"n:text"}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.CreateCollection(ctx, "ann", "bad", []string{"n:money"}); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("bad field spec: %v", err)
		}
		n, err := p.ImportDocuments(ctx, "ann", "things", "in.jsonl", strings.NewReader("{\"n\":\"1\"}\n\n{\"n\":\"2\"}\n{\"n\":\"x\"}\n"))
		if err != nil || n.Imported != 3 {
			t.Fatalf("import: %+v %v", n, err)
		}
		if _, err := p.ImportDocuments(ctx, "ann", "things", "in.jsonl", strings.NewReader("{\"n\":\"1\"}\nnot json\n")); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("import of a bad line: %v", err)
		}
		docs, _ := p.Documents(ctx, "things", "", 10)
		if len(docs) != 3 {
			t.Fatalf("an import that failed kept documents: %d", len(docs))
		}
		run, err := p.StartMigration(ctx, "cy", "things", "n", "number", 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.DeleteDocument(ctx, "cy", "things", docs[0].ID, true); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("delete during a migration: %v", err)
		}
		var seen []content.Run
		r, err := p.DriveMigration(ctx, run.ID, func(r content.Run) { seen = append(seen, r) })
		var failed *content.FailedError
		if !errors.As(err, &failed) || r.Status != content.RunFailed || r.FailedDocumentID != docs[2].ID || len(seen) < 2 {
			t.Fatalf("drive: %+v %v (progress %d)", r, err, len(seen))
		}
		if _, err := p.ResumeMigration(ctx, "cy", "nope"); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("resume of no run: %v", err)
		}
		if r, err = p.AbortMigration(ctx, "dee", run.ID); err != nil || r.Status != content.RunAborting {
			t.Fatalf("abort: %+v %v", r, err)
		}
		if r, err = p.DriveMigration(ctx, run.ID, nil); err != nil || r.Status != content.RunAborted || r.Restored != 2 {
			t.Fatalf("drive the abort: %+v %v", r, err)
		}
		if _, err := p.ResumeMigration(ctx, "cy", run.ID); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("resume of an aborted run: %v", err)
		}
		acts, err := p.DocumentActions(ctx, content.ActionFilter{RunID: run.ID})
		if err != nil || len(acts) != 2 || acts[0].Action != content.ActionMigrationAbort || acts[0].Actor != "dee" || acts[1].Actor != "cy" {
			t.Fatalf("the run's audit: %+v %v", acts, err)
		}
		// Each document now has earlier versions (converted, restored):
		// deleting one needs force.
		if _, _, err := p.DeleteDocument(ctx, "cy", "things", docs[0].ID, false); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("delete of a document with history: %v", err)
		}
		if a, _, err := p.DeleteDocument(ctx, "cy", "things", docs[0].ID, true); err != nil || !a.Forced || a.Version != 3 {
			t.Fatalf("forced delete: %+v %v", a, err)
		}
		if d, err := p.Collection(ctx, "things"); err != nil || d.Documents != 2 || len(d.Migrations) != 0 {
			t.Fatalf("collection: %+v %v", d, err)
		}
	})
}

func objectBody(t *testing.T, p *Pipeline, key string) string {
	t.Helper()
	objs, err := p.Objects()
	if err != nil {
		t.Fatal(err)
	}
	o, err := objs.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return string(o.Body)
}

// A page document is keyed by the event its page shows: one for an event
// that does not exist is refused, naming it, and nothing is stored. An
// edited title shows at once on the page and on the listings that link to
// it (the index, the source's page), not at the next publishing round.
func TestPageDocumentsFollowTheirEvents(t *testing.T) {
	repo := gitRepo(t)
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	if _, err := p.RunOnce(ctx, OnceOptions{Track: []string{repo}}); err != nil {
		t.Fatal(err)
	}
	title, _ := json.Marshal("ghost")
	const ghost = "01M8AAAAAAAAAAAAAAAAAAAAAA"
	if _, _, err := p.PutDocument(ctx, "ann", content.PagesCollection, content.Put{ID: ghost, Set: content.Fields{"title": title}}); !errors.Is(err, tidemark.ErrNotFound) || !strings.Contains(err.Error(), ghost) {
		t.Fatalf("a page document for no event: %v, want ErrNotFound naming it", err)
	}
	if _, err := p.Document(ctx, content.PagesCollection, ghost); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("the refused page document was stored: %v", err)
	}
	if _, err := p.ImportDocuments(ctx, "ann", content.PagesCollection, "in.jsonl", strings.NewReader(`{"id":"`+ghost+`","title":"ghost"}`+"\n")); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("an imported page document for no event: %v, want ErrNotFound", err)
	}

	evs, err := p.DB().Ingest().Events(ctx, ingest.EventFilter{Limit: 10})
	if err != nil || len(evs) == 0 {
		t.Fatalf("events: %v %v", evs, err)
	}
	title, _ = json.Marshal("A corrected title")
	if _, res, err := p.PutDocument(ctx, "ann", content.PagesCollection, content.Put{ID: evs[0].ID, Set: content.Fields{"title": title}}); err != nil || res == nil {
		t.Fatalf("put: %v %v", res, err)
	}
	for _, key := range []string{publish.IndexKey, publish.CardKey(evs[0].SourceID)} {
		if !strings.Contains(objectBody(t, p, key), "A corrected title") {
			t.Errorf("%s does not show the edited title until the next round", key)
		}
	}
}
