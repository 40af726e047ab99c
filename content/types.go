// Package content holds tidemark's documents: collections with typed
// fields, documents whose every write mints a version snapshot, and field
// migrations that change a field's type without ever running a conversion
// rule twice on its own output.
//
// Guarantees, whatever the interleaving of workers and crashes:
//
//   - every document write is based on a version and is refused
//     (tidemark.ErrConflict) when the document has moved on; the live row
//     and its version snapshot commit together or not at all;
//   - every value written is valid for the type its field declares, and a
//     refusal names the document, the field and the value;
//   - a migration walks the collection in document-ID order; a batch's
//     conversions, their snapshots and the run's cursor advance commit in
//     one transaction, so a replay starts after the last converted document
//     and never calls a rule on a value it already converted;
//   - the declared type flips in the transaction that converts the last
//     document, exactly once; an aborted run restores every converted value
//     from its snapshot and leaves the type as it was;
//   - a run is fenced by a claim token: a worker that lost its claim moves
//     nothing.
//
// The rules (types, validation, conversions, the migration loop) live here,
// independent of any database; Store is the storage they need, implemented
// by sqlstore.
package content

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/tidemark/tidemark"
)

// FieldType is a field's declared type.
type FieldType string

const (
	Text     FieldType = "text"
	Number   FieldType = "number"
	Boolean  FieldType = "boolean"
	RichText FieldType = "richtext"
	DateTime FieldType = "datetime"
)

// FieldTypes lists every type in a stable order.
var FieldTypes = []FieldType{Text, Number, Boolean, RichText, DateTime}

// ParseType checks that s names a field type.
func ParseType(s string) (FieldType, error) {
	for _, t := range FieldTypes {
		if string(t) == s {
			return t, nil
		}
	}
	return "", tidemark.Invalidf("field type", s, "want one of text, number, boolean, richtext, datetime")
}

// Field is a named, typed field of a collection.
type Field struct {
	Name string    `json:"name"`
	Type FieldType `json:"type"`
}

// Collection is a named set of documents sharing typed fields.
type Collection struct {
	Name      string    `json:"name"`
	Fields    []Field   `json:"fields"`
	BuiltIn   bool      `json:"built_in"`
	Documents int64     `json:"documents"`
	CreatedAt time.Time `json:"created_at"`
}

// Field returns the named field.
func (c Collection) Field(name string) (Field, bool) {
	for _, f := range c.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Fields is a document's field values, each a JSON value valid for its
// field's type. An absent field has no value (null).
type Fields map[string]json.RawMessage

// Document is the live state of one document.
type Document struct {
	Collection string    `json:"collection"`
	ID         string    `json:"id"`
	Version    int64     `json:"version"`
	Fields     Fields    `json:"fields"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Reasons a version was written.
const (
	ReasonCreate  = "create"
	ReasonPut     = "put"
	ReasonMigrate = "migrate" // a field migration converted the document
	ReasonRestore = "restore" // an aborted migration restored the document
)

// Version is the snapshot of a document as one write left it.
type Version struct {
	DocumentID string    `json:"document_id"`
	Version    int64     `json:"version"`
	Fields     Fields    `json:"fields"`
	Reason     string    `json:"reason"`
	RunID      string    `json:"run_id,omitempty"`
	At         time.Time `json:"at"`
}

// Limits on what a collection and a document may hold.
const (
	MaxFields        = 64
	MaxValueBytes    = 256 << 10
	MaxDocumentBytes = 1 << 20
	MaxBatch         = 5000
	DefaultBatch     = 2000
	// MaxBatchBytes bounds the bytes of stored fields one migration batch
	// reads: a batch stops early, after at least one document, rather than
	// hold more (so a run's memory stays bounded whatever its batch size
	// and however large its documents).
	MaxBatchBytes = 4 << 20
)

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// CheckName checks a collection or field name.
func CheckName(what, name string) error {
	if !namePattern.MatchString(name) {
		return tidemark.Invalidf(what, name, "want a lowercase letter, then up to 62 of a-z, 0-9, _")
	}
	return nil
}

// CheckID checks a document ID: a ULID in its canonical 26-character form,
// so that ID order is creation order and migrations can walk it.
func CheckID(id string) error {
	u, err := ulid.ParseStrict(id)
	if err != nil || u.String() != id {
		return tidemark.Invalidf("document id", id, "want a ULID in canonical upper-case form (26 characters)")
	}
	return nil
}

// ParseFieldSpec parses NAME:TYPE.
func ParseFieldSpec(spec string) (Field, error) {
	name, typ, ok := strings.Cut(spec, ":")
	if !ok {
		return Field{}, tidemark.Invalidf("field", spec, "want NAME:TYPE, e.g. title:text")
	}
	if err := CheckName("field name", name); err != nil {
		return Field{}, err
	}
	t, err := ParseType(typ)
	if err != nil {
		return Field{}, err
	}
	return Field{Name: name, Type: t}, nil
}

// CheckFields checks a collection's field list.
func CheckFields(fields []Field) error {
	if len(fields) == 0 {
		return tidemark.Invalidf("fields", "", "a collection needs at least one field")
	}
	if len(fields) > MaxFields {
		return tidemark.Invalidf("fields", fmt.Sprint(len(fields)), "at most %d fields", MaxFields)
	}
	seen := map[string]bool{}
	for _, f := range fields {
		if err := CheckName("field name", f.Name); err != nil {
			return err
		}
		if _, err := ParseType(string(f.Type)); err != nil {
			return err
		}
		if f.Name == "id" {
			return tidemark.Invalidf("field name", f.Name, "reserved for the document ID")
		}
		if seen[f.Name] {
			return tidemark.Invalidf("field name", f.Name, "declared twice")
		}
		seen[f.Name] = true
	}
	return nil
}

// ParseAssignments reads field values given as NAME=JSON (jsonKVs) and as
// NAME=STRING (textKVs, a string without JSON quoting).
func ParseAssignments(jsonKVs, textKVs []string) (Fields, error) {
	out := Fields{}
	for _, kv := range jsonKVs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !json.Valid([]byte(v)) {
			return nil, tidemark.Invalidf("field", kv, `want NAME=JSON, e.g. n=3 or title='"Hello"'`)
		}
		out[k] = json.RawMessage(v)
	}
	for _, kv := range textKVs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, tidemark.Invalidf("text", kv, "want NAME=STRING")
		}
		b, _ := json.Marshal(v)
		out[k] = b
	}
	return out, nil
}

// FieldValue is one field of a document with its declared type; Value is
// nil when the document has no value for it.
type FieldValue struct {
	Name  string          `json:"name"`
	Type  FieldType       `json:"type"`
	Value json.RawMessage `json:"value"`
}

// Values lists d's values in the order of c's fields.
func (c Collection) Values(d Document) []FieldValue {
	out := make([]FieldValue, len(c.Fields))
	for i, f := range c.Fields {
		out[i] = FieldValue{f.Name, f.Type, d.Fields[f.Name]}
	}
	return out
}
