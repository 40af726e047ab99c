// Package jsontest helps tests check the JSON shapes tidemark documents.
package jsontest

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// Keys returns the sorted top-level keys of v's JSON object.
func Keys(tb testing.TB, v any) []string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	return slices.Sorted(maps.Keys(m))
}
