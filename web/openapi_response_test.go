package web_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/outbox"
)

// The Lane schema says what the lane endpoints send: its properties are
// the fields of the lanes GET /api/outbox/lanes and GET
// /api/outbox/lanes/{name} answer with (a broken lane's problem and a
// lane's gaps among them), it requires those that every lane carries,
// and a field sent as null is one its schema allows to be null. The same
// holds for the schemas its properties refer to (GapReport).
func TestOpenAPILaneSchemaIsWhatTheLaneEndpointsSend(t *testing.T) {
	do, token, f := mustOutboxConsole(t)
	f.lanes["hook"].Gaps = &outbox.GapReport{Lane: "hook", Count: 2, MinMS: 400, MedianMS: 950, ThresholdMS: 1000, BelowThreshold: 1}
	var doc openAPISchemas
	if r := do("GET", "/api/openapi.json", "", nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &doc) != nil {
		t.Fatalf("GET /api/openapi.json: %d %.200s", r.Code, r.Body)
	}
	var page struct {
		Items []map[string]any `json:"items"`
	}
	if r := do("GET", "/api/outbox/lanes", token, nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &page) != nil {
		t.Fatalf("GET /api/outbox/lanes: %d %s", r.Code, r.Body)
	}
	lanes := page.Items
	for _, name := range []string{"hook", "dead"} {
		var lane map[string]any
		if r := do("GET", "/api/outbox/lanes/"+name, token, nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &lane) != nil {
			t.Fatalf("GET /api/outbox/lanes/%s: %d %s", name, r.Code, r.Body)
		}
		lanes = append(lanes, lane)
	}
	// The fixture has what is sent only sometimes, or the schema could
	// leave it out unnoticed.
	for _, k := range []string{"problem", "gaps", "guarantee"} {
		if !slices.ContainsFunc(lanes, func(l map[string]any) bool { return l[k] != nil }) {
			t.Fatalf("no lane sent %s: the test cannot check its schema", k)
		}
	}
	doc.mustDescribe(t, "Lane", lanes)
}

// openAPISchemas is the part of the OpenAPI document that says what an
// object carries.
type openAPISchemas struct {
	Components struct {
		Schemas map[string]struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"schemas"`
	} `json:"components"`
}

// mustDescribe checks that schema name describes objs, objects the API
// sent: its properties are the fields any of them has, it requires those
// all of them have, and a field sent as null may be null. A property that
// refers to another schema is checked against the objects sent in it.
func (doc openAPISchemas) mustDescribe(tb testing.TB, name string, objs []map[string]any) {
	tb.Helper()
	sc, ok := doc.Components.Schemas[name]
	if !ok {
		tb.Errorf("no schema %s", name)
		return
	}
	present, always := map[string]bool{}, map[string]bool{}
	for i, o := range objs {
		for k := range o {
			present[k] = true
		}
		for k := range present {
			_, has := o[k]
			always[k] = (i == 0 || always[k]) && has
		}
	}
	var required []string
	for k, all := range always {
		if all {
			required = append(required, k)
		}
	}
	if got, want := slices.Sorted(maps.Keys(sc.Properties)), slices.Sorted(maps.Keys(present)); !slices.Equal(got, want) {
		tb.Errorf("%s: properties %v, want the fields sent %v", name, got, want)
	}
	if got, want := slices.Sorted(slices.Values(sc.Required)), slices.Sorted(slices.Values(required)); !slices.Equal(got, want) {
		tb.Errorf("%s: required %v, want the fields every one sent has %v", name, got, want)
	}
	for k, raw := range sc.Properties {
		var prop struct {
			Type  any    `json:"type"`
			Ref   string `json:"$ref"`
			AllOf []struct {
				Ref string `json:"$ref"`
			} `json:"allOf"`
		}
		if err := json.Unmarshal(raw, &prop); err != nil {
			tb.Fatalf("%s.%s: %v", name, k, err)
		}
		ref := prop.Ref
		if len(prop.AllOf) == 1 {
			ref = prop.AllOf[0].Ref
		}
		var nested []map[string]any
		for _, o := range objs {
			v, has := o[k]
			if m, ok := v.(map[string]any); ok {
				nested = append(nested, m)
			}
			if has && v == nil && !allowsNull(prop.Type) {
				tb.Errorf("%s.%s is sent as null; its schema's type %v does not allow null", name, k, prop.Type)
			}
		}
		if ref != "" && len(nested) > 0 {
			doc.mustDescribe(tb, strings.TrimPrefix(ref, "#/components/schemas/"), nested)
		}
	}
}

func allowsNull(typ any) bool {
	types, ok := typ.([]any)
	return ok && slices.Contains(types, any("null"))
}
