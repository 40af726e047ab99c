// Package fetchtest drives a fetcher through the real ingest service and
// SQL store, so source kinds' tests assert what a user would see: runs,
// outcomes, cursors, events and their revisions.
package fetchtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/httpx"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// Harness is one database, one source and the service that runs it.
type Harness struct {
	Store   *sqlstore.IngestStore
	Service *ingest.Service
	Env     sqltest.Env
	Source  tidemark.Source
}

// MustHarness opens a fresh database on b and adds a source of kind at
// location, run by fetcher.
func MustHarness(tb testing.TB, b sqltest.Backend, kind, location string, config map[string]string, fetcher tidemark.Fetcher) *Harness {
	tb.Helper()
	env := sqltest.NewEnv(7)
	db := sqltest.MustOpen(tb, b, env)
	st := db.Ingest()
	src, err := st.AddSource(context.Background(), ingest.NewSource{
		Name: "src", Kind: kind, Location: location, Config: config, Interval: time.Minute, RetryBudget: 10,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return &Harness{
		Store: st, Env: env, Source: src,
		Service: &ingest.Service{
			Store: st, Fetchers: ingest.Fetchers{kind: fetcher}, Clock: env.Clock, Rand: env.Rand, Holder: "test",
		},
	}
}

// Run runs the source once and returns the report; a run recorded as
// failed is not an error here (its report says how it failed).
func (h *Harness) Run(tb testing.TB) ingest.Report {
	tb.Helper()
	rep, err := h.Service.RunSource(context.Background(), h.Source.ID)
	if err != nil && !ingest.IsRunFailed(err) {
		tb.Fatalf("run: %v", err)
	}
	return rep
}

// MustRun runs the source and fails unless the outcome is want.
func (h *Harness) MustRun(tb testing.TB, want tidemark.Outcome) ingest.Report {
	tb.Helper()
	rep := h.Run(tb)
	if rep.Outcome != want {
		tb.Fatalf("outcome %s (%s), want %s", rep.Outcome, rep.Error, want)
	}
	return rep
}

// Current re-reads the source.
func (h *Harness) Current(tb testing.TB) tidemark.Source {
	tb.Helper()
	src, err := h.Store.Source(context.Background(), h.Source.ID)
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

// Events lists the source's events by item key.
func (h *Harness) Events(tb testing.TB) map[string]tidemark.Event {
	tb.Helper()
	evs, err := h.Store.Events(context.Background(), ingest.EventFilter{SourceID: h.Source.ID, Limit: 100000})
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]tidemark.Event, len(evs))
	for _, e := range evs {
		out[e.ItemKey] = e
	}
	return out
}

// Evidence returns an event's evidence at a revision (0: current).
func (h *Harness) Evidence(tb testing.TB, eventID string, revision int) string {
	tb.Helper()
	b, _, err := h.Store.Evidence(context.Background(), eventID, revision)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// MustServe starts a test server on 127.0.0.1 and returns it with a client
// allowed to dial that server and no other private address.
func MustServe(tb testing.TB, h http.Handler) (*httptest.Server, *httpx.Client) {
	tb.Helper()
	return MustServeWith(tb, h, httpx.Options{})
}

// MustServeWith is MustServe with the client's options; the server's
// address is added to opt.AllowAddrs, and a zero MinInterval means none.
func MustServeWith(tb testing.TB, h http.Handler, opt httpx.Options) (*httptest.Server, *httpx.Client) {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	opt.AllowAddrs = append(opt.AllowAddrs, srv.Listener.Addr().String())
	if opt.MinInterval == 0 {
		opt.MinInterval = -1
	}
	return srv, httpx.New(opt)
}

// Upstream is a test server's answer, which a test changes between runs.
// With an ETag set, a request presenting it gets 304 Not Modified.
type Upstream struct {
	contentType string
	mu          sync.Mutex
	status      int
	body, etag  string
	header      http.Header
	ifNoneMatch string
}

// NewUpstream returns an upstream that answers 200 with an empty body of
// contentType until Set says otherwise.
func NewUpstream(contentType string) *Upstream {
	return &Upstream{contentType: contentType, status: http.StatusOK, header: http.Header{}}
}

// Set changes the answer: its status, body and ETag ("" for none).
func (u *Upstream) Set(status int, body, etag string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.status, u.body, u.etag = status, body, etag
}

// SetHeader adds a header to every answer from now on.
func (u *Upstream) SetHeader(key, value string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.header.Set(key, value)
}

// IfNoneMatch returns the If-None-Match header of the last request.
func (u *Upstream) IfNoneMatch() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ifNoneMatch
}

func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ifNoneMatch = r.Header.Get("If-None-Match")
	for k, v := range u.header {
		w.Header()[k] = v
	}
	if u.etag != "" {
		w.Header().Set("ETag", u.etag)
		if u.ifNoneMatch == u.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", u.contentType)
	w.WriteHeader(u.status)
	fmt.Fprint(w, u.body)
}
