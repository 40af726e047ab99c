package web_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

// The console shows upstream text as the wiki does: titles, item keys,
// errors and cursors with their control characters and terminal escape
// sequences removed (readable.Clean), wherever they appear.
func TestConsoleShowsUpstreamTextClean(t *testing.T) {
	ctx := context.Background()
	env := sqltest.NewEnv(5)
	db := sqltest.MustOpen(t, sqltest.Backends()[0], env)
	st := db.Ingest()
	const title = "control \x1b[31mred\x1b[0m subject\x07"
	evs := sqltest.MustIngest(t, db, env, "blog", title)
	if _, err := st.AddSource(ctx, ingest.NewSource{Name: "down", Kind: "feed", Location: "https://example.org/down", Interval: time.Hour, RetryBudget: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := st.Claim(ctx, "down", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Fail(ctx, c, ingest.Failure{Outcome: tidemark.OutcomeInvalid, Terminal: true, NextDueAt: env.Clock.Now(),
		Reason: "parse feed: unexpected \x1b]0;pwned\x07 token \u009b2J near \x1b[1mline 3\x1b[0m"}); err != nil {
		t.Fatal(err)
	}
	token, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&web.Server{Ingest: st, Auth: db.Auth()}).Handler())
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	cl := &client{t: t, base: srv.URL, token: token, http: &http.Client{Jar: jar}}
	pages := map[string]string{
		"/status":                         "token  near line 3",
		"/status/events":                  "control red subject",
		"/status/events/" + evs[0].ID:     "control red subject",
		"/status/runs/" + evs[0].RunID:    "control red subject",
		"/status/runs":                    "token  near line 3",
		"/status/runs/" + c.RunID:         "token  near line 3",
		"/status/sources/blog":            "control red subject",
		"/status/sources/down":            "token  near line 3",
		"/status/events?source=" + "blog": "control red subject",
	}
	for path, want := range pages {
		r := cl.get(path)
		if r.Code != http.StatusOK {
			t.Errorf("%s: %d", path, r.Code)
			continue
		}
		for _, bad := range []string{"\x1b", "\x07", "\u009b", "[31m", "]0;"} {
			if i := strings.Index(r.Body, bad); i >= 0 {
				t.Errorf("%s shows %q: %q", path, bad, r.Body[max(0, i-60):min(len(r.Body), i+40)])
			}
		}
		if !strings.Contains(r.Body, want) {
			t.Errorf("%s does not show %q", path, want)
		}
	}
}

// The console's event lists show a long title shortened, as the wiki's
// lists do (publish.ListTitle); the event's own page shows it whole.
func TestConsoleListsShortenLongTitles(t *testing.T) {
	ctx := context.Background()
	env := sqltest.NewEnv(5)
	db := sqltest.MustOpen(t, sqltest.Backends()[0], env)
	long := strings.Repeat("word ", 600)
	evs := sqltest.MustIngest(t, db, env, "blog", long)
	token, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&web.Server{Ingest: db.Ingest(), Auth: db.Auth()}).Handler())
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	cl := &client{t: t, base: srv.URL, token: token, http: &http.Client{Jar: jar}}
	full := strings.TrimSpace(long)
	for _, path := range []string{"/status/events", "/status/sources/blog"} {
		if r := cl.get(path); r.Code != 200 || strings.Contains(r.Body, full) || !strings.Contains(r.Body, "word word…") {
			t.Errorf("%s shows the whole 3,000-character title, or no shortened one", path)
		}
	}
	if r := cl.get("/status/events/" + evs[0].ID); !strings.Contains(r.Body, full) {
		t.Errorf("the event's page does not show its whole title")
	}
}
