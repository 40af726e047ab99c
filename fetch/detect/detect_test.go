package detect_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/fetch/detect"
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
	serve("/jf", "application/json", `{"version":"https://jsonfeed.org/version/1.1","items":[]}`)
	serve("/api", "application/json", `[{"id":1}]`)
	serve("/blog", "text/html", `<!doctype html><html><head><title>Blog</title>
<link rel="stylesheet" href="/s.css"><link rel="alternate" type="application/atom+xml" href="/atom.xml">
<link rel="Alternate" type="application/rss+xml" href="https://feeds.example.org/rss"></head><body>hi</body></html>`)
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
		"/blog":  {Kind: "feed", Location: srv.URL + "/atom.xml", Title: "Blog", Discovered: true},
		"/plain": {Kind: "page", Location: srv.URL + "/plain", Title: "Plain"},
		"/latin": {Kind: "feed", Location: srv.URL + "/latin"},
		"/big":   {Kind: "feed", Location: srv.URL + "/big"},
		"/based": {Kind: "feed", Location: "https://example.org/sub/feed.xml", Title: "A & B", Discovered: true},
	}
	for path, want := range cases {
		got, err := detect.Probe(context.Background(), client, srv.URL+path)
		if err != nil || got != want {
			t.Errorf("%s: got %+v (%v), want %+v", path, got, err, want)
		}
	}
	if _, err := detect.Probe(context.Background(), client, srv.URL+"/missing"); err == nil {
		t.Error("a 404 was classified")
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
		r := detect.Classify(body, ctype, "https://example.org/x/")
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
