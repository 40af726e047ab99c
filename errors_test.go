package tidemark_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/s3"
)

// The root package writes HTTP statuses as numbers so it need not import
// net/http; they must stay the statuses net/http names.
func TestHTTPStatusIsNetHTTPs(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, http.StatusOK},
		{fmt.Errorf("flag: %w", tidemark.ErrInvalid), http.StatusBadRequest},
		{tidemark.ErrShortRead, http.StatusBadRequest},
		{tidemark.ErrNotFound, http.StatusNotFound},
		{tidemark.ErrConflict, http.StatusConflict},
		{tidemark.ErrStaleClaim, http.StatusConflict},
		{&tidemark.HeldError{Source: "s"}, http.StatusConflict},
		{tidemark.ErrNotClaimable, http.StatusConflict},
		{tidemark.ErrUnavailable, http.StatusServiceUnavailable},
		{context.Canceled, 499},
		{errors.New("boom"), http.StatusInternalServerError},
		// The object store refused the server's own credentials: the
		// server's setup is wrong, not the request; the store is the
		// gateway that refused.
		{fmt.Errorf("publish: %w", &s3.DeniedError{Op: "PUT", Status: 403, Code: "AccessDenied"}), http.StatusBadGateway},
		{objstore.ErrDenied, http.StatusBadGateway},
	} {
		if got := tidemark.HTTPStatus(tc.err); got != tc.want {
			t.Errorf("HTTPStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestExitClassNamesEveryCode(t *testing.T) {
	for code, want := range map[int]string{tidemark.ExitInvalid: "invalid", tidemark.ExitNotFound: "not_found", tidemark.ExitConflict: "conflict",
		tidemark.ExitUnavailable: "unavailable", tidemark.ExitInterrupted: "interrupted", tidemark.ExitInternal: "internal"} {
		if got := tidemark.ExitClass(code); got != want {
			t.Errorf("ExitClass(%d) = %q, want %q", code, got, want)
		}
	}
}

// An operation names its inputs as the API does; a face shows them by its
// own names, in InvalidError.Field and in Inputf's and Invalidf's Input
// arguments, however deep they are wrapped.
func TestNameInputs(t *testing.T) {
	flag := func(in tidemark.Input) string { return "--" + strings.ReplaceAll(string(in), "_", "-") }
	for _, tc := range []struct {
		err          error
		before, want string
		is           error
	}{
		{fmt.Errorf("add x: %w", tidemark.Invalidf("retry_budget", "0", "must be between 1 and 1000")),
			`add x: invalid retry_budget "0": must be between 1 and 1000`, `add x: invalid --retry-budget "0": must be between 1 and 1000`, tidemark.ErrInvalid},
		{fmt.Errorf("remove: %w", tidemark.Inputf("it has 2 events; removing it with %s deletes them: %w", tidemark.Input("force"), tidemark.ErrConflict)),
			"remove: it has 2 events; removing it with force deletes them: tidemark: conflict",
			"remove: it has 2 events; removing it with --force deletes them: conflict", tidemark.ErrConflict},
		{errors.Join(errors.New("first"), tidemark.Invalidf("lane", "l", "nothing to change: give %s or %s", tidemark.Input("min_gap"), tidemark.Input("skew"))),
			"first\ninvalid lane \"l\": nothing to change: give min_gap or skew", "first\ninvalid --lane \"l\": nothing to change: give --min-gap or --skew", tidemark.ErrInvalid},
	} {
		if got := tc.err.Error(); got != tc.before {
			t.Errorf("before naming: %q, want %q", got, tc.before)
		}
		if got := tidemark.NamedText(tc.err, flag); got != tc.want || !errors.Is(tc.err, tc.is) {
			t.Errorf("named: %q (is %v: %v), want %q", got, tc.is, errors.Is(tc.err, tc.is), tc.want)
		}
	}
}

// A message says whose it is once: a sentinel's package prefix is dropped
// wherever the sentinel follows other words, and Text drops it also from a
// bare sentinel, since the face that shows it names itself.
func TestTextSaysTidemarkNowhere(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{tidemark.ErrNotFound, "not found"},
		{fmt.Errorf("source %q: %w", "x", tidemark.ErrNotFound), `source "x": not found`},
		{fmt.Errorf("the page after run 7: %w", fmt.Errorf("run 7: %w", tidemark.ErrNotFound)), "the page after run 7: run 7: not found"},
		{tidemark.Inputf("give %s: %w", tidemark.Input("force"), tidemark.ErrConflict), "give force: conflict"},
		{fmt.Errorf("%w", tidemark.ErrUnavailable), "unavailable"},
		{errors.Join(tidemark.ErrStaleClaim, fmt.Errorf("lane: %w", tidemark.ErrClaimHeld)), "stale claim\nlane: claim held by another worker"},
		{errors.New("objstore: put: tidemark-like words stay"), "objstore: put: tidemark-like words stay"},
	} {
		if got := tidemark.Text(tc.err); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A claim's hint names the lease's end in UTC and says so, whatever the
// process's zone (TZ).
func TestHeldHintIsUTC(t *testing.T) {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no zone database: %v", err)
	}
	old := time.Local
	time.Local = loc
	t.Cleanup(func() { time.Local = old })
	until := time.Date(2026, 12, 2, 2, 19, 16, 0, time.UTC)
	for _, running := range []bool{false, true} {
		e := &tidemark.HeldError{Source: "s", Holder: "h:1", Until: until.Local(), Running: running}
		if h := e.Hint(); !strings.Contains(h, "expires at 2026-12-02 02:19:16 UTC") {
			t.Errorf("hint (running %v) = %q, want the lease's end in UTC", running, h)
		}
	}
}
