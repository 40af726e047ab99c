package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/internal/terminal"
	"github.com/tidemark/tidemark/pipeline"
)

// Every command that runs pipeline operations is built by opCmd: the
// operation returns a result, which is printed as JSON with --json (the
// fields the API shows) or else as its own text (the library's result
// types print themselves).

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

func (r rawOut) WriteText(w io.Writer) error { _, err := terminal.Raw(w).Write(r); return err }

// shown is an operation's result, shown beside its error too (a write
// kept before a later step failed, a sweep's failures, a failed migration
// run); an empty result shows nothing.
func shown[T texter](v T, err error) (texter, error) { return shownAs(v, v, err) }

// shownAs is shown for v, printed as t.
func shownAs(v any, t texter, err error) (texter, error) {
	if v == nil || reflect.ValueOf(v).IsZero() {
		return nil, err
	}
	return t, err
}

// sayShown is shown for v with a line of text.
func sayShown(v any, err error, format string, args ...any) (texter, error) {
	return shownAs(v, say(v, format, args...), err)
}

// requiredFlags adds required string flags.
func requiredFlags(cmd *cobra.Command, flags map[string]*string, usage string) {
	for name, p := range flags {
		cmd.Flags().StringVar(p, name, "", fmt.Sprintf(usage, name))
		_ = cmd.MarkFlagRequired(name)
	}
}
