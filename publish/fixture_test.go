package publish_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/objstore/objstoretest"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize"
)

type fixture struct {
	db   *sqlstore.DB
	st   *sqlstore.PublishStore
	objs objstore.Store
	svc  *publish.Service
	env  sqltest.Env
	src  tidemark.Source
}

func mustFixture(t *testing.T, b sqltest.Backend, objs objstore.Store) *fixture {
	t.Helper()
	env := sqltest.NewEnv(42)
	db := sqltest.MustOpen(t, b, env)
	return mustFixtureDB(t, db, env, objs)
}

func mustFixtureDB(t *testing.T, db *sqlstore.DB, env sqltest.Env, objs objstore.Store) *fixture {
	t.Helper()
	src, err := db.Ingest().AddSource(context.Background(), ingest.NewSource{Name: "repo", Kind: "git", Location: "/src/repo", Interval: time.Hour, RetryBudget: 3})
	if err != nil {
		t.Fatal(err)
	}
	st := db.Publish()
	return &fixture{db: db, st: st, objs: objs, env: env, src: src, svc: &publish.Service{Store: st, Objects: objs}}
}

// mustEvent settles one item through a real claim and returns its event.
func (f *fixture) mustEvent(t *testing.T, key, title, evidence string) tidemark.Event {
	t.Helper()
	ctx := context.Background()
	ing := f.db.Ingest()
	c, err := ing.Claim(ctx, f.src.ID, "test-holder", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f.env.Clock.Advance(time.Second)
	rep, err := ing.Settle(ctx, c, ingest.Settlement{
		Items:     []tidemark.Item{{Key: key, Title: title, OccurredAt: f.env.Clock.Now(), Evidence: []byte(evidence)}},
		Cursor:    key + "@" + f.env.Clock.Now().String(),
		NextDueAt: f.env.Clock.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.EventIDs) != 1 {
		t.Fatalf("settle recorded %d events", len(rep.EventIDs))
	}
	ev, err := ing.Event(ctx, rep.EventIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func (f *fixture) mustAccept(t *testing.T, ev tidemark.Event, text, model string) publish.Summary {
	t.Helper()
	s, created, err := f.st.Accept(context.Background(), publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash,
		Draft: summarize.Draft{Text: text, Model: model, PromptVersion: "p1"}})
	if err != nil {
		t.Fatalf("accept %q: %v", text, err)
	}
	if !created {
		t.Fatalf("accept %q: not created", text)
	}
	return s
}

func (f *fixture) mustSummary(t *testing.T, id string) publish.Summary {
	t.Helper()
	s, err := f.st.Summary(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mustPageShows asserts the page object holds text and not notText.
func (f *fixture) mustPageShows(t *testing.T, pageID, text, notText string) objstore.Object {
	t.Helper()
	o, err := f.objs.Get(context.Background(), publish.PageKey(pageID))
	if err != nil {
		t.Fatalf("page %s: %v", pageID, err)
	}
	if !strings.Contains(string(o.Body), text) {
		t.Fatalf("page %s does not show %q:\n%s", pageID, text, o.Body)
	}
	if notText != "" && strings.Contains(string(o.Body), notText) {
		t.Fatalf("page %s still shows %q", pageID, notText)
	}
	return o
}

func mustPublished(t *testing.T, s publish.Summary, want bool) {
	t.Helper()
	if (s.PublishedAt != nil) != want {
		t.Fatalf("summary %s (%q) published = %v, want %v", s.ID, s.Text, s.PublishedAt != nil, want)
	}
}

// stores are the object stores every publication test runs against: the
// in-memory one, a directory, and the S3 server when one is configured.
func stores(t *testing.T) map[string]func(t *testing.T) objstore.Store {
	return map[string]func(t *testing.T) objstore.Store{
		"mem": func(t *testing.T) objstore.Store { return mem.New() },
		"dir": func(t *testing.T) objstore.Store {
			s, err := dir.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"s3": func(t *testing.T) objstore.Store { return objstoretest.S3(t, "") },
	}
}

func isAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

type sqlTx = sql.Tx

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }

type (
	publishPublication = tidemark.Publication
)

func draft(text, model string) summarize.Draft {
	return summarize.Draft{Text: text, Model: model, PromptVersion: "p1"}
}
