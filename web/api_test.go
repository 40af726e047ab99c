package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

type idItem struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func (i idItem) key() string { return i.ID + i.Name }

// mustWalk follows a list's cursors from the first page to the last and
// returns every item's key, in order.
func mustWalk(t *testing.T, do func(method, path, token string, edit func(*http.Request)) response, token, path string, limit int) []string {
	t.Helper()
	var keys []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("%s: more than 100 pages: the cursor does not advance", path)
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		u := fmt.Sprintf("%s%slimit=%d", path, sep, limit)
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		r := do("GET", u, token, nil)
		var p web.Page[idItem]
		if r.Code != 200 || json.Unmarshal([]byte(r.Body), &p) != nil {
			t.Fatalf("%s: %d %s", u, r.Code, r.Body)
		}
		if len(p.Items) > limit {
			t.Fatalf("%s: %d items, limit %d", u, len(p.Items), limit)
		}
		for _, it := range p.Items {
			keys = append(keys, it.key())
		}
		if p.Next == "" {
			return keys
		}
		if len(p.Items) != limit {
			t.Fatalf("%s: a short page (%d) with a next cursor", u, len(p.Items))
		}
		cursor = p.Next
	}
}

// Every list endpoint pages by cursor: walking the pages yields exactly
// the one-page listing, in order, whatever the page size, and rows added
// between two pages neither repeat nor shift what follows.
func TestAPICursorPagination(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(21)
		db := sqltest.MustOpen(t, b, env)
		st := db.Ingest()
		for _, name := range []string{"e", "a", "d", "c", "b"} {
			if _, err := st.AddSource(ctx, ingest.NewSource{Name: name, Kind: "git", Location: "/x/" + name, Interval: time.Minute, RetryBudget: 3}); err != nil {
				t.Fatal(err)
			}
		}
		// Seven runs, some started in the same millisecond (the ID breaks
		// the tie), each with an event.
		for i := range 7 {
			name := []string{"a", "b", "c", "d", "e"}[i%5]
			c, err := st.Claim(ctx, name, "w", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Settle(ctx, c, ingest.Settlement{Cursor: fmt.Sprint(i), NextDueAt: env.Clock.Now(),
				Items: []tidemark.Item{{Key: fmt.Sprint(i), Title: "t", OccurredAt: env.Clock.Now(), Evidence: []byte{byte(i)}}}}); err != nil {
				t.Fatal(err)
			}
			if i%2 == 1 {
				env.Clock.Advance(time.Second)
			}
		}
		ob := db.Outbox()
		for _, lane := range []string{"l2", "l1"} {
			if _, err := ob.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: lane, Provider: "webhook", Settings: map[string]string{"url": "http://127.0.0.1:1/"}}}); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := ob.Draft(ctx, outbox.Draft{Lane: lane, Target: "t", Body: fmt.Sprint(lane, i)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		token, _, err := db.Auth().CreateToken(ctx, "ops")
		if err != nil {
			t.Fatal(err)
		}
		do := mustServe(t, db, nil)
		for _, path := range []string{"/api/sources", "/api/runs", "/api/runs?source=a", "/api/events", "/api/outbox/lanes",
			"/api/outbox/intents", "/api/outbox/intents?state=pending", "/api/migrations"} {
			all := mustWalk(t, do, token, path, 1000)
			for _, limit := range []int{1, 2, 3} {
				if got := mustWalk(t, do, token, path, limit); !slices.Equal(got, all) {
					t.Errorf("%s by %d: %q, want %q", path, limit, got, all)
				}
			}
		}
		var names string
		for _, k := range mustWalk(t, do, token, "/api/sources", 2) {
			names += k[len(k)-1:] // the key is ID + name
		}
		if names != "abcde" {
			t.Errorf("sources %q, want abcde", names)
		}
		if n := len(mustWalk(t, do, token, "/api/outbox/intents", 4)); n != 6 {
			t.Errorf("%d intents over two lanes, want 6", n)
		}

		// A run that starts between two pages belongs before the first
		// page: the second page goes on where the first stopped.
		var first web.Page[idItem]
		if r := do("GET", "/api/runs?limit=3", token, nil); json.Unmarshal([]byte(r.Body), &first) != nil || first.Next == "" {
			t.Fatalf("first page: %s", r.Body)
		}
		want := mustWalk(t, do, token, "/api/runs", 1000)[3:6]
		env.Clock.Advance(time.Minute)
		c, err := st.Claim(ctx, "a", "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Fail(ctx, c, ingest.Failure{Outcome: tidemark.OutcomeUnreachable, Reason: "down", NextDueAt: env.Clock.Now()}); err != nil {
			t.Fatal(err)
		}
		var second web.Page[idItem]
		if r := do("GET", "/api/runs?limit=3&cursor="+url.QueryEscape(first.Next), token, nil); json.Unmarshal([]byte(r.Body), &second) != nil {
			t.Fatalf("second page: %s", r.Body)
		}
		var got []string
		for _, it := range second.Items {
			got = append(got, it.key())
		}
		if !slices.Equal(got, want) {
			t.Errorf("second page after a new run: %q, want %q", got, want)
		}

		// A cursor is opaque but checked: another list's, a made-up one
		// and a limit out of bounds are invalid input (400, class invalid).
		for _, path := range []string{"/api/events?cursor=" + url.QueryEscape(first.Next), "/api/runs?cursor=bm9wZQ",
			"/api/runs?limit=0", "/api/runs?limit=1001", "/api/sources?limit=x"} {
			r := do("GET", path, token, nil)
			mustErrorClass(t, path, r, 400, "invalid", tidemark.ExitInvalid)
		}
	})
}

// mustErrorClass checks a JSON error's status and its exit-code class.
func mustErrorClass(t *testing.T, what string, r response, status int, class string, code int) {
	t.Helper()
	var e struct {
		Error    string `json:"error"`
		Class    string `json:"class"`
		ExitCode *int   `json:"exit_code"`
	}
	if json.Unmarshal([]byte(r.Body), &e) != nil || e.ExitCode == nil {
		t.Errorf("%s: not a JSON error: %d %s", what, r.Code, r.Body)
		return
	}
	if r.Code != status || e.Class != class || *e.ExitCode != code || e.Error == "" {
		t.Errorf("%s: %d %s/%d %q, want %d %s/%d", what, r.Code, e.Class, *e.ExitCode, e.Error, status, class, code)
	}
}

// A JSON error carries the class of the CLI's exit code for its kind.
func TestAPIErrorClasses(t *testing.T) {
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(22))
	token, _, err := db.Auth().CreateToken(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	do := mustServe(t, db, nil)
	mustErrorClass(t, "unknown source", do("GET", "/api/sources/nope", token, nil), 404, "not_found", tidemark.ExitNotFound)
	mustErrorClass(t, "unknown endpoint", do("GET", "/api/nope", token, nil), 404, "not_found", tidemark.ExitNotFound)
	mustErrorClass(t, "bad outcome", do("GET", "/api/runs?outcome=fine", token, nil), 400, "invalid", tidemark.ExitInvalid)
	mustErrorClass(t, "runs of an unknown source", do("GET", "/api/runs?source=nope", token, nil), 404, "not_found", tidemark.ExitNotFound)
	mustErrorClass(t, "events of an unknown source", do("GET", "/api/events?source=nope", token, nil), 404, "not_found", tidemark.ExitNotFound)
	mustErrorClass(t, "intents of an unknown lane", do("GET", "/api/outbox/intents?lane=nope", token, nil), 404, "not_found", tidemark.ExitNotFound)
	mustErrorClass(t, "no token", do("GET", "/api/runs", "", nil), 401, "not_found", tidemark.ExitNotFound)
	mustErrorClass(t, "wrong method", do("DELETE", "/api/runs", token, nil), 405, "invalid", tidemark.ExitInvalid)
}

// Signing in and out through the console is audited with the token's
// name, in the transaction that opens or ends the session, and the audit
// is listed by the API.
func TestSignInAndOutAreAudited(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := sqltest.MustOpen(t, b, sqltest.NewEnv(23))
		do := mustServe(t, db, nil)
		alice, _, err := db.Auth().CreateToken(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		ops, _, err := db.Auth().CreateToken(ctx, "ops")
		if err != nil {
			t.Fatal(err)
		}
		form := func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(url.Values{"token": {alice}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if r := do("POST", "/signin", "", func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader("token=tmk_wrong"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}); r.Code != 401 {
			t.Fatalf("wrong token: %d", r.Code)
		}
		r := do("POST", "/signin", "", form)
		var sess *http.Cookie
		for _, c := range (&http.Response{Header: r.Header}).Cookies() {
			if c.Name == web.SessionCookie {
				sess = c
			}
		}
		if r.Code != 303 || sess == nil {
			t.Fatalf("sign in: %d", r.Code)
		}
		if r := do("POST", "/signout", "", func(r *http.Request) { r.AddCookie(sess) }); r.Code != 303 {
			t.Fatalf("sign out: %d", r.Code)
		}
		// Signing out again (the session is gone) records nobody.
		if r := do("POST", "/signout", "", func(r *http.Request) { r.AddCookie(sess) }); r.Code != 303 {
			t.Fatalf("sign out again: %d", r.Code)
		}
		r = do("GET", "/api/audit", ops, nil)
		var page web.Page[tidemark.AuditEntry]
		if r.Code != 200 || json.Unmarshal([]byte(r.Body), &page) != nil {
			t.Fatalf("/api/audit: %d %s", r.Code, r.Body)
		}
		var got []string
		for _, e := range page.Items {
			got = append(got, e.Actor+" "+e.Action+" "+e.Outcome)
		}
		if want := []string{"alice signout ok", "alice signin ok"}; !slices.Equal(got, want) {
			t.Fatalf("audit %q, want %q (newest first)", got, want)
		}
		if r := do("GET", "/api/audit?actor=ops", ops, nil); !strings.Contains(r.Body, `"items": []`) {
			t.Fatalf("/api/audit?actor=ops: %s", r.Body)
		}
	})
}
