package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/pipeline"
)

// The commands of documents, migrations, publishing and tokens are each
// one pipeline operation and a printer: op builds them. The text printers
// columns and details show a result's JSON fields, the same fields --json,
// the API and the console show.

// op builds a command that runs one pipeline operation and prints its
// result: as JSON with --json, else with text. A result that is not zero
// is printed even beside an error (a failed run, a partial report).
func op[T any](a *app, use, short string, nargs int, run func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (T, error), text func(T)) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(nargs), RunE: func(cmd *cobra.Command, args []string) error {
		p, err := a.pipe(cmd.Context())
		if err != nil {
			return err
		}
		v, err := run(cmd, p, args)
		if err != nil && reflect.ValueOf(&v).Elem().IsZero() {
			return err
		}
		if asJSON {
			if jerr := writeJSON(a.stdout, v); jerr != nil {
				return jerr
			}
		} else if text != nil {
			text(v)
		}
		return err
	}}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// table prints tab-separated lines in aligned columns.
func table(w io.Writer, lines ...string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	tw.Flush()
}

func day(t time.Time) string { return t.Local().Format(time.DateTime) }

// columns prints a listing as a table of the named JSON fields of its
// items.
func columns[T any](a *app, names ...string) func([]T) {
	return func(items []T) {
		lines := []string{strings.ToUpper(strings.ReplaceAll(strings.Join(names, "\t"), "_", " "))}
		for _, it := range items {
			_, vals := jsonFields(it)
			cells := make([]string, len(names))
			for i, n := range names {
				cells[i] = cell(vals[n], 60)
			}
			lines = append(lines, strings.Join(cells, "\t"))
		}
		table(a.stdout, lines...)
	}
}

// details prints one result as a row per JSON field that has a value.
func details[T any](a *app) func(T) {
	return func(v T) {
		keys, vals := jsonFields(v)
		var lines []string
		for _, k := range keys {
			if c := cell(vals[k], 200); c != "-" && c != "0" {
				lines = append(lines, strings.ReplaceAll(k, "_", " ")+"\t"+c)
			}
		}
		table(a.stdout, lines...)
	}
}

// jsonFields returns v's JSON object fields in their order.
func jsonFields(v any) ([]string, map[string]json.RawMessage) {
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

// cell is a JSON value as text: a string unquoted, a time in local time,
// nothing as "-", an array of objects as their values joined by ":" (a
// field is name:type), anything else as compact JSON, at most n bytes.
func cell(raw json.RawMessage, n int) string {
	var s string
	var objs []map[string]any
	switch {
	case len(raw) == 0 || string(raw) == "null" || string(raw) == `""`:
		return "-"
	case json.Unmarshal(raw, &s) == nil:
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return day(t)
		}
	case raw[0] == '[' && json.Unmarshal(raw, &objs) == nil && len(objs) > 0:
		var parts []string
		for _, o := range objs {
			keys, vals := jsonFields(o)
			var vs []string
			for _, k := range keys {
				vs = append(vs, cell(vals[k], n))
			}
			parts = append(parts, strings.Join(vs, ":"))
		}
		s = strings.Join(parts, " ")
	default:
		s = string(raw)
	}
	return short(s, n)
}
