package content

import (
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
)

// Actions an operator takes on documents and field migrations, recorded in
// the audit with who took them.
const (
	ActionPut              = "put"
	ActionImport           = "import"
	ActionDelete           = "delete"
	ActionCreateCollection = "collection.create"
	ActionMigrationStart   = "migration.start"
	ActionMigrationResume  = "migration.resume"
	ActionMigrationAbort   = "migration.abort"
)

// Action is one audited operator action. A delete keeps the document's
// last version and fields here, so what was deleted is on record.
type Action struct {
	ID         string    `json:"id"`
	Action     string    `json:"action"`
	Collection string    `json:"collection"`
	DocumentID string    `json:"document_id,omitempty"`
	RunID      string    `json:"run_id,omitempty"`
	Version    int64     `json:"version,omitempty"`
	Fields     Fields    `json:"fields,omitempty"`
	Actor      string    `json:"actor"`
	Forced     bool      `json:"forced,omitempty"`
	Note       string    `json:"note,omitempty"`
	At         time.Time `json:"at"`
}

// ActionFilter narrows the audit; Limit 0 means 100.
type ActionFilter struct {
	Collection string
	DocumentID string
	RunID      string
	Limit      int
}

// Deletion is what deleting a document would lose besides its current
// fields (which the audit keeps): the document's earlier versions, and for
// a page document, the title or notes a published page shows.
type Deletion struct {
	Document Document `json:"document"`
	// History is how many earlier versions the delete discards.
	History int64 `json:"history"`
	// Shown names what a published page shows from the document ("title",
	// "notes"); deleting it republishes the page without them.
	Shown []string `json:"shown,omitempty"`
}

// Loses reports whether the deletion loses anything beyond the document's
// current fields.
func (d Deletion) Loses() bool { return d.History > 0 || len(d.Shown) > 0 }

// Check refuses a deletion that would lose data, unless force: the error
// says what would be lost and that force does it anyway.
func (d Deletion) Check(force bool) error {
	if force || !d.Loses() {
		return nil
	}
	var lost []string
	if len(d.Shown) > 0 {
		lost = append(lost, fmt.Sprintf("the %s its published page shows (the page would be republished without them)", strings.Join(d.Shown, " and ")))
	}
	if d.History > 0 {
		lost = append(lost, fmt.Sprintf("its %d earlier versions", d.History))
	}
	return tidemark.Inputf("document %s/%s: deleting it would lose %s; its last version's fields are kept in the audit either way; deleting it with %s does: %w",
		d.Document.Collection, d.Document.ID, strings.Join(lost, " and "), tidemark.Input("force"), tidemark.ErrConflict)
}

// Shown lists what a published page shows of a page document's overrides.
func Shown(o PageOverrides) []string {
	var s []string
	if o.HasTitle {
		s = append(s, "title")
	}
	if len(o.Notes) > 0 {
		s = append(s, "notes")
	}
	return s
}
