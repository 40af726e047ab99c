package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/web"
)

type fakeSearch struct{ got publish.SearchQuery }

func (f *fakeSearch) Search(ctx context.Context, q publish.SearchQuery) (publish.SearchResult, error) {
	f.got = q
	return publish.SearchResult{Query: q.Raw, Offset: q.Offset, Limit: q.Limit, More: true, Hits: []publish.SearchHit{{
		PageID: "p1", Title: `<script>alert(1)</script>`, SourceName: "blog", OccurredAt: time.Unix(0, 0),
		URL: "changes/p1.html", Snippet: []publish.SnippetPart{{Text: "the "}, {Text: "tide", Match: true}, {Text: " <img src=x onerror=alert(2)>"}},
	}}}, nil
}

// TestSearchRoutes: results as JSON and as a page with everything escaped;
// queries that are not queries are a 400 that says why, on both routes.
func TestSearchRoutes(t *testing.T) {
	fs := &fakeSearch{}
	srv := httptest.NewServer(web.SearchHandler(fs, nil))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/api/search?q=tide+-moon&limit=5&offset=10")
	var res publish.SearchResult
	if code != 200 || json.Unmarshal([]byte(body), &res) != nil || len(res.Hits) != 1 || !res.More {
		t.Fatalf("api: %d %s", code, body)
	}
	if fs.got.Limit != 5 || fs.got.Offset != 10 || len(fs.got.Terms) != 1 || len(fs.got.Excluded) != 1 {
		t.Fatalf("query passed on: %+v", fs.got)
	}
	code, body = get("/search?q=%3Cscript%3Etide")
	if code != 200 || strings.Contains(body, "<script") || strings.Contains(body, "<img") || !strings.Contains(body, "<mark>tide</mark>") ||
		!strings.Contains(body, `href="search?offset=20&amp;q=%3Cscript%3Etide"`) {
		t.Fatalf("page: %d\n%s", code, body)
	}
	if code, body = get("/search"); code != 200 || !strings.Contains(body, `<form class="search"`) {
		t.Fatalf("bare page: %d\n%s", code, body)
	}
	for _, path := range []string{"/api/search?q=", "/api/search?q=-only", "/api/search?q=%22open", "/api/search?q=x&offset=-1", "/search?q=***", "/search?q=x&limit=ten"} {
		code, body := get(path)
		if code != http.StatusBadRequest || !strings.Contains(body, "invalid") {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	// A limit out of range is refused with the range, as every other
	// list refuses one, on the page as in the API.
	for _, path := range []string{"/api/search?q=x&limit=0", "/api/search?q=x&limit=1000", "/api/search?q=x&limit=ten",
		"/search?q=x&limit=0", "/search?q=x&limit=101"} {
		code, body := get(path)
		if code != http.StatusBadRequest || !strings.Contains(body, "invalid limit") || !strings.Contains(body, "from 1 to 100") {
			t.Errorf("GET %s: %d, want 400 saying the limit goes from 1 to 100: %s", path, code, body)
		}
	}
}

// TestSearchIsPublic: the site serves search without a token (it reads
// only what the wiki publishes), while the rest of /api/ stays private.
func TestSearchIsPublic(t *testing.T) {
	srv := httptest.NewServer((&web.Server{Search: &fakeSearch{}}).Handler())
	defer srv.Close()
	for path, want := range map[string]int{"/api/search?q=tide": 200, "/search?q=tide": 200, "/api/sources": 401} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
