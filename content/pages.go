package content

import (
	"context"
	"encoding/json"
)

// PagesCollection is the built-in collection of the wiki's page documents.
// A page document's ID is the ID of the event the page shows; its fields
// are editors' overrides: title (text) and notes (richtext).
const PagesCollection = "pages"

// PageOverrides is what editors changed on a page. Zero fields mean "not
// overridden": render from the event and its summary.
type PageOverrides struct {
	EventID string `json:"event_id"`
	// Title replaces the event's title when HasTitle.
	Title    string `json:"title,omitempty"`
	HasTitle bool   `json:"has_title"`
	// Notes are editors' notes as rich text blocks (nil: none), and
	// NotesText the same flattened to plain text.
	Notes     []Block `json:"notes,omitempty"`
	NotesText string  `json:"notes_text,omitempty"`
	// Version is the page document's version the overrides were read at.
	Version int64 `json:"version"`
}

// PageReader reads a page document's overrides. ok is false when the page
// has no document (nothing overridden).
type PageReader interface {
	PageOverrides(ctx context.Context, eventID string) (o PageOverrides, ok bool, err error)
}

// OverridesOf reads the overrides out of a page document.
func OverridesOf(d Document) PageOverrides {
	o := PageOverrides{EventID: d.ID, Version: d.Version}
	if v, ok := d.Fields["title"]; ok && !IsNull(v) {
		var s string
		if json.Unmarshal(v, &s) == nil {
			o.Title, o.HasTitle = s, true
		}
	}
	if v, ok := d.Fields["notes"]; ok && !IsNull(v) {
		if blocks, err := ParseRichText(v); err == nil && len(blocks) > 0 {
			o.Notes = blocks
			o.NotesText = Flatten(blocks)
		}
	}
	return o
}
