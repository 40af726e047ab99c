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
		srv := httptest.NewServer((&web.Server{Ingest: db.Ingest(), Auth: db.Auth(), Pages: db.Publish(), Wiki: web.WikiHandler(objs, db.Ingest(), nil)}).Handler())
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
