// Command tidemark is the change-tracking pipeline's binary: CLI, daemon
// and (later) web UI. Each subcommand lives in a file of its own and
// registers itself with register.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/failpoint"
)

// commands holds the constructors of the top-level subcommands; each
// subcommand's file adds its own in init, so files never edit each other.
var commands []func(*app) *cobra.Command

func register(f func(*app) *cobra.Command) { commands = append(commands, f) }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdout: stdout, stderr: stderr}
	root := newRoot(a)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	a.close()
	if err == nil {
		return 0
	}
	code := tidemark.ExitCode(err)
	var usage *usageError
	if errors.As(err, &usage) {
		code = tidemark.ExitInvalid
	}
	fmt.Fprintf(stderr, "tidemark: %v\n", err)
	if code == tidemark.ExitInternal {
		fmt.Fprintln(stderr, "tidemark: this is an internal error; the message above is the whole of it")
	}
	return code
}

// usageError is a command line that cannot be run as written.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "tidemark",
		Short: "A change-tracking pipeline that never mistakes work for progress",
		Long: `tidemark watches sources through fenced cursors, freezes what changed as
evidence, summarizes it, publishes a wiki page per change, and delivers
outbound writes through a crash-safe outbox.

By default everything lives under ./.tidemark: a SQLite database and a local
directory for pages. Point --db at PostgreSQL to share work between processes.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := failpoint.ArmFromEnv(); err != nil {
				return &usageError{err}
			}
			a.initLogger()
			return nil
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return &usageError{err} })
	f := root.PersistentFlags()
	f.StringVar(&a.home, "home", envOr("TIDEMARK_HOME", ".tidemark"), "data directory for the embedded default (env TIDEMARK_HOME)")
	f.StringVar(&a.dbURL, "db", os.Getenv("TIDEMARK_DB"), "database: sqlite:PATH or postgres://… (env TIDEMARK_DB; default sqlite:HOME/tidemark.db)")
	f.StringVar(&a.storeURL, "store", os.Getenv("TIDEMARK_STORE"), "object store: a directory or s3://bucket/prefix (env TIDEMARK_STORE; default HOME/wiki)")
	f.StringVar(&a.holder, "holder", os.Getenv("TIDEMARK_HOLDER"), "this worker's identity for claims (env TIDEMARK_HOLDER; default host:pid)")
	f.StringVar(&a.logLevel, "log-level", envOr("TIDEMARK_LOG_LEVEL", "warn"), "debug, info, warn or error")
	for _, c := range commands {
		root.AddCommand(c(a))
	}
	return root
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (a *app) initLogger() {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(a.logLevel)); err != nil {
		lvl = slog.LevelWarn
	}
	a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: lvl}))
}

// writeJSON prints v as indented JSON: the stable, documented form of every
// list and show command.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
