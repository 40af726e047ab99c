package kinds_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/internal/testctx"
)

// A caller whose deadline passes while Resolve asks a location what it is
// gets its context's error, not "cannot tell its kind" (the location was
// not wrong), and no warning blames a timeout the caller did not set.
func TestResolveUnderACallersDeadlineReturnsTheContextsError(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(started) })
		<-r.Context().Done()
	}))
	defer srv.Close()
	var warned []string
	s := kinds.New(kinds.Options{Warn: func(m string) { warned = append(warned, m) }})
	ctx := testctx.WithDeadline(context.Background(), time.Now().Add(2*time.Second))
	go func() { <-started; ctx.Pass() }()
	ns, err := s.Resolve(ctx, ingest.NewSource{Location: srv.URL + "/feed.xml", AllowPrivate: true})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Resolve past the caller's deadline: %+v, %v; want context.DeadlineExceeded", ns, err)
	}
	for _, w := range warned {
		if strings.Contains(w, "30s") {
			t.Errorf("warning %q: the caller's deadline passed, not tidemark's 30s", w)
		}
	}
}

// A feed named as such that cannot be reached now is added as given, and
// Warn is told so (Config.Warn's doc: a remote that cannot be reached now
// is added as given, with a warning).
func TestResolveWarnsOfAFeedItCouldNotReach(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	var warned []string
	s := kinds.New(kinds.Options{Warn: func(m string) { warned = append(warned, m) }})
	loc := srv.URL + "/feed.xml"
	ns, err := s.Resolve(context.Background(), ingest.NewSource{Location: loc, Kind: "feed", AllowPrivate: true})
	if err != nil || ns.Location != loc {
		t.Fatalf("Resolve of an unreachable feed: %+v, %v; want it added as given", ns, err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], loc) || !strings.Contains(warned[0], "503") {
		t.Fatalf("warnings %q: want one saying %s could not be reached (503)", warned, loc)
	}
}
