package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

// downAuth is the token store of a database that does not answer: every
// check fails as sqlstore reports a connection it cannot make.
type downAuth struct{ web.Authenticator }

var errDatabaseDown = fmt.Errorf("sqlstore: connect: %w: dial tcp 127.0.0.1:5432: connection refused", tidemark.ErrUnavailable)

func (downAuth) HasTokens(context.Context) (bool, error) { return false, errDatabaseDown }
func (downAuth) Authenticate(context.Context, string) (tidemark.Token, error) {
	return tidemark.Token{}, errDatabaseDown
}
func (downAuth) Session(context.Context, string) (tidemark.Token, error) {
	return tidemark.Token{}, errDatabaseDown
}
func (downAuth) CreateSession(context.Context, string, time.Duration) (string, tidemark.Token, error) {
	return "", tidemark.Token{}, errDatabaseDown
}

// With the database down, a token cannot be checked: the API says the
// outage is one (503, class unavailable), not an internal error, and
// /metrics still answers a scrape that brings a token, with
// tidemark_database_up 0 and nothing the token would have to be checked
// for (no source, lane or page metric). A request that brings no token is
// refused as ever.
func TestTheDatabaseDownIsAnOutageToTheAPIAndMetrics(t *testing.T) {
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(5))
	if _, err := db.Ingest().AddSource(context.Background(), ingest.NewSource{Name: "docs", Kind: "git", Location: "/x/docs", Interval: time.Minute, RetryBudget: 3}); err != nil {
		t.Fatal(err)
	}
	do := mustServe(t, db, func(s *web.Server) { s.Auth = downAuth{s.Auth} })

	r := do("GET", "/api/sources", "tmk_some", nil)
	var e struct {
		Class    string `json:"class"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(r.Body), &e); err != nil || r.Code != 503 || e.Class != "unavailable" || e.ExitCode != tidemark.ExitUnavailable {
		t.Fatalf("/api/sources with the database down: %d %s, want 503 class unavailable", r.Code, r.Body)
	}

	r = do("GET", "/metrics", "tmk_some", nil)
	if r.Code != 200 {
		t.Fatalf("/metrics with the database down: %d %s, want 200 with tidemark_database_up 0", r.Code, r.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(r.Body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, r.Body)
	}
	up := fams["tidemark_database_up"]
	if up == nil || len(up.Metric) != 1 || up.Metric[0].GetGauge().GetValue() != 0 {
		t.Fatalf("/metrics with the database down does not say tidemark_database_up 0:\n%s", r.Body)
	}
	if len(fams) != 1 || strings.Contains(r.Body, "docs") {
		t.Fatalf("/metrics with a token it could not check shows more than the database's state:\n%s", r.Body)
	}

	if r := do("GET", "/metrics", "", nil); r.Code != 401 {
		t.Fatalf("/metrics without a token, the database down: %d, want 401", r.Code)
	}
}

// /healthz says which of what the server needs does not answer, the
// database or the object store the wiki is served from, with a 503 a load
// balancer can act on; 200 only when both answer.
func TestHealthzSaysWhatIsDown(t *testing.T) {
	env := sqltest.NewEnv(6)
	db := sqltest.MustOpen(t, sqltest.Backends()[0], env)
	objs := mem.New()
	var s *web.Server
	do := mustServe(t, db, func(srv *web.Server) { srv.Objects = objs; s = srv; srv.Clock = env.Clock })
	health := func(what string, wantCode int, want map[string]string) {
		t.Helper()
		env.Clock.Advance(3 * time.Second) // past the last check's answer
		r := do("GET", "/healthz", "", nil)
		var got map[string]string
		if err := json.Unmarshal([]byte(r.Body), &got); err != nil || r.Code != wantCode {
			t.Fatalf("%s: /healthz %d %s, want %d", what, r.Code, r.Body, wantCode)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: /healthz says %s %q, want %q (%s)", what, k, got[k], v, r.Body)
			}
		}
	}
	health("both answer", 200, map[string]string{"status": "ok", "database": "ok", "store": "ok"})

	objs.SetHooks(mem.Hooks{BeforeGet: func(context.Context, string) error {
		return fmt.Errorf("s3 get _tidemark/store.json: %w: connection reset", tidemark.ErrUnavailable)
	}})
	health("the store down", 503, map[string]string{"status": "unavailable", "database": "ok", "store": "unavailable"})
	objs.SetHooks(mem.Hooks{})

	s.Ingest = downIngest{s.Ingest}
	health("the database down", 503, map[string]string{"status": "unavailable", "database": "unavailable", "store": "ok"})
}

// /healthz is public: a load balancer, or anyone, may ask it many times a
// second. Answers within healthCacheFor share one check of the database
// and the store; a later one checks again.
func TestHealthzChecksOncePerInterval(t *testing.T) {
	env := sqltest.NewEnv(6)
	db := sqltest.MustOpen(t, sqltest.Backends()[0], env)
	objs := mem.New()
	var reads atomic.Int32
	objs.SetHooks(mem.Hooks{BeforeGet: func(context.Context, string) error { reads.Add(1); return nil }})
	do := mustServe(t, db, func(srv *web.Server) { srv.Objects = objs; srv.Clock = env.Clock })
	for range 5 {
		if r := do("GET", "/healthz", "", nil); r.Code != 200 {
			t.Fatalf("/healthz %d %s", r.Code, r.Body)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("5 answers within a second read the store %d times, want once", n)
	}
	env.Clock.Advance(3 * time.Second)
	do("GET", "/healthz", "", nil)
	if n := reads.Load(); n != 2 {
		t.Fatalf("an answer 3 s later read the store %d times in all, want twice", n)
	}
}

// downIngest is the ingest store of a database that does not answer.
type downIngest struct{ ingest.Store }

func (downIngest) NextDue(context.Context, string) (time.Time, bool, error) {
	return time.Time{}, false, errDatabaseDown
}
