package publish_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize/extractive"
	"golang.org/x/net/html"
)

// settle settles items of a source through a real claim.
func (f *fixture) settle(t *testing.T, src tidemark.Source, items ...tidemark.Item) {
	t.Helper()
	ctx := context.Background()
	ing := f.db.Ingest()
	c, err := ing.Claim(ctx, src.ID, "test-holder", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f.env.Clock.Advance(time.Second)
	for i := range items {
		if items[i].OccurredAt.IsZero() {
			items[i].OccurredAt = f.env.Clock.Now().Add(time.Duration(i) * time.Millisecond)
		}
	}
	if _, err := ing.Settle(ctx, c, ingest.Settlement{Items: items, Cursor: fmt.Sprint(f.env.Clock.Now().UnixNano()), NextDueAt: f.env.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) mustSummarizeAndPublish(t *testing.T) publish.PublishReport {
	t.Helper()
	ctx := context.Background()
	if rep, err := f.svc.Summarize(ctx, extractive.Summarizer{}, 100000); err != nil || rep.Failed != 0 {
		t.Fatalf("summarize: %+v %v", rep, err)
	}
	rep, err := f.svc.PublishPending(ctx, 100000)
	if err != nil || rep.Failed != 0 {
		t.Fatalf("publish: %+v %v", rep, err)
	}
	return rep
}

const hostile = `<p>Body</p><script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a>` +
	"<div><i>unbalanced\x1b[31m\x1b]0;pwn\x07"

// TestHostileUpstreamIsInert: titles and bodies from upstream with
// scripts, javascript: links, event handlers, unbalanced tags and terminal
// escapes reach no page, listing or feed as anything but inert text, and
// no object shows a local filesystem path.
func TestHostileUpstreamIsInert(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) { testHostile(t, b) })
}

func testHostile(t *testing.T, b sqltest.Backend) {
	ctx := context.Background()
	f := mustFixture(t, b, mem.New())
	feed, err := f.db.Ingest().AddSource(ctx, ingest.NewSource{Name: "blog <b>", Kind: "feed", Location: "https://blog.example/feed.xml", Interval: time.Hour, RetryBudget: 3})
	if err != nil {
		t.Fatal(err)
	}
	title := `<script>alert("t")</script><img src=x onerror=alert(4)>` + "\x1b[2J"
	rec, err := json.Marshal(map[string]any{"id": "1", "title": title, "link": "javascript:alert(5)", "description": hostile})
	if err != nil {
		t.Fatal(err)
	}
	f.settle(t, feed, tidemark.Item{Key: "1", Title: title, URL: "javascript:alert(6)", Evidence: []byte(rec)})
	f.settle(t, f.src, tidemark.Item{Key: "c1", Title: title, URL: "file:///src/repo",
		Evidence: []byte("commit c1\nauthor " + title + " <a@b>\n\n    " + title + "\n\n 1 file changed, 1 insertion(+)\n1\t0\tdocs/<img src=x onerror=alert(7)>/a\x1b[31m.md\n")})
	f.mustSummarizeAndPublish(t)
	keys := map[string][]byte{}
	if err := f.objs.List(ctx, "", func(in objstore.Info) error {
		if in.Key == publish.StoreMarkerKey {
			return nil // the store's identity, JSON that serve never serves; not a wiki page
		}
		o, err := f.objs.Get(ctx, in.Key)
		keys[in.Key] = o.Body
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) < 8 {
		t.Fatalf("objects: %d", len(keys))
	}
	for key, body := range keys {
		s := string(body)
		for _, bad := range []string{"\x1b", "\x07", "/src/repo", "file://"} {
			if strings.Contains(s, bad) {
				i := strings.Index(s, bad)
				t.Errorf("%s contains %q: %q", key, bad, s[max(0, i-80):min(len(s), i+40)])
			}
		}
		if strings.HasSuffix(key, ".atom") {
			d := mustValidAtom(t, key, body)
			for _, e := range d.Entries {
				if !strings.HasPrefix(e.Link.Href, "../") && !strings.HasPrefix(e.Link.Href, "changes/") {
					t.Errorf("%s: entry link %q", key, e.Link.Href)
				}
			}
			continue
		}
		mustInertHTML(t, key, body)
	}
	page := keys["changes/"+mustPageOf(t, f, "1")+".html"]
	if !contains(page, "<p>Body</p>") || !contains(page, "&lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt;") {
		t.Errorf("feed page lost its safe content or its title:\n%s", page)
	}
	// A file path wraps after its slashes and shows as text.
	commit := keys["changes/"+mustPageOf(t, f, "c1")+".html"]
	if !contains(commit, "<code>docs/<wbr>&lt;img src=x onerror=alert(7)&gt;/<wbr>a") {
		t.Errorf("commit page's file path:\n%s", commit)
	}
}

// mustInertHTML parses a wiki object and fails on anything live that did
// not come from tidemark: scripts, frames, images, event handlers, links
// with a scheme other than http(s) and mailto, more than one style.
func mustInertHTML(t *testing.T, key string, body []byte) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	styles := 0
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "iframe", "object", "embed", "img", "form", "base":
				t.Errorf("%s: live <%s>", key, n.Data)
			case "style":
				styles++
			case "footer", "main":
				// Upstream's unclosed elements stay inside the item.
				for a := n.Parent; a != nil; a = a.Parent {
					if a.Type == html.ElementNode && a.Data != "div" && a.Data != "body" && a.Data != "html" {
						t.Errorf("%s: <%s> is inside <%s>", key, n.Data, a.Data)
					}
				}
			}
			for _, a := range n.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				switch {
				case strings.HasPrefix(a.Key, "on"), a.Key == "style", a.Key == "src":
					t.Errorf("%s: <%s %s=%q>", key, n.Data, a.Key, a.Val)
				case a.Key == "href" && strings.Contains(v, ":") && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "mailto:"):
					t.Errorf("%s: <%s href=%q>", key, n.Data, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if styles != 1 {
		t.Errorf("%s: %d style elements", key, styles)
	}
}

// mustValidAtom parses an Atom 1.0 document and checks its required
// elements (RFC 4287 4.1.1, 4.1.2).
func mustValidAtom(t *testing.T, key string, body []byte) atomDoc {
	t.Helper()
	var d atomDoc
	if err := xml.Unmarshal(body, &d); err != nil {
		t.Fatalf("%s: %v\n%s", key, err, body)
	}
	if d.XMLName.Space != "http://www.w3.org/2005/Atom" || d.XMLName.Local != "feed" || d.ID == "" || d.Title == "" || d.Updated == "" || d.Author == "" {
		t.Fatalf("%s: feed lacks required elements: %+v", key, d)
	}
	if _, err := time.Parse(time.RFC3339, d.Updated); err != nil {
		t.Fatalf("%s: updated %q", key, d.Updated)
	}
	for _, e := range d.Entries {
		if !strings.HasPrefix(e.ID, "urn:tidemark:event:") || e.Title == "" || e.Link.Href == "" || e.Link.Rel != "alternate" {
			t.Fatalf("%s: entry lacks required elements: %+v", key, e)
		}
		if _, err := time.Parse(time.RFC3339, e.Updated); err != nil {
			t.Fatalf("%s: entry updated %q", key, e.Updated)
		}
	}
	return d
}

type atomDoc struct {
	XMLName xml.Name
	ID      string `xml:"id"`
	Title   string `xml:"title"`
	Updated string `xml:"updated"`
	Author  string `xml:"author>name"`
	Entries []struct {
		ID      string `xml:"id"`
		Title   string `xml:"title"`
		Updated string `xml:"updated"`
		Link    struct {
			Rel  string `xml:"rel,attr"`
			Href string `xml:"href,attr"`
		} `xml:"link"`
	} `xml:"entry"`
}

// TestEveryPageReachableFromIndex crawls the wiki from index.html and
// finds every change page, through the archive pages of the index and of
// the source; a new change rewrites only the newest archive page.
func TestEveryPageReachableFromIndex(t *testing.T) {
	ctx := context.Background()
	f := mustFixture(t, sqltest.Backends()[0], mem.New())
	const n = 2*publish.ListPageSize + 7
	items := make([]tidemark.Item, n)
	for i := range items {
		items[i] = tidemark.Item{Key: fmt.Sprintf("c%03d", i), Title: fmt.Sprintf("change %d", i),
			Evidence: []byte(fmt.Sprintf("commit c%03d\n\n    change %d\n", i, i))}
	}
	f.settle(t, f.src, items...)
	f.mustSummarizeAndPublish(t)
	reached := crawl(t, f, publish.IndexKey)
	pages := 0
	if err := f.objs.List(ctx, "changes/", func(in objstore.Info) error {
		pages++
		if !reached[in.Key] {
			t.Errorf("%s is reachable from no link", in.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if pages != n {
		t.Fatalf("%d pages, want %d", pages, n)
	}
	for _, k := range []string{publish.IndexArchiveKey(3), publish.CardArchiveKey(f.src.ID, 3)} {
		if !reached[k] {
			t.Errorf("archive %s not reached", k)
		}
	}
	// One more change: the front pages, the newest archive pages and the
	// feeds change; older archive pages do not, so a publishing pass costs
	// the same however long the history is.
	older := []string{publish.IndexArchiveKey(1), publish.IndexArchiveKey(2), publish.CardArchiveKey(f.src.ID, 1), publish.CardArchiveKey(f.src.ID, 2)}
	etags := func() map[string]string {
		m := map[string]string{}
		for _, k := range older {
			in, err := f.objs.Head(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			m[k] = in.ETag
		}
		return m
	}
	before := etags()
	f.settle(t, f.src, tidemark.Item{Key: "new", Title: "newest", Evidence: []byte("commit new\n\n    newest\n")})
	prep := f.mustSummarizeAndPublish(t)
	if prep.Published != 1 {
		t.Fatalf("publish: %+v", prep)
	}
	// The index, its feed and newest archive page; the card, its feed and
	// newest archive page.
	if prep.Listings.Written != 6 {
		t.Errorf("publishing one change wrote %d listing objects, want 6: %+v", prep.Listings.Written, prep.Listings)
	}
	if after := etags(); !maps.Equal(before, after) {
		t.Errorf("older archive pages were rewritten:\nbefore %v\nafter  %v", before, after)
	}
	// Nothing new: nothing is written.
	rep, err := f.svc.RefreshListings(ctx)
	if err != nil || rep.Written != 0 {
		t.Fatalf("refresh after publish: %+v %v", rep, err)
	}
	if !crawl(t, f, publish.IndexKey)["changes/"+mustPageOf(t, f, "new")+".html"] {
		t.Fatal("the newest change is not linked")
	}
	// The oldest change republished (a relink, a repair, a sweep): no
	// listing shows what that changes, so none is written.
	var oldest string
	if err := f.db.SQL().QueryRowContext(ctx, `SELECT p.summary_id FROM pages p JOIN events e ON e.id = p.event_id WHERE e.item_key = 'c000'`).Scan(&oldest); err != nil {
		t.Fatal(err)
	}
	f.env.Clock.Advance(time.Minute) // a later published_at
	if _, err := f.svc.Publish(ctx, oldest); err != nil {
		t.Fatal(err)
	}
	if rep, err := f.svc.RefreshListings(ctx); err != nil || rep.Written != 0 {
		t.Fatalf("refresh after republishing the oldest change: %+v %v", rep, err)
	}
	// A new source's first change: its card is new, and no archive page of
	// the index changes but the newest.
	other, err := f.db.Ingest().AddSource(ctx, ingest.NewSource{Name: "other", Kind: "git", Location: "/other", Interval: time.Hour, RetryBudget: 3})
	if err != nil {
		t.Fatal(err)
	}
	f.settle(t, other, tidemark.Item{Key: "o1", Title: "other's first", Evidence: []byte("commit o1\n\n    other's first\n")})
	f.mustSummarizeAndPublish(t)
	if after := etags(); !maps.Equal(before, after) {
		t.Errorf("a new source rewrote older archive pages:\nbefore %v\nafter  %v", before, after)
	}
}

func mustPageOf(t *testing.T, f *fixture, key string) string {
	t.Helper()
	var id string
	err := f.db.SQL().QueryRowContext(context.Background(), `SELECT p.id FROM pages p JOIN events e ON e.id = p.event_id WHERE e.item_key = $1`, key).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

var hrefRE = regexp.MustCompile(`href="([^"]+)"`)

// crawl follows every relative link from start and returns the keys it
// reached; a link to a missing object fails the test.
func crawl(t *testing.T, f *fixture, start string) map[string]bool {
	t.Helper()
	seen := map[string]bool{start: true}
	queue := []string{start}
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		o, err := f.objs.Get(context.Background(), key)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if !strings.HasSuffix(key, ".html") {
			continue
		}
		for _, m := range hrefRE.FindAllStringSubmatch(string(o.Body), -1) {
			u, err := url.Parse(m[1])
			if err != nil || u.IsAbs() || strings.HasPrefix(m[1], "../evidence/") {
				continue
			}
			target := path.Clean(path.Join(path.Dir(key), u.Path))
			if !seen[target] {
				seen[target] = true
				queue = append(queue, target)
			}
		}
	}
	return seen
}

// TestNewStoreListsOnlyWhatItHas: rebound to a new, empty object store,
// the listings link to no page the store does not hold; the sweep
// republishes the pages and the listings then list them all.
func TestNewStoreListsOnlyWhatItHas(t *testing.T) {
	ctx := context.Background()
	f := mustFixture(t, sqltest.Backends()[0], mem.New())
	f.settle(t, f.src, tidemark.Item{Key: "a", Title: "first", Evidence: []byte("commit a\n\n    first\n")},
		tidemark.Item{Key: "b", Title: "second", Evidence: []byte("commit b\n\n    second\n")})
	f.mustSummarizeAndPublish(t)
	fresh := mem.New()
	f.objs, f.svc.Objects = fresh, fresh
	if _, err := f.svc.Rebind(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.PublishPending(ctx, 100); err != nil {
		t.Fatal(err)
	}
	reached := crawl(t, f, publish.IndexKey) // fails on a link to a missing object
	for key := range reached {
		if strings.HasPrefix(key, "changes/") {
			t.Fatalf("index links to %s before the sweep", key)
		}
	}
	if _, err := f.objs.Get(ctx, publish.CardKey(f.src.ID)); err != nil {
		t.Fatalf("card: %v", err)
	}
	if rep, err := f.svc.Sweep(ctx); err != nil || rep.Republished != 2 {
		t.Fatalf("sweep: %+v %v", rep, err)
	}
	n := 0
	for key := range crawl(t, f, publish.IndexKey) {
		if strings.HasPrefix(key, "changes/") {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("after the sweep the index reaches %d pages, want 2", n)
	}
}

// TestNeighbourLinks: each change page links to the older and newer
// change of its source; a new change republishes the page before it so
// that page links forward, and a withdrawn page's neighbours link past it.
func TestNeighbourLinks(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		for _, k := range []string{"a", "b", "c"} {
			f.settle(t, f.src, tidemark.Item{Key: k, Title: "change " + k, Evidence: []byte("commit " + k + "\n\n    change " + k + "\n")})
		}
		if rep := f.mustSummarizeAndPublish(t); rep.Relinked != 0 {
			t.Fatalf("a batch in order needs no relinking: %+v", rep)
		}
		page := func(k string) string { return mustPageOf(t, f, k) }
		links := func(k string) (prev, next string) {
			t.Helper()
			o, err := f.objs.Get(ctx, publish.PageKey(page(k)))
			if err != nil {
				t.Fatal(err)
			}
			if m := regexp.MustCompile(`href="([^"]+)\.html" rel="prev"`).FindSubmatch(o.Body); m != nil {
				prev = string(m[1])
			}
			if m := regexp.MustCompile(`href="([^"]+)\.html" rel="next"`).FindSubmatch(o.Body); m != nil {
				next = string(m[1])
			}
			return prev, next
		}
		mustLinks := func(k, prev, next string) {
			t.Helper()
			p, n := links(k)
			if p != prev || n != next {
				t.Fatalf("%s links prev %q next %q, want %q %q", k, p, n, prev, next)
			}
		}
		mustLinks("a", "", page("b"))
		mustLinks("b", page("a"), page("c"))
		mustLinks("c", page("b"), "")
		f.settle(t, f.src, tidemark.Item{Key: "d", Title: "change d", Evidence: []byte("commit d\n\n    change d\n")})
		if rep := f.mustSummarizeAndPublish(t); rep.Relinked != 1 {
			t.Fatalf("publishing d: %+v", rep)
		}
		mustLinks("c", page("b"), page("d"))
		mustLinks("d", page("c"), "")
		// Withdraw b: a and c link past it after the sweep.
		sums, err := f.st.Summaries(ctx, publish.SummaryFilter{EventID: mustEventOf(t, f, "b")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.Reject(ctx, sums[0].ID, "wrong"); err != nil {
			t.Fatal(err)
		}
		if rep, err := f.svc.Sweep(ctx); err != nil || rep.Withdrawn != 1 || rep.Relinked != 2 {
			t.Fatalf("sweep: %+v %v", rep, err)
		}
		mustLinks("a", "", page("c"))
		mustLinks("c", page("a"), page("d"))
		if rep, err := f.svc.Sweep(ctx); err != nil || rep.Republished+rep.Relinked != 0 {
			t.Fatalf("second sweep: %+v %v", rep, err)
		}
		// An edited title: the pages that link to it are relinked.
		over := fakeOverrides{mustEventOf(t, f, "c"): {Title: "change c, corrected"}}
		f.svc.Overrides = over
		if _, err := f.svc.Publish(ctx, mustCurrent(t, f, "c")); err != nil {
			t.Fatal(err)
		}
		if rep, err := f.svc.Sweep(ctx); err != nil || rep.Relinked != 2 {
			t.Fatalf("sweep after a title edit: %+v %v", rep, err)
		}
		for _, k := range []string{"a", "d"} {
			if o, err := f.objs.Get(ctx, publish.PageKey(page(k))); err != nil || !contains(o.Body, "change c, corrected") {
				t.Fatalf("%s does not link with the edited title: %v", k, err)
			}
		}
	})
}

func mustCurrent(t *testing.T, f *fixture, key string) string {
	t.Helper()
	id, err := f.st.CurrentSummary(context.Background(), mustEventOf(t, f, key))
	if err != nil || id == "" {
		t.Fatalf("current summary of %s: %q %v", key, id, err)
	}
	return id
}

// fullListings counts the listings of every page of a group (not the
// feeds' newest few) that the store is asked for.
type fullListings struct {
	publish.Store
	n int
}

func (c *fullListings) Listing(ctx context.Context, q publish.ListingQuery) ([]publish.PageEntry, error) {
	if q.Limit == 0 {
		c.n++
	}
	return c.Store.Listing(ctx, q)
}

// TestARefreshReadsEveryPageOnce: a refresh that renders the index and a
// card reads the published pages once; the card's are the index's of its
// source, in the same order.
func TestARefreshReadsEveryPageOnce(t *testing.T) {
	f := mustFixture(t, sqltest.Backends()[0], mem.New())
	items := make([]tidemark.Item, publish.ListPageSize+5)
	for i := range items {
		items[i] = tidemark.Item{Key: fmt.Sprintf("c%03d", i), Title: fmt.Sprintf("change %d", i),
			Evidence: []byte(fmt.Sprintf("commit c%03d\n\n    change %d\n", i, i))}
	}
	f.settle(t, f.src, items[:5]...) // the source's first pass writes its card ahead of its pages
	f.mustSummarizeAndPublish(t)
	f.settle(t, f.src, items[5:]...)
	counter := &fullListings{Store: f.svc.Store}
	f.svc.Store = counter
	rep := f.mustSummarizeAndPublish(t)
	if rep.Listings.Written == 0 || counter.n != 1 {
		t.Fatalf("the pass wrote %d listing objects and read every page %d times; want some, and once", rep.Listings.Written, counter.n)
	}
	card, err := f.objs.Get(context.Background(), publish.CardKey(f.src.ID))
	if err != nil {
		t.Fatal(err)
	}
	index, err := f.objs.Get(context.Background(), publish.IndexKey)
	if err != nil {
		t.Fatal(err)
	}
	// One source: the card lists what the index lists, newest first.
	rows := regexp.MustCompile(`changes/[0-9A-Z]+\.html`)
	if c, i := rows.FindAllString(string(card.Body), -1), rows.FindAllString(string(index.Body), -1); !slices.Equal(c, i) || len(c) != publish.ListPageSize {
		t.Fatalf("card lists %v\nindex lists %v", c, i)
	}
}
