package tidemark

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/internal/fieldtext"
)

// Sentinel errors shared by every pipeline. Callers match them with
// errors.Is; their text is for people, never for matching.
var (
	// ErrNotFound: the named thing does not exist.
	ErrNotFound = errors.New("tidemark: not found")
	// ErrInvalid: the caller's input is wrong; nothing was changed.
	ErrInvalid = errors.New("tidemark: invalid input")
	// ErrConflict: the request contradicts what is stored (a duplicate
	// identity, a write based on an old version); nothing was changed.
	ErrConflict = errors.New("tidemark: conflict")
	// ErrStaleClaim: the token or cursor version presented is no longer the
	// source's current claim; nothing was changed.
	ErrStaleClaim = errors.New("tidemark: stale claim")
	// ErrClaimHeld: another holder's lease on the source has not expired.
	ErrClaimHeld = errors.New("tidemark: claim held by another worker")
	// ErrNotClaimable: the source is paused, or its window is terminal and
	// waits for an operator's retry or skip.
	ErrNotClaimable = errors.New("tidemark: source not claimable")
	// ErrShortRead: a fetch declared more results than it admitted; settling
	// would move the cursor past results nobody read.
	ErrShortRead = errors.New("tidemark: declared more results than admitted")
	// ErrUnconfirmed: a write's effect could not be confirmed (rows affected
	// or a read-back did not match); the transaction was rolled back.
	ErrUnconfirmed = errors.New("tidemark: write not confirmed")
	// ErrUnavailable: a backend (database, object store, provider) could
	// not be reached.
	ErrUnavailable = errors.New("tidemark: unavailable")
	// ErrRefused: a backend (the object store, the database) refused tidemark's own
	// credentials or their rights. The setup is wrong, not the caller's
	// input, and no retry changes the answer. It matches ErrInvalid (the
	// CLI's exit 2: configuration to fix); over HTTP it is a 502, since the
	// backend is the gateway that refused.
	ErrRefused error = refusedError{}
)

type refusedError struct{}

func (refusedError) Error() string        { return "tidemark: refused our credentials" }
func (refusedError) Is(target error) bool { return target == ErrInvalid }

// HeldError says who holds a source's claim and until when. It matches
// ErrClaimHeld.
type HeldError struct {
	Source string
	Holder string
	Until  time.Time
	// Running: the holder is a process of this host (its default
	// identity, host:pid) that is running, as far as this host can tell.
	Running bool
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("source %s: held by %s until %s", e.Source, e.Holder, fieldtext.Day(e.Until))
}

func (e *HeldError) Is(target error) bool { return target == ErrClaimHeld }

// Hint says what to do about a claim another holder holds: a crashed
// process of this host is taken over at once, so this one is alive, on
// another host, or ran under a custom --holder. A running process of this
// host is never to be impersonated: two workers of one identity would
// both re-enter its run.
func (e *HeldError) Hint() string {
	until := fieldtext.Day(e.Until)
	if e.Running {
		pid := e.Holder[strings.LastIndexByte(e.Holder, ':')+1:]
		return fmt.Sprintf("it is process %s of this host, still running: wait for it to finish (or stop it);"+
			" the claim is free once the lease expires at %s", pid, until)
	}
	return fmt.Sprintf("if that was this worker under another identity, run again with --holder %s to re-enter its run;"+
		" otherwise it is free once the lease expires at %s", e.Holder, until)
}

// Hint is what to do about err, on a line of its own after a newline and
// two spaces, or "" when there is nothing to add: the hint of the first
// error in its tree that has one (HeldError.Hint, a lane's lease too).
func Hint(err error) string {
	var h interface{ Hint() string }
	if !errors.As(err, &h) {
		return ""
	}
	return "\n  " + h.Hint()
}

// Input is one of an operation's inputs, named as the API names it (its
// JSON field or query parameter: "interval", "retry_budget", "force").
// The operations are shared by the CLI, the console and the API, so their
// errors name inputs this way, in InvalidError.Field and as Input
// arguments of Invalidf and Inputf; a face whose inputs go by other names
// (the CLI's flags) shows an error with NamedText.
type Input string

// InvalidError says which input was wrong and why. It matches ErrInvalid.
type InvalidError struct {
	Field  string // what was wrong: an Input's name, a document path
	Value  string // the offending value, possibly shortened
	Reason string
	// format and args made Reason (Invalidf), kept so that NamedText can
	// name the Inputs among args.
	format string
	args   []any
}

func (e *InvalidError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Invalidf returns an *InvalidError for the input field (see Input) with a
// formatted reason, whose Input arguments are inputs too.
func Invalidf(field, value, format string, args ...any) error {
	if len(value) > 200 {
		value = value[:200] + "…"
	}
	return &InvalidError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...), format: format, args: args}
}

// Inputf is fmt.Errorf for an error whose text names inputs: its Input
// arguments stay apart from its text, so that NamedText can name them as
// a face does.
func Inputf(format string, args ...any) error { return &inputError{format: format, args: args} }

type inputError struct {
	format string
	args   []any
}

func (e *inputError) Error() string { return fmt.Errorf(e.format, e.args...).Error() }

// Unwrap returns what a %w verb wraps, as fmt.Errorf does.
func (e *inputError) Unwrap() []error {
	switch w := fmt.Errorf(e.format, e.args...).(type) {
	case interface{ Unwrap() error }:
		return []error{w.Unwrap()}
	case interface{ Unwrap() []error }:
		return w.Unwrap()
	}
	return nil
}

// NamedText is err's text with every input it names (the Field of each
// *InvalidError in its tree, and the Input arguments of Invalidf and
// Inputf) shown as name(input): a face's own name for it. A wrapper's text
// is its own words followed by its cause's (fmt.Errorf("…: %w", cause),
// errors.Join), so the cause is shown named after the wrapper's words; a
// wrapper whose text does not end with its cause's is shown as it is.
func NamedText(err error, name func(Input) string) string {
	if err == nil {
		return ""
	}
	named := func(args []any) []any {
		out := make([]any, len(args))
		for i, a := range args {
			switch a := a.(type) {
			case Input:
				out[i] = name(a)
			case error:
				out[i] = namedError{a, within(NamedText(a, name))}
			default:
				out[i] = a
			}
		}
		return out
	}
	switch e := err.(type) {
	case *InvalidError:
		c := *e
		c.Field = name(Input(e.Field))
		if e.format != "" {
			c.Reason = fmt.Sprintf(e.format, named(e.args)...)
		}
		return c.Error()
	case *inputError:
		return fmt.Errorf(e.format, named(e.args)...).Error()
	case interface{ Unwrap() error }:
		msg, cause := err.Error(), e.Unwrap()
		if cause != nil && strings.HasSuffix(msg, cause.Error()) {
			if words := strings.TrimSuffix(msg, cause.Error()); words != "" {
				return words + within(NamedText(cause, name))
			}
			return NamedText(cause, name)
		}
		return msg
	case interface{ Unwrap() []error }:
		var texts, named []string
		for _, w := range e.Unwrap() {
			if w != nil {
				texts, named = append(texts, w.Error()), append(named, NamedText(w, name))
			}
		}
		if err.Error() == strings.Join(texts, "\n") { // errors.Join
			return strings.Join(named, "\n")
		}
	}
	return err.Error()
}

// Text is err's text for people, its inputs named as the API names them
// (see Input): NamedText without renaming, and without the package prefix
// a sentinel's own text starts with ("tidemark: not found"), since a face
// says whose message it is once, itself.
func Text(err error) string {
	return strings.TrimPrefix(NamedText(err, func(i Input) string { return string(i) }), sentinelPrefix)
}

// sentinelPrefix starts the text of every sentinel error of this package.
const sentinelPrefix = "tidemark: "

// within is the text of a cause shown after its wrapper's words: "source
// "x": not found", not "source "x": tidemark: not found".
func within(text string) string { return strings.TrimPrefix(text, sentinelPrefix) }

// namedError is an error shown with its inputs named (see NamedText).
type namedError struct {
	error
	text string
}

func (e namedError) Error() string { return e.text }

// Exit codes of the tidemark binary, one per error kind.
const (
	ExitOK          = 0
	ExitInternal    = 1
	ExitInvalid     = 2
	ExitNotFound    = 3
	ExitConflict    = 4
	ExitUnavailable = 5
	ExitInterrupted = 130
)

// ExitCode maps an error to the binary's exit code. It is the one place
// where error kinds become exit codes.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrShortRead):
		return ExitInvalid
	case errors.Is(err, ErrNotFound):
		return ExitNotFound
	case errors.Is(err, ErrConflict), errors.Is(err, ErrStaleClaim),
		errors.Is(err, ErrClaimHeld), errors.Is(err, ErrNotClaimable):
		return ExitConflict
	case errors.Is(err, ErrUnavailable):
		return ExitUnavailable
	default:
		return ExitInternal
	}
}

// ExitClass names an exit code's kind, as the JSON API's errors carry it:
// "invalid", "not_found", "conflict", "unavailable", "interrupted" or
// "internal".
func ExitClass(code int) string {
	switch code {
	case ExitOK:
		return "ok"
	case ExitInvalid:
		return "invalid"
	case ExitNotFound:
		return "not_found"
	case ExitConflict:
		return "conflict"
	case ExitUnavailable:
		return "unavailable"
	case ExitInterrupted:
		return "interrupted"
	default:
		return "internal"
	}
}

// HTTP statuses of the JSON API, one per error kind. They are the numbers
// of net/http's constants, written here so the domain package does not
// import net/http.
const (
	statusOK                  = 200 // http.StatusOK
	statusBadRequest          = 400 // http.StatusBadRequest
	statusNotFound            = 404 // http.StatusNotFound
	statusConflict            = 409 // http.StatusConflict
	statusClientClosedRequest = 499 // nginx's "client closed request"; net/http has none
	statusInternalServerError = 500 // http.StatusInternalServerError
	statusBadGateway          = 502 // http.StatusBadGateway
	statusServiceUnavailable  = 503 // http.StatusServiceUnavailable
)

// HTTPStatus maps an error to an HTTP status for the JSON API. It is the one
// place where error kinds become statuses; an unexpected error is a 500 and
// should be logged in full by the caller.
func HTTPStatus(err error) int {
	if errors.Is(err, ErrRefused) {
		return statusBadGateway
	}
	switch ExitCode(err) {
	case ExitOK:
		return statusOK
	case ExitInvalid:
		return statusBadRequest
	case ExitNotFound:
		return statusNotFound
	case ExitConflict:
		return statusConflict
	case ExitUnavailable:
		return statusServiceUnavailable
	case ExitInterrupted:
		return statusClientClosedRequest
	default:
		return statusInternalServerError
	}
}
