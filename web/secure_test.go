package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

type response struct {
	Code   int
	Header http.Header
	Body   string
}

// mustServe serves db's pages with a stub wiki at "/" and returns a
// function that makes one request (no redirects followed).
func mustServe(t *testing.T, db *sqlstore.DB, cfg func(*web.Server)) func(method, path, token string, edit func(*http.Request)) response {
	t.Helper()
	s := &web.Server{Ingest: db.Ingest(), Outbox: db.Outbox(), Migrations: db.Content(), Auth: db.Auth(),
		Wiki: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, "<p>the wiki</p>")
		})}
	if cfg != nil {
		cfg(s)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(method, path, token string, edit func(*http.Request)) response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if edit != nil {
			edit(req)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return response{resp.StatusCode, resp.Header, string(body)}
	}
}

func mustJSONError(t *testing.T, what string, r response) string {
	t.Helper()
	var e struct{ Error string }
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || json.Unmarshal([]byte(r.Body), &e) != nil || e.Error == "" {
		t.Fatalf("%s: want a JSON error, got %d %s: %s", what, r.Code, r.Header.Get("Content-Type"), r.Body)
	}
	return e.Error
}

// Everything but the wiki, /healthz and the sign-in page needs a token;
// until one exists the refusal says how to make one.
func TestServerRequiresToken(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := sqltest.MustOpen(t, b, sqltest.NewEnv(3))
		do := mustServe(t, db, nil)

		msg := mustJSONError(t, "/api/sources without tokens", do("GET", "/api/sources", "", nil))
		if !strings.Contains(msg, "tidemark token create") {
			t.Errorf("the refusal does not say how to make a token: %s", msg)
		}
		if r := do("GET", "/signin", "", nil); r.Code != 200 || !strings.Contains(r.Body, "tidemark token create") {
			t.Errorf("/signin without tokens: %d\n%s", r.Code, r.Body)
		}
		token, _, err := db.Auth().CreateToken(ctx, "ops")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			path, token string
			want        int
		}{
			{"/", "", 200},
			{"/healthz", "", 200},
			{"/signin", "", 200},
			{"/status", "", 303},
			{"/status/sources/x", "", 303},
			{"/api/sources", "", 401},
			{"/api/nope", "", 401},
			{"/metrics", "", 401},
			{"/api/sources", "tmk_wrong", 401},
			{"/api/sources", token + "x", 401},
			{"/status", "tmk_wrong", 303},
			{"/status", token, 200},
			{"/api/sources", token, 200},
			{"/metrics", token, 200},
		} {
			r := do("GET", tc.path, tc.token, nil)
			if r.Code != tc.want {
				t.Errorf("GET %s (token %q): %d, want %d: %s", tc.path, tc.token, r.Code, tc.want, r.Body)
			}
			if r.Code == 401 {
				mustJSONError(t, tc.path, r)
				if r.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("GET %s: 401 without WWW-Authenticate", tc.path)
				}
			}
			if r.Code == 303 && !strings.HasPrefix(r.Header.Get("Location"), "/signin?next=") {
				t.Errorf("GET %s: redirect to %q, want the sign-in page", tc.path, r.Header.Get("Location"))
			}
		}
		if _, _, err := db.Auth().RevokeToken(ctx, "ops"); err != nil {
			t.Fatal(err)
		}
		if r := do("GET", "/api/sources", token, nil); r.Code != 401 {
			t.Errorf("revoked token: %d", r.Code)
		}
	})
}

// PublicMetrics serves /metrics to scrapers without a token; the rest
// stays behind one.
func TestServerPublicMetrics(t *testing.T) {
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(3))
	do := mustServe(t, db, func(s *web.Server) { s.PublicMetrics = true })
	if r := do("GET", "/metrics", "", nil); r.Code != 200 || !strings.Contains(r.Body, "tidemark_database_up 1") {
		t.Errorf("public /metrics: %d %s", r.Code, r.Body)
	}
	if r := do("GET", "/api/sources", "", nil); r.Code != 401 {
		t.Errorf("/api/sources with public metrics: %d", r.Code)
	}
}

// The console signs in with a token: the session cookie is HttpOnly and
// SameSite=Strict, ends at sign-out, and a form posted
// from another site is refused.
func TestServerSignIn(t *testing.T) {
	ctx := context.Background()
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(4))
	do := mustServe(t, db, nil)
	token, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	form := func(vals url.Values, hdr map[string]string) func(*http.Request) {
		return func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(vals.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range hdr {
				r.Header.Set(k, v)
			}
		}
	}
	// Someone not signed in is offered the wiki, not a way out of a
	// session or links to pages that would send them back here.
	if r := do("GET", "/signin", "", nil); r.Code != 200 || strings.Contains(r.Body, "/signout") || strings.Contains(r.Body, `href="/status"`) {
		t.Fatalf("sign-in page: %d, offers sign-out or status links:\n%s", r.Code, r.Body)
	}
	if r := do("POST", "/signin", "", form(url.Values{"token": {"tmk_wrong"}}, nil)); r.Code != 401 || r.Header.Get("Set-Cookie") != "" {
		t.Fatalf("sign in with a wrong token: %d %q", r.Code, r.Header.Get("Set-Cookie"))
	}
	cross := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
	if r := do("POST", "/signin", "", form(url.Values{"token": {token}}, cross)); r.Code != 403 || r.Header.Get("Set-Cookie") != "" {
		t.Fatalf("sign in posted from another site: %d %q", r.Code, r.Header.Get("Set-Cookie"))
	}
	// The return path stays on this site, whatever a browser would make
	// of it: it drops tabs and newlines and reads a backslash as a slash.
	if r := do("GET", "/signin?next=/%09/evil.example/phish", "", nil); r.Code != 200 || strings.Contains(r.Body, "evil.example") {
		t.Fatalf("sign-in page asked to return to /<TAB>/evil.example: %d\n%s", r.Code, r.Body)
	}
	for next, want := range map[string]string{
		"/\t/evil.example/phish": "/status", "/\n/evil.example/": "/status", "/\r/evil.example/": "/status",
		"/\\evil.example/": "/status", "https://evil.example/": "/status",
		"/status/sources/a?x=1": "/status/sources/a?x=1",
	} {
		r := do("POST", "/signin", "", form(url.Values{"token": {token}, "next": {next}}, nil))
		if r.Code != 303 || r.Header.Get("Location") != want {
			t.Errorf("sign in to return to %q: %d to %q, want 303 to %q", next, r.Code, r.Header.Get("Location"), want)
		}
	}
	r := do("POST", "/signin", "", form(url.Values{"token": {token}, "next": {"//evil.example/"}}, nil))
	if r.Code != 303 || r.Header.Get("Location") != "/status" {
		t.Fatalf("sign in: %d to %q, want 303 to /status", r.Code, r.Header.Get("Location"))
	}
	resp := http.Response{Header: r.Header}
	var sess *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == web.SessionCookie {
			sess = c
		}
	}
	if sess == nil || !sess.HttpOnly || sess.SameSite != http.SameSiteStrictMode || sess.Value == "" || strings.Contains(sess.Value, token) {
		t.Fatalf("session cookie %+v", sess)
	}
	withCookie := func(r *http.Request) { r.AddCookie(&http.Cookie{Name: sess.Name, Value: sess.Value}) }
	if r := do("GET", "/status", "", withCookie); r.Code != 200 {
		t.Fatalf("/status with the session: %d", r.Code)
	}
	if r := do("POST", "/signout", "", withCookie); r.Code != 303 {
		t.Fatalf("sign out: %d", r.Code)
	}
	if r := do("GET", "/status", "", withCookie); r.Code != 303 {
		t.Fatalf("/status after sign out: %d", r.Code)
	}
}

// Every response carries nosniff, the CSP and a referrer policy, whatever
// answered it: the wiki, a redirect, a refusal, an unknown path.
func TestServerSecurityHeaders(t *testing.T) {
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(5))
	do := mustServe(t, db, nil)
	evil := func(r *http.Request) { r.Host = "evil.example" }
	for _, tc := range []struct {
		method, path string
		edit         func(*http.Request)
	}{
		{"GET", "/", nil}, {"GET", "/nope", nil}, {"GET", "/healthz", nil}, {"GET", "/status", nil},
		{"GET", "/api/sources", nil}, {"GET", "/api/nope", nil}, {"DELETE", "/healthz", nil},
		{"GET", "/signin", nil}, {"GET", "/", evil},
	} {
		r := do(tc.method, tc.path, "", tc.edit)
		for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Content-Security-Policy": web.ContentSecurityPolicy,
			"Referrer-Policy": "no-referrer"} {
			if got := r.Header.Get(h); got != want {
				t.Errorf("%s %s (%d): %s %q, want %q", tc.method, tc.path, r.Code, h, got, want)
			}
		}
	}
	if !strings.Contains(web.ContentSecurityPolicy, "default-src 'none'") || strings.Contains(web.ContentSecurityPolicy, "script-src") {
		t.Errorf("CSP allows more than plain HTML: %s", web.ContentSecurityPolicy)
	}
}

// A Host header the server does not answer for is refused, so a
// DNS-rebinding page cannot reach the API through the user's browser.
func TestServerHostCheck(t *testing.T) {
	ctx := context.Background()
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(6))
	token, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	do := mustServe(t, db, func(s *web.Server) { s.Hosts = []string{"tidemark.example.org"} })
	for host, want := range map[string]int{
		"evil.example": 421, "evil.example:8080": 421, "127.0.0.1.evil.example": 421, "localhost.evil.example": 421,
		"localhost": 200, "LOCALHOST:8080": 200, "127.0.0.1:8080": 200, "[::1]:8080": 200, "10.0.0.7": 200,
		"tidemark.example.org": 200, "tidemark.example.org.:443": 200,
	} {
		r := do("GET", "/api/sources", token, func(r *http.Request) { r.Host = host })
		if r.Code != want {
			t.Errorf("Host %s: %d, want %d: %s", host, r.Code, want, r.Body)
		}
		if r.Code == 421 {
			mustJSONError(t, "Host "+host, r)
		}
	}
}

// Every /api error is JSON: an unknown path, a wrong method, bad input.
func TestServerAPIErrorsAreJSON(t *testing.T) {
	ctx := context.Background()
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(8))
	token, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	do := mustServe(t, db, nil)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/api/nope", 404}, {"GET", "/api/", 404}, {"GET", "/api/outbox/nope/deeper", 404},
		{"POST", "/api/sources", 405}, {"DELETE", "/api/runs", 405}, {"PUT", "/api/sources/x", 405},
		{"GET", "/api/sources/nope", 404}, {"GET", "/api/runs?limit=abc", 400}, {"POST", "/api/sources?cross", 403},
	} {
		r := do(tc.method, tc.path, token, func(r *http.Request) {
			if strings.HasSuffix(r.URL.RawQuery, "cross") {
				r.Header.Set("Sec-Fetch-Site", "cross-site")
			}
		})
		if r.Code != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, r.Code, tc.want)
		}
		mustJSONError(t, tc.method+" "+tc.path, r)
	}
}

// What a token shows is kept by no cache: every answer behind the token
// (pages, the API, evidence, metrics) and every refusal of one says
// Cache-Control: no-store, so a proxy or a shared browser keeps nothing
// after sign-out. The public wiki stays cacheable.
func TestSignedInAnswersAreNotStored(t *testing.T) {
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(3))
	token, _, err := db.Auth().CreateToken(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	do := mustServe(t, db, nil)
	for _, p := range []string{"/status", "/api/sources", "/api/runs", "/metrics", "/api/nope"} {
		for _, tok := range []string{token, ""} {
			if r := do("GET", p, tok, nil); r.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("GET %s (token %v): %d, Cache-Control %q, want no-store", p, tok != "", r.Code, r.Header.Get("Cache-Control"))
			}
		}
	}
	if r := do("GET", "/", "", nil); r.Header.Get("Cache-Control") == "no-store" {
		t.Errorf("the public wiki is no-store")
	}
}
