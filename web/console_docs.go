package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/publish"
)

// DocOps are the operations on documents and field migrations the console
// and the API offer; *pipeline.Pipeline implements them. Every write takes
// the signed-in token's name as its actor, for the audit.
type DocOps interface {
	Collections(ctx context.Context) (content.Collections, error)
	Collection(ctx context.Context, name string) (content.CollectionDetail, error)
	Document(ctx context.Context, collection, id string) (content.Document, error)
	Documents(ctx context.Context, collection, after string, limit int) (content.Documents, error)
	DocumentActions(ctx context.Context, f content.ActionFilter) ([]content.Action, error)
	PutDocument(ctx context.Context, actor, collection string, put content.Put) (content.Document, *publish.Result, error)
	DeleteDocument(ctx context.Context, actor, collection, id string, force bool) (content.Action, *publish.Result, error)

	MigrationRuns(ctx context.Context, f content.RunFilter) (content.Runs, error)
	MigrationRun(ctx context.Context, id string) (content.Run, error)
	StartMigration(ctx context.Context, actor, collection, field, to string, batch int) (content.Run, error)
	ResumeMigration(ctx context.Context, actor, id string) (content.Run, error)
	AbortMigration(ctx context.Context, actor, id string) (content.Run, error)
	DriveMigration(ctx context.Context, id string, progress func(content.Run)) (content.Run, error)
}

// actor is who a write is audited as: the signed-in token's name.
func actor(r *http.Request) string {
	if t, ok := Principal(r.Context()); ok && t.Name != "" {
		return t.Name
	}
	return "unknown"
}

// docRoutes adds the documents' and migrations' pages and API:
//
//	GET  /console/docs                      the collections
//	GET  /console/docs/{c}                  a collection's documents (?after=)
//	GET  /console/docs/{c}/{id}             a document, its audit; a page document's edit form
//	POST /console/docs/{c}/{id}             save a page document (title, notes, base_version)
//	POST /console/docs/{c}/{id}/delete      delete (force=on for what loses data)
//	GET  /console/migrations                start form and every run
//	POST /console/migrations                start a type change (field=c.f, to, batch)
//	GET  /console/migrations/{id}           a run's progress; refreshes itself while active
//	POST /console/migrations/{id}/resume|abort
//	GET  /api/docs, /api/docs/{c}           collections; documents (?after=&limit=)
//	GET|PUT|DELETE /api/docs/{c}/{id}       PUT {base_version, set, unset}: stale is 409; DELETE ?force=true
//	POST /api/migrations                    {collection, field, to, batch}: 202 with the run
//	GET  /api/migrations/{id}
//	POST /api/migrations/{id}/resume|abort  202 with the run
func (s *Server) docRoutes() []route {
	if s.Docs == nil {
		return nil
	}
	r := func(method, pattern string, h http.HandlerFunc) route {
		return route{Method: method, Pattern: pattern, Access: private, Handler: h}
	}
	// A document's body holds a page's text.
	doc := func(rt route) route { rt.MaxBody = maxDocumentBody; return rt }
	named := func(rt route, action string) route { rt.Action = action; return rt }
	get, post := http.MethodGet, http.MethodPost
	return []route{
		r(get, "/console/docs", s.docsPage),
		r(get, "/console/docs/{collection}", s.collectionPage),
		r(get, "/console/docs/{collection}/{id}", s.documentPage),
		doc(r(post, "/console/docs/{collection}/{id}", s.documentSave)),
		r(post, "/console/docs/{collection}/{id}/delete", s.documentDelete),
		r(get, "/console/migrations", s.migrationsPage),
		r(post, "/console/migrations", s.migrationStart),
		r(get, "/console/migrations/{id}", s.migrationPage),
		named(r(post, "/console/migrations/{id}/{action}", s.migrationAct), "migrate {action}"),

		r(get, "/api/docs", s.apiCollections),
		r(get, "/api/docs/{collection}", s.apiDocuments),
		r(get, "/api/docs/{collection}/{id}", s.apiDocument),
		doc(r(http.MethodPut, "/api/docs/{collection}/{id}", s.apiPutDocument)),
		r(http.MethodDelete, "/api/docs/{collection}/{id}", s.apiDeleteDocument),
		r(post, "/api/migrations", s.apiMigrationStart),
		r(get, "/api/migrations/{id}", s.apiMigration),
		named(r(post, "/api/migrations/{id}/{action}", s.apiMigrationAct), "migrate {action}"),
	}
}

// problem renders a console page's error (through fail): the status its
// kind maps to, the message unless it is internal, and a way back.
func (s *Server) problem(w http.ResponseWriter, r *http.Request, err error) {
	status := httpStatus(err)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	s.render(w, r, "problem.html", map[string]any{"Status": status, "Message": s.problemText(r, err), "Back": backTo(r)})
}

// backTo is the console page a form was posted from: the document, the
// run, or the listing it acts on. (Referer is not sent: the pages say
// no-referrer.)
func backTo(r *http.Request) string {
	p := r.URL.Path
	if r.Method != http.MethodPost {
		return path.Dir(p) // the page itself failed: its parent
	}
	for _, suffix := range []string{"/delete", "/resume", "/abort"} {
		p = strings.TrimSuffix(p, suffix)
	}
	return p
}

func (s *Server) docsPage(w http.ResponseWriter, r *http.Request) {
	cs, err := s.Docs.Collections(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "docs.html", map[string]any{"Collections": cs, "Notice": s.takeNotice(w, r)})
}

func (s *Server) collectionPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("collection")
	if id := strings.TrimSpace(r.FormValue("edit")); id != "" { // the "edit the page of event …" form
		http.Redirect(w, r, "/console/docs/"+url.PathEscape(name)+"/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	c, err := s.Docs.Collection(r.Context(), name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	after := r.FormValue("after")
	docs, err := s.Docs.Documents(r.Context(), name, after, 100)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	next := ""
	if len(docs) == 100 {
		next = docs[len(docs)-1].ID
	}
	rows := make([]docRow, len(docs))
	for i, d := range docs {
		rows[i] = docRow{d, fieldsText(d.Fields)}
	}
	s.render(w, r, "collection.html", map[string]any{"C": c, "Docs": rows, "Next": next, "Notice": s.takeNotice(w, r),
		"Pages": name == content.PagesCollection})
}

type docRow struct {
	content.Document
	Text string
}

func fieldsText(f content.Fields) string {
	b, _ := json.Marshal(f)
	return shorten(string(b), 160)
}

// pageForm is a page document's editable fields as plain text.
type pageForm struct {
	Title, Notes string
}

func (s *Server) documentPage(w http.ResponseWriter, r *http.Request) {
	coll, id := r.PathValue("collection"), r.PathValue("id")
	d, err := s.Docs.Document(r.Context(), coll, id)
	if errors.Is(err, tidemark.ErrNotFound) && coll == content.PagesCollection {
		d, err = content.Document{Collection: coll, ID: id, Fields: content.Fields{}}, content.CheckID(id)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := s.Docs.Collection(r.Context(), coll)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	acts, err := s.Docs.DocumentActions(r.Context(), content.ActionFilter{Collection: coll, DocumentID: id, Limit: 20})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	o := content.OverridesOf(d)
	data := map[string]any{"D": d, "C": c, "Values": c.Values(d), "Actions": acts, "Notice": s.takeNotice(w, r),
		"Pages": coll == content.PagesCollection, "Form": pageForm{Title: o.Title, Notes: o.NotesText}}
	if coll == content.PagesCollection {
		// A page document's ID is its change's event ID: name the change.
		ev, err := s.eventDetail(r.Context(), id)
		switch {
		case err == nil:
			data["Event"] = ev
		case !errors.Is(err, tidemark.ErrNotFound):
			s.fail(w, r, err)
			return
		}
	}
	s.render(w, r, "document.html", data)
}

// pagePut turns the edit form of a page document into a write: an empty
// title or notes field removes the override. The notes box shows the notes
// as plain text, so the text is applied to the stored notes (content.EditText):
// what the form did not change keeps its marks, links and keys.
func pagePut(id string, base int64, title, notes string, stored json.RawMessage) (content.Put, error) {
	put := content.Put{ID: id, BaseVersion: base, Set: content.Fields{}}
	if t := strings.TrimSpace(title); t != "" {
		b, _ := json.Marshal(t)
		put.Set["title"] = b
	} else {
		put.Unset = append(put.Unset, "title")
	}
	if n := strings.TrimSpace(strings.ReplaceAll(notes, "\r\n", "\n")); n != "" {
		v, err := content.EditText(stored, n)
		if err != nil {
			return put, fmt.Errorf("page %s: stored notes: %w", id, err)
		}
		put.Set["notes"] = v
	} else {
		put.Unset = append(put.Unset, "notes")
	}
	return put, nil
}

func (s *Server) documentSave(w http.ResponseWriter, r *http.Request) {
	coll, id := r.PathValue("collection"), r.PathValue("id")
	if coll != content.PagesCollection {
		s.fail(w, r, tidemark.Invalidf("collection", coll, "the console edits page documents only; use the API or `tidemark docs put`"))
		return
	}
	base, err := strconv.ParseInt(r.PostFormValue("base_version"), 10, 64)
	if err != nil {
		s.fail(w, r, tidemark.Invalidf("base_version", r.PostFormValue("base_version"), "want the version the edit is based on"))
		return
	}
	// The notes are edited as text over the stored ones. A document that
	// moved on since the form was loaded is refused by the write's base
	// version, whatever it was merged with.
	cur, err := s.Docs.Document(r.Context(), coll, id)
	if err != nil && !errors.Is(err, tidemark.ErrNotFound) {
		s.fail(w, r, err)
		return
	}
	put, err := pagePut(id, base, r.PostFormValue("title"), r.PostFormValue("notes"), cur.Fields["notes"])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, res, err := s.Docs.PutDocument(r.Context(), actor(r), coll, put)
	if err != nil && d.Version == 0 {
		s.fail(w, r, err)
		return
	}
	msg := fmt.Sprintf("saved version %d", d.Version)
	switch {
	case err != nil:
		msg += "; but: " + tidemark.Text(err)
	case res != nil:
		msg += fmt.Sprintf("; page %s republished", res.PageID)
	}
	s.redirect(w, r, "/console/docs/"+url.PathEscape(coll)+"/"+url.PathEscape(id), msg, nil)
}

func (s *Server) documentDelete(w http.ResponseWriter, r *http.Request) {
	coll, id := r.PathValue("collection"), r.PathValue("id")
	a, res, err := s.Docs.DeleteDocument(r.Context(), actor(r), coll, id, r.PostFormValue("force") == "on")
	if err != nil && a.ID == "" {
		s.fail(w, r, err)
		return
	}
	msg := fmt.Sprintf("deleted %s/%s (version %d kept in the audit)", coll, id, a.Version)
	if err != nil {
		msg += "; but: " + tidemark.Text(err)
	} else if res != nil {
		msg += fmt.Sprintf("; page %s republished without it", res.PageID)
	}
	s.redirect(w, r, "/console/docs/"+url.PathEscape(coll), msg, nil)
}

func (s *Server) apiCollections(w http.ResponseWriter, r *http.Request) {
	cs, err := s.Docs.Collections(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit, cur, err := pageParams(r, "docs")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageAfter(cs, limit, cur, "docs", func(c content.Collection) string { return c.Name }))
}

func (s *Server) apiDocuments(w http.ResponseWriter, r *http.Request) {
	list := "docs/" + r.PathValue("collection")
	limit, cur, err := pageParams(r, list)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	docs, err := s.Docs.Documents(r.Context(), r.PathValue("collection"), cur.Key, limit+1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, paginate(docs, limit, func(last content.Document) pageCursor { return pageCursor{List: list, Key: last.ID} }))
}

// docWrite is the body of PUT /api/docs/{collection}/{id}.
type docWrite struct {
	BaseVersion *int64         `json:"base_version"`
	Set         content.Fields `json:"set"`
	Unset       []string       `json:"unset"`
}

// apiDocument reads a document; apiPutDocument writes it, based on a
// version (a stale base is 409); apiDeleteDocument deletes it (?force=true
// for what loses data).
func (s *Server) apiDocument(w http.ResponseWriter, r *http.Request) {
	d, err := s.Docs.Document(r.Context(), r.PathValue("collection"), r.PathValue("id"))
	s.answer(w, r, http.StatusOK, d, err)
}

func (s *Server) apiPutDocument(w http.ResponseWriter, r *http.Request) {
	var body docWrite
	if err := decodeJSON(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	if body.BaseVersion == nil {
		s.fail(w, r, tidemark.Invalidf("base_version", "", "a write names the version it is based on (0 creates)"))
		return
	}
	put := content.Put{ID: r.PathValue("id"), BaseVersion: *body.BaseVersion, Set: body.Set, Unset: body.Unset}
	d, res, err := s.Docs.PutDocument(r.Context(), actor(r), r.PathValue("collection"), put)
	s.answer(w, r, http.StatusOK, map[string]any{"document": d, "republished": res}, err)
}

func (s *Server) apiDeleteDocument(w http.ResponseWriter, r *http.Request) {
	if err := noFields(r); err != nil {
		s.fail(w, r, err)
		return
	}
	force, err := forceParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	a, res, err := s.Docs.DeleteDocument(r.Context(), actor(r), r.PathValue("collection"), r.PathValue("id"), force)
	s.answer(w, r, http.StatusOK, map[string]any{"deleted": a, "republished": res}, err)
}
