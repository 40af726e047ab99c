package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/pipeline"
)

// A shared helper for commands that call one pipeline operation and print
// its result: the CLI's --json and the API show the same fields, and the
// text is the result's own WriteText.

// opDo is what a command over a pipeline operation does: its result,
// printed as JSON with --json, else as text (its WriteText). A nil result
// prints nothing.
type opDo func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (any, error)

// opCmd is a command over a pipeline operation, with --json; a local
// command needs no database (p is nil).
func opCmd(a *app, use, short string, args cobra.PositionalArgs, do opDo, local ...bool) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: use, Short: short, Args: args, RunE: func(cmd *cobra.Command, args []string) error {
		var p *pipeline.Pipeline
		if len(local) == 0 {
			var err error
			if p, err = a.pipe(cmd.Context()); err != nil {
				return err
			}
		}
		v, err := do(cmd, p, args)
		if v, ok := v.(texter); ok && asJSON {
			return errors.Join(writeJSON(a.stdout, v), err)
		} else if ok {
			return errors.Join(v.WriteText(a.stdout), err)
		}
		return err
	}}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the fields the API shows)")
	return cmd
}

type texter interface{ WriteText(io.Writer) error }

// said is a result shown as JSON by one value and as text by another.
type said struct{ json, text any }

func (s said) MarshalJSON() ([]byte, error) { return json.Marshal(s.json) }
func (s said) WriteText(w io.Writer) error {
	if t, ok := s.text.(texter); ok {
		return t.WriteText(w)
	}
	_, err := fmt.Fprintln(w, s.text)
	return err
}

// say is v with a line of text.
func say(v any, format string, args ...any) said { return said{v, fmt.Sprintf(format, args...)} }

// answer is what a command shows: nothing when err left nothing to show.
func answer[T texter](v T, err error) (any, error) { return orNothing(v, err, err == nil) }

func orNothing[T texter](v T, err error, show bool) (any, error) {
	if !show {
		return nil, err
	}
	return v, err
}

// requiredFlags adds required string flags.
func requiredFlags(cmd *cobra.Command, flags map[string]*string, usage string) {
	for name, p := range flags {
		cmd.Flags().StringVar(p, name, "", fmt.Sprintf(usage, name))
		_ = cmd.MarkFlagRequired(name)
	}
}
