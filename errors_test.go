package tidemark_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/tidemark/tidemark"
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
