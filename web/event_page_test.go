package web_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize/extractive"
	"github.com/tidemark/tidemark/web"
)

// An event's page links to the wiki page it is published on, and says
// when it is on none yet.
func TestEventPageLinksItsWikiPage(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(3)
		db := sqltest.MustOpen(t, b, env)
		evs := sqltest.MustIngest(t, db, env, "blog", "Post A")
		token, _, err := db.Auth().CreateToken(ctx, "ops")
		if err != nil {
			t.Fatal(err)
		}
		objs := mem.New()
		srv := httptest.NewServer((&web.Server{Ingest: db.Ingest(), Auth: db.Auth(), Pages: db.Publish(), Wiki: web.WikiHandler(objs, db.Publish(), nil)}).Handler())
		t.Cleanup(srv.Close)
		jar, _ := cookiejar.New(nil)
		cl := &client{t: t, base: srv.URL, token: token, http: &http.Client{Jar: jar}}

		page := "/status/events/" + evs[0].ID
		r := cl.get(page)
		mustContain(t, "an event not yet published", r, "not published yet")
		if strings.Contains(r.Body, `href="/changes/`) {
			t.Fatalf("an event not yet published links a wiki page:\n%s", r.Body)
		}

		svc := &publish.Service{Store: db.Publish(), Objects: objs}
		if _, err := svc.Summarize(ctx, extractive.Summarizer{}, 10); err != nil {
			t.Fatal(err)
		}
		if rep, err := svc.PublishPending(ctx, 10); err != nil || rep.Published != 1 {
			t.Fatalf("publish: %+v, %v", rep, err)
		}
		id, ok, err := db.Publish().PublishedPage(ctx, evs[0].ID)
		if err != nil || !ok {
			t.Fatalf("published page: %v, %v", ok, err)
		}
		mustContain(t, "a published event", cl.get(page), `href="/`+publish.PageKey(id)+`"`)
		// The link leads to the page, served by the same site.
		if r := cl.get("/" + publish.PageKey(id)); r.Code != http.StatusOK || !strings.Contains(r.Body, "Post A") {
			t.Fatalf("the wiki page: %d\n%.400s", r.Code, r.Body)
		}
	})
}

// The public evidence download follows publication, as search does: it
// serves the evidence a published page shows, and nothing of an event
// that is not (or no longer) published, whatever its ID; signed in, the
// console serves every revision of every event.
func TestPublicEvidenceFollowsPublication(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(3)
		db := sqltest.MustOpen(t, b, env)
		evs := sqltest.MustIngest(t, db, env, "blog", "Post A", "Post B")
		token, _, err := db.Auth().CreateToken(ctx, "ops")
		if err != nil {
			t.Fatal(err)
		}
		objs := mem.New()
		srv := httptest.NewServer((&web.Server{Ingest: db.Ingest(), Auth: db.Auth(), Pages: db.Publish(), Wiki: web.WikiHandler(objs, db.Publish(), nil)}).Handler())
		t.Cleanup(srv.Close)
		anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		public := func(path string) int {
			t.Helper()
			resp, err := anon.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		a, bb := "/evidence/"+evs[0].ID+"/1", "/evidence/"+evs[1].ID+"/1"
		if got := public(a); got != http.StatusNotFound {
			t.Fatalf("evidence of an event not yet published: %d, want 404", got)
		}
		svc := &publish.Service{Store: db.Publish(), Objects: objs}
		if _, err := svc.Summarize(ctx, extractive.Summarizer{}, 10); err != nil {
			t.Fatal(err)
		}
		if rep, err := svc.PublishPending(ctx, 10); err != nil || rep.Published != 2 {
			t.Fatalf("publish: %+v, %v", rep, err)
		}
		if got := public(a); got != http.StatusOK {
			t.Fatalf("evidence of a published page: %d, want 200", got)
		}
		if got := public("/evidence/" + evs[0].ID + "/2"); got != http.StatusNotFound {
			t.Fatalf("a revision no page shows: %d, want 404", got)
		}
		// Rejected: its page is withdrawn by the next publishing round, and its
		// evidence is no longer public from the moment it is rejected.
		sum, err := db.Publish().CurrentSummary(ctx, evs[1].ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Publish().Reject(ctx, sum, "wrong"); err != nil {
			t.Fatal(err)
		}
		if got := public(bb); got != http.StatusNotFound {
			t.Fatalf("evidence of a rejected summary's event: %d, want 404", got)
		}
		// Signed in, the console's event page links every revision, and
		// the link serves it.
		jar, _ := cookiejar.New(nil)
		cl := &client{t: t, base: srv.URL, token: token, http: &http.Client{Jar: jar}}
		r := cl.get("/status/events/" + evs[1].ID)
		link := "/status/events/" + evs[1].ID + "/evidence/1"
		mustContain(t, "the console's event page", r, `href="`+link+`"`)
		if r := cl.get(link); r.Code != http.StatusOK || r.Header.Get("X-Evidence-SHA256") == "" {
			t.Fatalf("the console's evidence download: %d %v", r.Code, r.Header)
		}
		if got := public(link); got != http.StatusSeeOther {
			t.Fatalf("the console's evidence download without signing in: %d", got)
		}
	})
}
