// Package fieldtext prints results as text for people by their JSON
// fields, so the text a command shows and the JSON the API shows name the
// same things: a listing as a table of some of its items' fields, one
// result as a row per field that has a value. A JSON value is shown as
// text by Cell: a string unquoted, a time in UTC (Day), nothing as "-".
package fieldtext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Table writes tab-separated lines in aligned columns.
func Table(w io.Writer, lines ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	return tw.Flush()
}

// Day is a time as the text forms show it: in UTC, to the second, and
// saying so, as the console and the wiki show it. Not the terminal's zone:
// the same text is read in logs, in tickets and by workers on hosts in
// other zones, and a time without its zone cannot be told apart there.
func Day(t time.Time) string { return t.UTC().Format(time.DateTime) + " UTC" }

// Columns writes items as a table of their named JSON fields, under a
// header of the names in capitals; a cell is at most 60 bytes.
func Columns[T any](w io.Writer, items []T, names ...string) error {
	lines := []string{strings.ToUpper(strings.ReplaceAll(strings.Join(names, "\t"), "_", " "))}
	for _, it := range items {
		_, vals := Fields(it)
		cells := make([]string, len(names))
		for i, n := range names {
			cells[i] = Cell(vals[n], 60)
		}
		lines = append(lines, strings.Join(cells, "\t"))
	}
	return Table(w, lines...)
}

// Details writes v as a row per JSON field that has a value (neither
// nothing nor 0), at most 200 bytes each.
func Details(w io.Writer, v any) error {
	keys, vals := Fields(v)
	var lines []string
	for _, k := range keys {
		if c := Cell(vals[k], 200); c != "-" && c != "0" {
			lines = append(lines, strings.ReplaceAll(k, "_", " ")+"\t"+c)
		}
	}
	return Table(w, lines...)
}

// Fields returns v's JSON object fields in their order.
func Fields(v any) ([]string, map[string]json.RawMessage) {
	b, _ := json.Marshal(v)
	dec := json.NewDecoder(bytes.NewReader(b))
	vals := map[string]json.RawMessage{}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, vals
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		var raw json.RawMessage
		if err != nil || dec.Decode(&raw) != nil {
			break
		}
		keys = append(keys, fmt.Sprint(t))
		vals[fmt.Sprint(t)] = raw
	}
	return keys, vals
}

// Cell is a JSON value as text: a string unquoted, a time as Day shows it,
// nothing as "-", an array of objects as their values joined by ":" (a
// field is name:type), anything else as compact JSON, at most n bytes.
func Cell(raw json.RawMessage, n int) string {
	var s string
	var objs []map[string]any
	switch {
	case len(raw) == 0 || string(raw) == "null" || string(raw) == `""`:
		return "-"
	case json.Unmarshal(raw, &s) == nil:
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return Day(t)
		}
	case raw[0] == '[' && json.Unmarshal(raw, &objs) == nil && len(objs) > 0:
		var parts []string
		for _, o := range objs {
			keys, vals := Fields(o)
			var vs []string
			for _, k := range keys {
				vs = append(vs, Cell(vals[k], n))
			}
			parts = append(parts, strings.Join(vs, ":"))
		}
		s = strings.Join(parts, " ")
	default:
		s = string(raw)
	}
	return Cut(s, n)
}

// OrDash is s, or "-" when it is empty: an empty cell of a table.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Cursor is a source's cursor for a table cell: its first 12 bytes, or,
// for a cursor that is a list of hashes (a git cursor inside a merge holds
// one commit a side, joined by commas), the first 12 digits of each, so
// that a move of any one of them shows.
func Cursor(s string) string {
	const n = 12
	parts := strings.Split(s, ",")
	if len(parts) < 2 {
		return Cut(s, n)
	}
	for i, p := range parts {
		if p == "" || strings.Trim(p, "0123456789abcdef") != "" {
			return Cut(s, n)
		}
		parts[i] = Cut(p, n)
	}
	return strings.Join(parts, ",")
}

// Cut is s cut to at most n bytes.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
