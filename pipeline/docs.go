package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/publish"
)

// Collections lists the document collections.
func (p *Pipeline) Collections(ctx context.Context) (content.Collections, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Collections{}, err
	}
	return p.db.Content().Collections(ctx)
}

// Collection returns a collection with its unfinished migration runs.
func (p *Pipeline) Collection(ctx context.Context, name string) (content.CollectionDetail, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.CollectionDetail{}, err
	}
	st := p.db.Content()
	c, err := st.Collection(ctx, name)
	if err != nil {
		return content.CollectionDetail{}, err
	}
	runs, err := st.Runs(ctx, content.RunFilter{Collection: c.Name})
	if err != nil {
		return content.CollectionDetail{}, err
	}
	d := content.CollectionDetail{Collection: c, Migrations: []content.Run{}}
	for _, r := range runs {
		if r.Status.Open() {
			d.Migrations = append(d.Migrations, r)
		}
	}
	return d, nil
}

// CreateCollection creates a collection whose fields are given as
// NAME:TYPE specs, audited with actor.
func (p *Pipeline) CreateCollection(ctx context.Context, actor, name string, specs []string) (content.Collection, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Collection{}, err
	}
	fields := make([]content.Field, 0, len(specs))
	for _, s := range specs {
		f, err := content.ParseFieldSpec(s)
		if err != nil {
			return content.Collection{}, err
		}
		fields = append(fields, f)
	}
	st := p.db.Content()
	c, err := st.CreateCollection(ctx, name, fields)
	if err != nil {
		return c, err
	}
	_, err = st.Record(ctx, content.Action{Action: content.ActionCreateCollection, Collection: c.Name, Actor: actor})
	return c, err
}

// maxImportLine bounds one line of an import.
const maxImportLine = content.MaxDocumentBytes + 1024

// Imported is what an import created.
type Imported struct {
	Collection string `json:"collection"`
	Imported   int    `json:"imported"`
}

// WriteText says how many documents were imported.
func (m Imported) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "imported %d documents into %s\n", m.Imported, m.Collection)
	return err
}

// ImportDocuments creates a document from every line of r (JSON lines:
// one object of field values a line, with an optional "id"), all or
// nothing, audited with actor. name is what errors call r (a file name).
func (p *Pipeline) ImportDocuments(ctx context.Context, actor, collection, name string, r io.Reader) (Imported, error) {
	if err := p.checkOpen(ctx); err != nil {
		return Imported{}, err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxImportLine)
	line := 0
	next := func() (content.Put, bool, error) {
		for sc.Scan() {
			line++
			b := bytes.TrimSpace(sc.Bytes())
			if len(b) == 0 {
				continue
			}
			put, err := parseImportLine(b)
			if err == nil {
				err = p.checkPageEvent(ctx, collection, put.ID)
			}
			if err != nil {
				return put, false, fmt.Errorf("%s line %d: %w", name, line, err)
			}
			return put, true, nil
		}
		if err := sc.Err(); err != nil {
			return content.Put{}, false, tidemark.Invalidf(fmt.Sprintf("%s line %d", name, line+1), "", "%v (at most %d bytes a line)", err, maxImportLine)
		}
		return content.Put{}, false, nil
	}
	st := p.db.Content()
	n, err := st.Import(ctx, collection, next)
	if err != nil {
		return Imported{}, err
	}
	_, err = st.Record(ctx, content.Action{Action: content.ActionImport, Collection: collection, Actor: actor,
		Note: fmt.Sprintf("%d documents from %s", n, name)})
	return Imported{collection, n}, err
}

func parseImportLine(b []byte) (content.Put, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return content.Put{}, tidemark.Invalidf("line", string(b), "want one JSON object of field values: %v", err)
	}
	put := content.Put{Set: content.Fields{}}
	for k, v := range obj {
		if k == "id" {
			if err := json.Unmarshal(v, &put.ID); err != nil {
				return put, tidemark.Invalidf("id", string(v), "want a string ULID")
			}
			continue
		}
		put.Set[k] = v
	}
	return put, nil
}

// Document returns a document's current version.
func (p *Pipeline) Document(ctx context.Context, collection, id string) (content.Document, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Document{}, err
	}
	return p.db.Content().Document(ctx, collection, id)
}

// DocumentView returns a document's current version with its values in
// its collection's fields.
func (p *Pipeline) DocumentView(ctx context.Context, collection, id string) (content.DocumentView, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.DocumentView{}, err
	}
	c, err := p.db.Content().Collection(ctx, collection)
	if err != nil {
		return content.DocumentView{}, err
	}
	d, err := p.db.Content().Document(ctx, collection, id)
	if err != nil {
		return content.DocumentView{}, err
	}
	return c.View(d), nil
}

// Documents lists documents in ID order after the ID after.
func (p *Pipeline) Documents(ctx context.Context, collection, after string, limit int) (content.Documents, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Documents{}, err
	}
	return p.db.Content().Documents(ctx, collection, after, limit)
}

// DocumentVersions lists a document's version snapshots, oldest first.
func (p *Pipeline) DocumentVersions(ctx context.Context, collection, id string) (content.Versions, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Versions{}, err
	}
	vs, err := p.db.Content().Versions(ctx, collection, id)
	if vs == nil && err == nil {
		vs = []content.Version{}
	}
	return vs, err
}

// DocumentActions lists the audit of documents and migrations, newest
// first.
func (p *Pipeline) DocumentActions(ctx context.Context, f content.ActionFilter) ([]content.Action, error) {
	if err := p.checkOpen(ctx); err != nil {
		return nil, err
	}
	return p.db.Content().Actions(ctx, f)
}

// PutDocument writes a document, audited with actor. A page document (the
// built-in pages collection) republishes its page at once, so an editor's
// correction shows now rather than at the page's next change; a page that
// was never published shows the edit when it is. republished is the
// page's new publication, nil when nothing was republished. An error after
// the write says the write is kept.
func (p *Pipeline) PutDocument(ctx context.Context, actor, collection string, put content.Put) (d content.Document, republished *publish.Result, err error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Document{}, nil, err
	}
	if len(put.Set) == 0 && len(put.Unset) == 0 {
		return d, nil, tidemark.Invalidf("fields", "", "nothing to write: set or unset at least one field (%s, %s)", tidemark.Input("set"), tidemark.Input("unset"))
	}
	put.Actor = actor
	if err := p.checkPageEvent(ctx, collection, put.ID); err != nil {
		return d, nil, err
	}
	d, err = p.db.Content().Put(ctx, collection, put)
	if err != nil || d.Collection != content.PagesCollection {
		return d, nil, err
	}
	res, err := p.republishPage(ctx, d.ID)
	if err != nil {
		err = fmt.Errorf("%s/%s is at version %d, but: %w", d.Collection, d.ID, d.Version, err)
	}
	return d, res, err
}

// checkPageEvent refuses a page document (collection pages) whose ID is
// not an event's: a page document is keyed by the ID of the event its page
// shows, and one of no event would show nowhere.
func (p *Pipeline) checkPageEvent(ctx context.Context, collection, id string) error {
	if collection != content.PagesCollection {
		return nil
	}
	if id == "" {
		return tidemark.Invalidf("id", "", "a page document needs the ID of the event its page shows")
	}
	if _, err := p.db.Ingest().Event(ctx, id); err != nil {
		return fmt.Errorf("page document %s: a page document is keyed by the ID of the event its page shows: %w", id, err)
	}
	return nil
}

// republishPage republishes the page of event eventID with its current
// summary, and the listings that show its title; nil when the event has
// none.
func (p *Pipeline) republishPage(ctx context.Context, eventID string) (*publish.Result, error) {
	svc, err := p.Publisher()
	if err != nil {
		return nil, err
	}
	summaryID, err := svc.Store.CurrentSummary(ctx, eventID)
	if err != nil || summaryID == "" {
		return nil, err
	}
	res, err := svc.Publish(ctx, summaryID)
	if err != nil {
		return nil, fmt.Errorf("republish page %s: %w", res.PageID, err)
	}
	// The index, the archive and the source's pages list the page by the
	// title it shows: they show the edit now, not at the next round.
	if _, err := svc.RefreshListings(ctx); err != nil {
		return &res, fmt.Errorf("republished page %s, but refresh the listings: %w", res.PageID, err)
	}
	return &res, nil
}

// Deletion says what deleting a document would lose (content.Deletion):
// its earlier versions and, for a page document, what its published page
// shows of it.
func (p *Pipeline) Deletion(ctx context.Context, collection, id string) (content.Deletion, error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Deletion{}, err
	}
	d, err := p.db.Content().Document(ctx, collection, id)
	if err != nil {
		return content.Deletion{}, err
	}
	del := content.Deletion{Document: d, History: d.Version - 1}
	if collection != content.PagesCollection {
		return del, nil
	}
	shown := content.Shown(content.OverridesOf(d))
	if len(shown) == 0 {
		return del, nil
	}
	sums, err := p.db.Publish().Summaries(ctx, publish.SummaryFilter{EventID: id, Limit: 1000})
	if err != nil {
		return del, err
	}
	for _, s := range sums {
		if s.Current && s.PublishedAt != nil && !s.Rejected() {
			del.Shown = shown
		}
	}
	return del, nil
}

// DeleteDocument deletes a document, audited with actor; the audit keeps
// its last version's fields. It refuses what would lose more than that
// (earlier versions, the title or notes a published page shows) unless
// force, and refuses while a migration of the collection is unfinished.
// A deleted page document's page is republished without it; republished
// is that publication.
func (p *Pipeline) DeleteDocument(ctx context.Context, actor, collection, id string, force bool) (a content.Action, republished *publish.Result, err error) {
	if err := p.checkOpen(ctx); err != nil {
		return content.Action{}, nil, err
	}
	del, err := p.Deletion(ctx, collection, id)
	if err != nil {
		return a, nil, err
	}
	if err := del.Check(force); err != nil {
		return a, nil, err
	}
	a, err = p.db.Content().Delete(ctx, collection, id, del.Document.Version, content.Action{Actor: actor, Forced: force && del.Loses()})
	if err != nil || collection != content.PagesCollection {
		return a, nil, err
	}
	res, err := p.republishPage(ctx, id)
	if err != nil {
		err = fmt.Errorf("deleted %s/%s, but: %w", collection, id, err)
	}
	return a, res, err
}
