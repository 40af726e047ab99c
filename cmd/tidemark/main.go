// Command tidemark is the change-tracking pipeline's binary: CLI, daemon
// and web console, over the pipeline package. It parses flags, calls the
// pipeline and prints.
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
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/internal/terminal"
	"github.com/tidemark/tidemark/pipeline"
)

// commands are the top-level subcommands, in the order help lists them.
var commands = []func(*app) *cobra.Command{
	newRunCmd, newSourceCmd, newRunsCmd, newEventsCmd, newPublishCmd, newOutboxCmd, newDocsCmd, newMigrateCmd,
	newServeCmd, newTokenCmd, newConfigCmd, newFailpointsCmd, newVersionCmd,
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// The first signal asks for a clean stop (runs in flight settle or
		// fail); a second one ends the process at once, which is safe too:
		// every step is crash-safe.
		<-ctx.Done()
		stop()
	}()
	// Every printer writes text through a terminal.Writer, which escapes
	// what could drive the terminal; JSON and raw bytes go to
	// terminal.Raw(a.stdout).
	a := &app{stdout: terminal.NewWriter(stdout), stderr: terminal.NewWriter(stderr)}
	a.cfg, a.cfgErr = pipeline.Load(os.Getenv)
	root := newRoot(a)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	a.close()
	if err == nil {
		return 0
	}
	code := tidemark.ExitCode(err)
	var usage *usageError
	if errors.As(err, &usage) {
		code = tidemark.ExitInvalid
	}
	text := strings.TrimPrefix(tidemark.NamedText(err, flagNames(cmd)), "tidemark: ") // said once, here
	fmt.Fprintf(a.stderr, "tidemark: %s%s\n", text, tidemark.Hint(err))
	if code == tidemark.ExitInterrupted {
		// A hint says how to resume when it is not the same command again
		// (an interrupted migration: `migrate resume RUN`).
		resume := "; run the same command again to resume"
		if tidemark.Hint(err) != "" {
			resume = ""
		}
		fmt.Fprintf(a.stderr, "tidemark: what finished before the interrupt is kept and nothing is left half-written%s\n", resume)
	}
	if usage != nil {
		fmt.Fprintln(a.stderr, "tidemark: run 'tidemark --help' (or COMMAND --help) for usage")
	}
	if code == tidemark.ExitInternal {
		fmt.Fprintln(a.stderr, "tidemark: this is an internal error; the message above is the whole of it")
	}
	return code
}

// flagAliases are the inputs a command line gives by flags of other
// names (the lane's settings one --setting at a time; a document's set
// fields by --field NAME=JSON or --text NAME=STRING).
var flagAliases = map[tidemark.Input][]string{
	"settings": {"setting"},
	"set":      {"field", "text"},
}

// flagNames names an operation's inputs (see tidemark.Input) as cmd's
// flags: an input named like a flag of cmd ("retry_budget" is
// --retry-budget) is that flag; any other is shown as it is.
func flagNames(cmd *cobra.Command) func(tidemark.Input) string {
	return func(in tidemark.Input) string {
		if cmd == nil {
			return string(in)
		}
		names, ok := flagAliases[in]
		if !ok {
			names = []string{strings.ReplaceAll(string(in), "_", "-")}
		}
		var flags []string
		for _, n := range names {
			if cmd.Flags().Lookup(n) != nil {
				flags = append(flags, "--"+n)
			}
		}
		if len(flags) == 0 {
			return string(in)
		}
		return strings.Join(flags, " or ")
	}
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
			if a.cfgErr != nil {
				// A variable's value (the command line was read fine): the
				// refusal names the variable and says what it wants, and
				// usage help would not help.
				return a.cfgErr
			}
			a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: a.cfg.LogLevel}))
			return nil
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		// A value a setting refused is said by the refusal, which names the
		// flag and shows the value without its secrets; pflag's wrapping
		// would quote the value as given.
		var inv *tidemark.InvalidError
		if errors.As(err, &inv) {
			return &usageError{inv}
		}
		return &usageError{err}
	})
	f := root.PersistentFlags()
	for _, o := range pipeline.Options {
		if o.Flag != "" {
			f.Var(a.cfg.Flag(o), o.Flag, o.FlagUsage())
		}
	}
	for _, c := range commands {
		root.AddCommand(c(a))
	}
	usageErrors(root)
	return root
}

// usageErrors makes every command line that names no command, or gives a
// command the wrong arguments, a usageError (exit 2), in one place rather
// than per command. A group of commands (source, outbox, …) given a word it
// does not know is such an error too; bare, it shows its help.
func usageErrors(c *cobra.Command) {
	if !c.Runnable() && c.HasSubCommands() {
		c.SuggestionsMinimumDistance = 2
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if sug := cmd.SuggestionsFor(args[0]); len(sug) > 0 {
				msg += `; did you mean "` + strings.Join(sug, `" or "`) + `"?`
			}
			return errors.New(msg)
		}
		c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	}
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageErrors(sub)
	}
}

// writeJSON prints v as indented JSON: the stable, documented form of every
// list and show command.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(terminal.Raw(w)) // JSON escapes control characters itself
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
