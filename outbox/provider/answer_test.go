package provider_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox/provider"
)

// A read answered with something that is not the JSON it asked for (an
// HTML page a proxy or a mistyped URL gave) is the receiver's answer, not
// tidemark's own failure: the lane's read failed, as when its receiver
// cannot be reached or refuses a write (exit 5), saying what came back.
func TestAReadAnsweredWithoutJSONIsUnusable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>Welcome to nginx!</body></html>"))
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/writes", nil)
	var v struct{ Writes []string }
	_, _, err := provider.GetJSON(context.Background(), srv.Client(), time.Now, req, &v)
	if !errors.Is(err, tidemark.ErrUnavailable) || tidemark.ExitCode(err) != tidemark.ExitUnavailable {
		t.Fatalf("a read answered with HTML: %v (exit %d), want the lane's read failed (exit 5)", err, tidemark.ExitCode(err))
	}
	for _, w := range []string{"not the JSON", "text/html"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v does not say %q", err, w)
		}
	}
}

// A read the receiver refused (a 4xx: a mistyped URL's 404, a token it
// does not take) fails as the lane's read, as a refused write does (exit
// 5, as on a lane that failed), never as tidemark's own failure; a 403
// or 404 still tells a target closed to us (Closed).
func TestAReadTheReceiverRefusedFailsAsTheLanesRead(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", status)
		}))
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/writes", nil)
		_, _, err := provider.GetJSON(context.Background(), srv.Client(), time.Now, req, nil)
		srv.Close()
		if !errors.Is(err, tidemark.ErrUnavailable) || tidemark.ExitCode(err) != tidemark.ExitUnavailable {
			t.Errorf("a read answered %d: %v (exit %d), want the lane's read failed (exit 5)", status, err, tidemark.ExitCode(err))
		}
		if _, closed := provider.Closed(err); closed != (status == http.StatusForbidden || status == http.StatusNotFound) {
			t.Errorf("a read answered %d: Closed says %v", status, closed)
		}
	}
}
