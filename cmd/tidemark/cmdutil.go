package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/pipeline"
)

// Helpers that many commands share.

// actor names the person behind an operator action, for the audit trail.
func actor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "operator"
}

// parseKeyValues reads the key=value pairs of a repeatable flag.
func parseKeyValues(flag string, kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			// Not repeated: a mistyped --setting may be a secret.
			return nil, tidemark.Invalidf(flag, "", "want key=value, got an argument of %d characters without a key and '=' (not shown: it may hold a secret)", len(kv))
		}
		m[k] = v
	}
	return m, nil
}

// texter is a result with a text form for people (the pipeline's report
// types); its JSON form is the same value encoded.
type texter interface{ WriteText(w io.Writer) error }

// said is a value shown as JSON, or as a line of text.
type said struct {
	v    any
	text string
}

func (s said) MarshalJSON() ([]byte, error) { return json.Marshal(s.v) }
func (s said) WriteText(w io.Writer) error  { _, err := fmt.Fprintln(w, s.text); return err }

// rawOut is output printed as the exact bytes (evidence, an export).
type rawOut []byte

func (r rawOut) WriteText(w io.Writer) error { _, err := raw(w).Write(r); return err }

// openInput opens the file a command names, or stdin for "-".
func openInput(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, tidemark.Invalidf("FILE", path, "%v", err)
	}
	return fh, nil
}

// printOut prints v as JSON or as text, unless err or v is nil (the
// operation printed what it had to say).
func printOut(a *app, v texter, asJSON bool, err error) error {
	if err != nil || v == nil {
		return err
	}
	if asJSON {
		return writeJSON(a.stdout, v)
	}
	return v.WriteText(a.stdout)
}

// jsonFlag adds the --json flag.
func jsonFlag(cmd *cobra.Command, what string) {
	cmd.Flags().Bool("json", false, "print JSON ("+what+")")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

type pipeOp func(ctx context.Context, p *pipeline.Pipeline, args []string) (texter, error)

// opCmd is a command that runs one pipeline operation and prints its
// result, as JSON when it has a --json flag that is set.
func opCmd(a *app, use, short string, args cobra.PositionalArgs, op pipeOp) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: args}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		p, err := a.pipe(cmd.Context())
		if err != nil {
			return err
		}
		v, err := op(cmd.Context(), p, args)
		asJSON, _ := cmd.Flags().GetBool("json")
		return printOut(a, v, asJSON, err)
	}
	return cmd
}
