package content

import (
	"fmt"
	"io"

	"github.com/tidemark/tidemark/internal/fieldtext"
)

// The text forms of collections, documents and migration runs, for people
// at a terminal (the CLI prints them; --json prints the same values as
// JSON): tables of the fields the JSON shows, times in UTC (fieldtext.Day).

// Collections is a listing of collections.
type Collections []Collection

// Documents is a listing of documents.
type Documents []Document

// Versions is a document's version snapshots.
type Versions []Version

// Runs is a listing of migration runs.
type Runs []Run

// WriteText writes a table of the collections with their fields.
func (l Collections) WriteText(w io.Writer) error {
	return fieldtext.Columns(w, l, "name", "documents", "fields")
}

// WriteText writes a table of the collection's typed fields.
func (c Collection) WriteText(w io.Writer) error {
	return fieldtext.Columns(w, c.Fields, "name", "type")
}

// WriteText writes the collection, its fields and its unfinished
// migration runs.
func (c CollectionDetail) WriteText(w io.Writer) error {
	kind := map[bool]string{true: " (built in)"}[c.BuiltIn]
	fmt.Fprintf(w, "collection %s%s: %d documents, created %s\n", c.Name, kind, c.Documents, fieldtext.Day(c.CreatedAt))
	if err := c.Collection.WriteText(w); err != nil {
		return err
	}
	for _, r := range c.Migrations {
		fmt.Fprintf(w, "migration %s: %s %s→%s, %s, %d of %d walked\n", r.ID, r.Field, r.From, r.To, r.Status, r.Walked, r.Total)
	}
	return nil
}

// WriteText writes a table of the documents with their fields.
func (l Documents) WriteText(w io.Writer) error {
	return fieldtext.Columns(w, l, "id", "version", "fields")
}

// WriteText writes a table of the versions, oldest first.
func (l Versions) WriteText(w io.Writer) error {
	return fieldtext.Columns(w, l, "version", "reason", "run_id", "at", "fields")
}

// DocumentView is a document with its values in the order and with the
// types of its collection's fields. Its JSON form is the document's.
type DocumentView struct {
	Document
	Values []FieldValue `json:"-"`
}

// View is d with its values in c's fields.
func (c Collection) View(d Document) DocumentView { return DocumentView{d, c.Values(d)} }

// WriteText writes the document's version and a table of its values.
func (v DocumentView) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s/%s version %d, updated %s\n", v.Collection, v.ID, v.Version, fieldtext.Day(v.UpdatedAt))
	return fieldtext.Columns(w, v.Values, "name", "type", "value")
}

// WriteText writes a table of the runs, newest first.
func (l Runs) WriteText(w io.Writer) error {
	return fieldtext.Columns(w, l, "id", "collection", "field", "from", "to", "status", "walked", "total", "converted", "restored", "holder", "error")
}

// WriteText writes the run as a row per field that has a value: its
// cursor, counts, claim and any failure.
func (r Run) WriteText(w io.Writer) error { return fieldtext.Details(w, r) }
