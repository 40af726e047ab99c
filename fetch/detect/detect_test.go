package detect_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/fetch/detect"
	"github.com/tidemark/tidemark/fetch/httpx"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
)

func TestProbeDetectsKinds(t *testing.T) {
	mux := http.NewServeMux()
	serve := func(path, ctype, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			fmt.Fprint(w, body)
		})
	}
	serve("/rss", "text/xml", `<?xml version="1.0"?><rss version="2.0"><channel><title>x</title></channel></rss>`)
	serve("/jf", "application/json", `{"version":"https://jsonfeed.org/version/1.1","title":"J","items":[]}`)
	serve("/api", "application/json", `{"version":"1.0","items":[{"id":1,"name":"widget","price":10}]}`)
	serve("/array", "application/json", `[{"id":1}]`)
	serve("/blog", "text/html", `<!doctype html><html><head><title>Blog</title>
<link rel="stylesheet" href="/s.css"><link rel="alternate" type="application/atom+xml" href="/atom.xml">
<link rel="Alternate" type="application/rss+xml" href="https://feeds.example.org/rss"></head><body>hi</body></html>`)
	serve("/atom.xml", "application/atom+xml", `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>a</title></feed>`)
	serve("/plain", "text/html", `<html><head><title>Plain</title></head><body><p>no feed</p></body></html>`)
	serve("/latin", "text/xml; charset=ISO-8859-1", "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Caf\xe9</title><item><title>\x93x\x94</title></item></channel></rss>")
	serve("/big", "text/xml", `<rss version="2.0"><channel><title>x</title>`+strings.Repeat("<item><title>i</title></item>", 20001)+`</channel></rss>`)
	serve("/based", "text/html", `<html><head><title>A &amp; B</title><base href="https://example.org/sub/">
<link rel="alternate" type="application/rss+xml" href="feed.xml"></head><body><svg><title>not this</title></svg></body></html>`)
	srv, client := fetchtest.MustServe(t, mux)
	cases := map[string]detect.Result{
		"/rss":   {Kind: "feed", Location: srv.URL + "/rss"},
		"/jf":    {Kind: "feed", Location: srv.URL + "/jf"},
		"/api":   {Kind: "json", Location: srv.URL + "/api"},
		"/array": {Kind: "json", Location: srv.URL + "/array"},
		"/blog":  {Kind: "feed", Location: srv.URL + "/atom.xml", Title: "Blog", Discovered: true, Alternatives: []string{"https://feeds.example.org/rss"}},
		"/plain": {Kind: "page", Location: srv.URL + "/plain", Title: "Plain"},
		"/latin": {Kind: "feed", Location: srv.URL + "/latin"},
		"/big":   {Kind: "feed", Location: srv.URL + "/big"},
	}
	for path, want := range cases {
		got, err := detect.Probe(context.Background(), client, srv.URL+path)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v (%v), want %+v", path, got, err, want)
		}
	}
	// A <base> applies to the announced feed (Classify: the probe would
	// then ask example.org).
	resp, err := client.Get(context.Background(), httpx.Request{URL: srv.URL + "/based"})
	if err != nil {
		t.Fatal(err)
	}
	want := detect.Result{Kind: "feed", Location: "https://example.org/sub/feed.xml", Title: "A & B", Discovered: true, Alternatives: []string{}}
	if got, err := detect.Classify(resp.Body, resp.Header.Get("Content-Type"), resp.URL); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("/based: got %+v (%v), want %+v", got, err, want)
	}
	if _, err := detect.Probe(context.Background(), client, srv.URL+"/missing"); err == nil {
		t.Error("a 404 was classified")
	}
}

// An answer that says what it is (by its Content-Type, its root element or
// its first bytes) but does not parse as that is refused, never taken for a
// page: a page source on a feed or JSON answer fails every run, even after
// the upstream is fixed.
func TestClassifyRefusesWhatLooksLikeAFeedOrJSONButDoesNotParse(t *testing.T) {
	rss := `<?xml version="1.0"?><rss version="2.0"><channel><title>x</title><item><title>a</title></item></channel></rss>`
	truncated := rss[:strings.Index(rss, "<item>")] // cut between two elements
	for _, tc := range []struct {
		name, ctype, body string
		says              []string
	}{
		{"truncated rss as application/xml", "application/xml", truncated, []string{"looks like a feed", "application/xml", "<rss>", "does not parse", "truncated"}},
		{"rss cut mid-tag", "", rss[:len(rss)-5], []string{"looks like a feed", "<rss>", "does not parse"}},
		{"truncated rss as text/html", "text/html", truncated, []string{"looks like a feed", "<rss>", "truncated"}},
		{"truncated atom without a type", "", `<feed xmlns="http://www.w3.org/2005/Atom"><title>x</title><entry><title>a`, []string{"looks like a feed", "<feed>"}},
		{"malformed rss", "text/xml", `<rss version="2.0"><channel><title>x</title><item><title>b</title></item><</channel></rss>`, []string{"looks like a feed", "malformed"}},
		{"html as rss", "application/rss+xml", `<html><body>oops</body></html>`, []string{"looks like a feed", "application/rss+xml"}},
		{"xml that is no feed", "application/xml", `<?xml version="1.0"?><urlset><url>x</url></urlset>`, []string{"looks like a feed", "application/xml"}},
		{"truncated json", "application/json", `{"data":[{"id":1},`, []string{"looks like JSON", "application/json", "does not parse"}},
		{"json feed type, not json", "application/feed+json", `{"version":"https://jsonfeed.org/version/1.1","items":[`, []string{"looks like JSON", "application/feed+json"}},
		{"broken json without a type", "", `[{"id":1},{"id":`, []string{"looks like JSON", "does not parse"}},
		{"json feed whose items are no array", "application/json", `{"version":"https://jsonfeed.org/version/1.1","title":"t","items":{"id":"1"}}`, []string{"looks like a feed", "items"}},
		{"json feed without a title", "application/json", `{"version":"https://jsonfeed.org/version/1.1","items":[]}`, []string{"looks like a feed", "title"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := detect.Classify([]byte(tc.body), tc.ctype, "https://example.org/x")
			if err == nil {
				t.Fatalf("classified as %+v", r)
			}
			var ue *detect.UnparsedError
			if !errors.As(err, &ue) {
				t.Fatalf("error %T %v, want *detect.UnparsedError", err, err)
			}
			for _, want := range tc.says {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not say %q", err, want)
				}
			}
		})
	}
	// What is text by its own Content-Type stays a page, and JSON that is
	// no feed stays json whatever its fields.
	for _, tc := range []struct{ ctype, body, kind string }{
		{"text/plain", "[draft] notes {not json", "page"},
		{"text/html", "<html><body>[1, 2</body></html>", "page"},
		{"application/json", `{"items":{"a":1},"version":"2"}`, "json"},
		{"application/json", `{"items":"none"}`, "json"},
		{"application/json", "\xef\xbb\xbf[{\"id\":1}]", "json"},
		{"", "\xef\xbb\xbf{\"version\":\"https://jsonfeed.org/version/1.1\",\"title\":\"J\",\"items\":[]}", "feed"},
	} {
		r, err := detect.Classify([]byte(tc.body), tc.ctype, "https://example.org/x")
		if err != nil || r.Kind != tc.kind {
			t.Errorf("%s %q: %+v, %v; want %s", tc.ctype, tc.body, r, err, tc.kind)
		}
	}
}

func TestNameAndCheckURL(t *testing.T) {
	if n := detect.Name("https://www.example.org/blog/feed.xml"); n != "example.org-blog" {
		t.Fatalf("name %q", n)
	}
	for _, bad := range []string{"ftp://x/y", "/local/path", "https://user:pw@example.org/"} {
		if detect.CheckURL(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzClassify(f *testing.F) {
	f.Add([]byte(`<html><head><link rel="alternate" type="application/rss+xml" href="/f"></head></html>`), "text/html")
	f.Add([]byte(`{"a":1}`), "application/json")
	f.Add([]byte(`<rss><channel></channel></rss>`), "")
	f.Fuzz(func(t *testing.T, body []byte, ctype string) {
		r, err := detect.Classify(body, ctype, "https://example.org/x/")
		if err != nil {
			var ue *detect.UnparsedError
			if !errors.As(err, &ue) || r.Kind != "" {
				t.Fatalf("refused with %T %v, kind %q", err, err, r.Kind)
			}
			return
		}
		switch r.Kind {
		case "feed", "json", "page":
		default:
			t.Fatalf("kind %q", r.Kind)
		}
		if r.Discovered && !strings.HasPrefix(r.Location, "http") {
			t.Fatalf("discovered a non-http feed %q", r.Location)
		}
	})
}

// Autodiscovery checks what it discovers (src.md #20): of the feeds a page
// announces, a comments feed comes after the others, and the first that
// answers as a feed is taken; the others are named as alternatives. A
// page whose every announced feed fails is refused, naming each and why.
func TestProbeChecksTheDiscoveredFeed(t *testing.T) {
	mux := http.NewServeMux()
	serve := func(path, ctype, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			fmt.Fprint(w, body)
		})
	}
	rss := `<?xml version="1.0"?><rss version="2.0"><channel><title>x</title></channel></rss>`
	serve("/comments.xml", "application/atom+xml", `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>c</title></feed>`)
	serve("/base.xml", "application/rss+xml", rss)
	serve("/html.xml", "text/html", `<html><body>not a feed</body></html>`)
	serve("/wp", "text/html", `<html><head><title>WP</title>
<link rel="alternate" type="application/atom+xml" title="WP &raquo; Comments Feed" href="/comments.xml">
<link rel="alternate" type="application/rss+xml" title="WP &raquo; Feed" href="/base.xml"></head></html>`)
	serve("/broken-first", "text/html", `<html><head><title>B</title>
<link rel="alternate" type="application/rss+xml" href="/missing.xml">
<link rel="alternate" type="application/rss+xml" href="/base.xml"></head></html>`)
	serve("/all-broken", "text/html", `<html><head><title>A</title>
<link rel="alternate" type="application/rss+xml" href="/missing.xml">
<link rel="alternate" type="application/rss+xml" href="/html.xml"></head></html>`)
	srv, client := fetchtest.MustServe(t, mux)
	ctx := context.Background()

	got, err := detect.Probe(ctx, client, srv.URL+"/wp")
	if err != nil || got.Location != srv.URL+"/base.xml" || !got.Discovered ||
		len(got.Alternatives) != 1 || got.Alternatives[0] != srv.URL+"/comments.xml" {
		t.Fatalf("a comments feed announced first: %+v (%v)", got, err)
	}
	got, err = detect.Probe(ctx, client, srv.URL+"/broken-first")
	if err != nil || got.Location != srv.URL+"/base.xml" || len(got.Alternatives) != 0 {
		t.Fatalf("a 404 announced first: %+v (%v)", got, err)
	}
	_, err = detect.Probe(ctx, client, srv.URL+"/all-broken")
	var de *detect.DiscoveryError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "/missing.xml") || !strings.Contains(err.Error(), "404") ||
		!strings.Contains(err.Error(), "/html.xml") {
		t.Fatalf("every announced feed broken: %v", err)
	}
}
