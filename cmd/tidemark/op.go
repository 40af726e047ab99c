package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/pipeline"
)

// Every command that runs pipeline operations is built by opCmd: the
// operation returns a result, which is printed as JSON with --json (the
// fields the API shows) or else as its own text. The text printers columns
// and details show a result's JSON fields, for results without a text form
// of their own.

// texter is a result with a text form for people (the pipeline's report
// types); its JSON form is the same value encoded.
type texter interface{ WriteText(w io.Writer) error }

// opDo is what a command does: its result, printed by opCmd. A nil result
// prints nothing; a result returned beside an error is printed too (an
// unbalanced plan, a failed run's report), so an operation returns nil
// when its error left nothing worth showing (see answer).
type opDo func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error)

// opCmd is a command over pipeline operations, with --json.
func opCmd(a *app, use, short string, args cobra.PositionalArgs, do opDo) *cobra.Command {
	return newOp(a, use, short, args, do, true, true)
}

// localOp is a command that needs no database: do gets a nil pipeline.
func localOp(a *app, use, short string, args cobra.PositionalArgs, do opDo) *cobra.Command {
	return newOp(a, use, short, args, do, false, true)
}

// rawOp is a command that prints exact bytes (evidence, an export); it
// has no JSON form.
func rawOp(a *app, use, short string, args cobra.PositionalArgs, do func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (rawOut, error)) *cobra.Command {
	return newOp(a, use, short, args, func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
		b, err := do(cmd, p, args)
		if b == nil {
			return nil, err
		}
		return b, err
	}, true, false)
}

func newOp(a *app, use, short string, args cobra.PositionalArgs, do opDo, withDB, withJSON bool) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: use, Short: short, Args: args, RunE: func(cmd *cobra.Command, args []string) error {
		var p *pipeline.Pipeline
		if withDB {
			var err error
			if p, err = a.pipe(cmd.Context()); err != nil {
				return err
			}
		}
		v, err := do(cmd, p, args)
		if v == nil || isNil(v) {
			return err
		}
		if asJSON {
			return errors.Join(writeJSON(a.stdout, v), err)
		}
		return errors.Join(v.WriteText(a.stdout), err)
	}}
	if withJSON {
		cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the fields the API shows)")
	}
	return cmd
}

// isNil reports a typed nil behind an interface (a nil report pointer).
func isNil(v any) bool {
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func:
		return r.IsNil()
	}
	return false
}

// jsonFlag says what --json prints.
func jsonFlag(cmd *cobra.Command, what string) {
	cmd.Flags().Lookup("json").Usage = "print JSON (" + what + ")"
}

// answer is what an operation shows: nothing when it failed.
func answer[T texter](v T, err error) (texter, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}

// said is a result shown as JSON by one value and as text by another: a
// line (a string), a texter, or a function that writes it.
type said struct{ json, text any }

func (s said) MarshalJSON() ([]byte, error) { return json.Marshal(s.json) }
func (s said) WriteText(w io.Writer) error {
	switch t := s.text.(type) {
	case texter:
		return t.WriteText(w)
	case func(io.Writer):
		t(w)
		return nil
	}
	_, err := fmt.Fprintln(w, s.text)
	return err
}

// say is v with a line of text.
func say(v any, format string, args ...any) said { return said{v, fmt.Sprintf(format, args...)} }

// rawOut is output printed as the exact bytes (evidence, an export).
type rawOut []byte

func (r rawOut) WriteText(w io.Writer) error { _, err := raw(w).Write(r); return err }

// op is opCmd for an operation with a typed result and a printer of its
// own (which prints to a.stdout), taking exactly nargs arguments. A zero
// result prints nothing.
func op[T any](a *app, use, short string, nargs int, run func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (T, error), text func(T)) *cobra.Command {
	return opCmd(a, use, short, cobra.ExactArgs(nargs), func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
		v, err := run(cmd, p, args)
		if reflect.ValueOf(&v).Elem().IsZero() {
			return nil, err
		}
		// text prints to a.stdout, which is where opCmd prints.
		return said{json: v, text: func(io.Writer) {
			if text != nil {
				text(v)
			}
		}}, err
	})
}

// requiredFlags adds required string flags.
func requiredFlags(cmd *cobra.Command, flags map[string]*string, usage string) {
	for name, p := range flags {
		cmd.Flags().StringVar(p, name, "", fmt.Sprintf(usage, name))
		_ = cmd.MarkFlagRequired(name)
	}
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
