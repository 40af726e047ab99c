package web

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

// The schemas of the objects the API answers with the same Go types the
// CLI's --json prints say what they carry: every field is a property, and
// every field is required, since each is present even when empty; a field
// that may be null says so.
func TestOpenAPISchemasMatchTheirTypes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
				AllOf      []struct {
					Ref        string                     `json:"$ref"`
					Required   []string                   `json:"required"`
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"allOf"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	// Each type's zero value, and values whose fields are null where a
	// zero value's are not (a source nothing will claim has no next due
	// time).
	for name, vs := range map[string][]any{
		"Source":    {tidemark.Source{}, tidemark.Source{Window: tidemark.WindowTerminal}},
		"Run":       {tidemark.Run{}},
		"Event":     {tidemark.Event{}},
		"RunReport": {ingest.Report{}},
	} {
		sc, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("no schema %s", name)
			continue
		}
		fields := map[string]any{}
		for _, v := range vs {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var one map[string]any
			if err := json.Unmarshal(b, &one); err != nil {
				t.Fatal(err)
			}
			for k, x := range one {
				if _, seen := fields[k]; !seen || x == nil {
					fields[k] = x // null wins: the schema must allow it
				}
			}
		}
		want := slices.Sorted(maps.Keys(fields))
		if got := slices.Sorted(maps.Keys(sc.Properties)); !slices.Equal(got, want) {
			t.Errorf("%s: properties %v, want the type's fields %v", name, got, want)
		}
		if got := slices.Sorted(slices.Values(sc.Required)); !slices.Equal(got, want) {
			t.Errorf("%s: required %v, want every field %v", name, got, want)
		}
		for k, x := range fields {
			raw, described := sc.Properties[k]
			if x != nil || !described { // a missing property is reported above
				continue
			}
			var prop struct {
				Type any `json:"type"`
			}
			if err := json.Unmarshal(raw, &prop); err != nil {
				t.Fatalf("%s.%s: %v", name, k, err)
			}
			if types, ok := prop.Type.([]any); !ok || !slices.Contains(types, any("null")) {
				t.Errorf("%s.%s can be null; its schema's type %v does not allow null", name, k, prop.Type)
			}
		}
	}
	// SourceDetail is a Source with what source show adds.
	d := doc.Components.Schemas["SourceDetail"]
	var added []string
	for _, part := range d.AllOf {
		added = append(added, part.Required...)
	}
	for _, k := range []string{"runs", "actions", "unserved_by"} {
		if !slices.Contains(added, k) {
			t.Errorf("SourceDetail: %q is not required", k)
		}
	}
}
