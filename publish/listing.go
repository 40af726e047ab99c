package publish

import (
	"bytes"
	"context"
	"encoding/xml"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/summarize/readable"
)

// Listings: the index and each source's card show the newest ListPageSize
// changes; older changes are in archive pages of ListPageSize changes each,
// numbered from the oldest (so publishing a new change rewrites only the
// newest archive page), and every archive page is linked from the front
// page, so every change is reachable from the index. Atom feeds list the
// newest FeedEntries changes.
const (
	ListPageSize = 50
	FeedEntries  = 50
)

// FeedKey is the Atom feed of all changes.
const FeedKey = "feed.atom"

// CardFeedKey is the Atom feed of a source's changes, beside its card.
func CardFeedKey(sourceID string) string { return "sources/" + sourceID + ".atom" }

// CardArchiveKey is a source's archive page n (1 is the oldest).
func CardArchiveKey(sourceID string, n int) string {
	return "sources/" + sourceID + "/" + strconv.Itoa(n) + ".html"
}

// IndexArchiveKey is the index's archive page n (1 is the oldest).
func IndexArchiveKey(n int) string { return "archive/" + strconv.Itoa(n) + ".html" }

// listingObject is one listing object to write: a key and its renderer.
type listingObject struct {
	key    string
	render func(gen int64) ([]byte, error)
}

func contentTypeOf(key string) string {
	if strings.HasSuffix(key, ".atom") {
		return "application/atom+xml; charset=utf-8"
	}
	return contentType
}

type pageLink struct {
	N       int
	Label   string
	Href    string
	Current bool
}

// listingView is what the listing template shows of one page.
type listingView struct {
	Entries     []PageEntry
	Page        int // 1: the front page; archive n is page n+1 in titles
	Pages       int
	Root        string
	Newer       string
	Older       string
	Links       []pageLink
	SourceNames map[string]string
}

// paginate splits entries (newest first) into the front page and the
// archive pages. hrefs maps (archive number, 0 for front) to a link
// relative to the root.
func paginate(entries []PageEntry, href func(n int) string) (front listingView, archives []listingView) {
	n := len(entries)
	front = listingView{Entries: entries[:min(n, ListPageSize)], Page: 1, Pages: 1}
	if n <= ListPageSize {
		return front, nil
	}
	chunks := (n + ListPageSize - 1) / ListPageSize
	// asc(i) is the i-th oldest entry.
	links := func(current int) []pageLink {
		out := []pageLink{{N: 0, Label: "Newest", Href: href(0), Current: current == 0}}
		for c := chunks; c >= 1; c-- {
			out = append(out, pageLink{N: c, Label: strconv.Itoa(c), Href: href(c), Current: current == c})
		}
		return out
	}
	for c := 1; c <= chunks; c++ {
		lo, hi := (c-1)*ListPageSize, min(c*ListPageSize, n) // ascending positions [lo, hi)
		v := listingView{Entries: entries[n-hi : n-lo], Page: c + 1, Pages: chunks + 1, Links: links(c)}
		if c < chunks {
			v.Newer = href(c + 1)
		} else {
			v.Newer = href(0)
		}
		if c > 1 {
			v.Older = href(c - 1)
		}
		archives = append(archives, v)
	}
	front.Pages, front.Links = chunks+1, links(0)
	// The change just older than the front page's oldest.
	front.Older = href((n-ListPageSize-1)/ListPageSize + 1)
	return front, archives
}

// withTitles makes every title of a listing safe text.
func (s *Service) withTitles(_ context.Context, entries []PageEntry) ([]PageEntry, error) {
	out := make([]PageEntry, len(entries))
	for i, e := range entries {
		e.Title = readable.Clean(e.Title)
		if e.Title == "" {
			e.Title = "(untitled)"
		}
		out[i] = e
	}
	return out, nil
}

// listed is the published pages of q whose objects are in the store (a
// page marked published in SQL may be missing from a new or emptied store
// until the sweep republishes it; no listing links to it until then), and
// the newest FeedEntries of them with their summaries.
func (s *Service) listed(ctx context.Context, q ListingQuery, absent map[string]bool) (all, feed []PageEntry, err error) {
	keep := func(entries []PageEntry) []PageEntry {
		out := entries[:0]
		for _, e := range entries {
			if !absent[e.PageID] {
				out = append(out, e)
			}
		}
		return out
	}
	if all, err = s.Store.Listing(ctx, q); err != nil {
		return nil, nil, err
	}
	q.Limit, q.Summaries = FeedEntries+len(absent), true
	if feed, err = s.Store.Listing(ctx, q); err != nil {
		return nil, nil, err
	}
	all, feed = keep(all), keep(feed)
	if all, err = s.withTitles(ctx, all); err != nil {
		return nil, nil, err
	}
	if feed, err = s.withTitles(ctx, feed); err != nil {
		return nil, nil, err
	}
	return all, feed[:min(len(feed), FeedEntries)], nil
}

// renderCard renders a source's card, its archive pages and its feed,
// listing no page in absent.
func (s *Service) renderCard(ctx context.Context, src SourceInfo, absent map[string]bool) ([]listingObject, error) {
	entries, feed, err := s.listed(ctx, ListingQuery{SourceID: src.ID}, absent)
	if err != nil {
		return nil, err
	}
	href := func(root string) func(int) string {
		return func(n int) string {
			if n == 0 {
				return root + "sources/" + src.ID + ".html"
			}
			return root + "sources/" + src.ID + "/" + strconv.Itoa(n) + ".html"
		}
	}
	front, _ := paginate(entries, href(""))
	_, archives := paginate(entries, href("../../"))
	loc := readable.SafeLink(src.Location)
	card := func(v listingView, root string) func(int64) ([]byte, error) {
		v.Root = root
		return func(gen int64) ([]byte, error) {
			var b bytes.Buffer
			err := cardTmpl.Execute(&b, map[string]any{"Source": src, "Location": loc, "Total": len(entries),
				"Generation": gen, "Entries": v.Entries, "Page": v.Page, "Pages": v.Pages, "Root": v.Root,
				"Newer": v.Newer, "Older": v.Older, "Links": v.Links, "SourceNames": v.SourceNames})
			return b.Bytes(), err
		}
	}
	// The card lives in sources/, its links are relative to that folder.
	front.Root = "../"
	for i := range front.Links {
		front.Links[i].Href = strings.TrimPrefix(front.Links[i].Href, "sources/")
	}
	front.Older = strings.TrimPrefix(front.Older, "sources/")
	objs := []listingObject{{CardKey(src.ID), card(front, "../")}}
	for i, v := range archives {
		objs = append(objs, listingObject{CardArchiveKey(src.ID, i+1), card(v, "../../")})
	}
	objs = append(objs, listingObject{CardFeedKey(src.ID), s.atom(src.Name+" · tidemark", "urn:tidemark:source:"+src.ID,
		CardFeedKey(src.ID), feed)})
	return objs, nil
}

// renderIndex renders the index, its archive pages and the feed of all
// changes, listing no page in absent.
func (s *Service) renderIndex(ctx context.Context, sources []SourceEntry, absent map[string]bool) ([]listingObject, error) {
	entries, feed, err := s.listed(ctx, ListingQuery{}, absent)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, src := range sources {
		names[src.ID] = src.Name
	}
	href := func(root string) func(int) string {
		return func(n int) string {
			if n == 0 {
				return root + IndexKey
			}
			return root + IndexArchiveKey(n)
		}
	}
	front, _ := paginate(entries, href(""))
	_, archives := paginate(entries, href("../"))
	index := func(v listingView, root string) func(int64) ([]byte, error) {
		return func(gen int64) ([]byte, error) {
			var b bytes.Buffer
			err := indexTmpl.Execute(&b, map[string]any{"Sources": sources, "Generation": gen,
				"Entries": v.Entries, "Page": v.Page, "Pages": v.Pages, "Root": root,
				"Newer": v.Newer, "Older": v.Older, "Links": v.Links, "SourceNames": names})
			return b.Bytes(), err
		}
	}
	objs := []listingObject{{IndexKey, index(front, "")}}
	for i, v := range archives {
		objs = append(objs, listingObject{IndexArchiveKey(i + 1), index(v, "../")})
	}
	objs = append(objs, listingObject{FeedKey, s.atom("tidemark: all changes", "urn:tidemark:feed:all", FeedKey, feed)})
	return objs, nil
}

// Atom 1.0 (RFC 4287), written with encoding/xml so every upstream string
// is escaped.
type atomFeed struct {
	XMLName xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	Base    string      `xml:"xml:base,attr,omitempty"`
	ID      string      `xml:"id"`
	Title   string      `xml:"title"`
	Updated string      `xml:"updated"`
	Author  atomPerson  `xml:"author"`
	Links   []atomLink  `xml:"link"`
	Gen     string      `xml:"generator"`
	Entries []atomEntry `xml:"entry"`
}

type atomPerson struct {
	Name string `xml:"name"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

type atomText struct {
	Type string `xml:"type,attr"`
	Text string `xml:",chardata"`
}

type atomEntry struct {
	ID      string   `xml:"id"`
	Title   atomText `xml:"title"`
	Updated string   `xml:"updated"`
	Link    atomLink `xml:"link"`
	Summary atomText `xml:"summary"`
}

// EntryID is an event's stable Atom entry id.
func EntryID(eventID string) string { return "urn:tidemark:event:" + eventID }

// atom renders an Atom feed of entries (newest first). Links are relative
// to the feed's own URL unless the service knows its BaseURL.
func (s *Service) atom(title, id, key string, entries []PageEntry) func(int64) ([]byte, error) {
	return func(int64) ([]byte, error) {
		f := atomFeed{ID: id, Title: title, Author: atomPerson{Name: "tidemark"}, Gen: "tidemark"}
		root := strings.Repeat("../", strings.Count(key, "/"))
		if s.BaseURL != "" {
			root = strings.TrimRight(s.BaseURL, "/") + "/"
		}
		f.Links = []atomLink{{Rel: "self", Type: "application/atom+xml", Href: root + key},
			{Rel: "alternate", Type: "text/html", Href: root + IndexKey}}
		updated := time.Unix(0, 0).UTC()
		for _, e := range entries {
			at := e.OccurredAt
			if e.PublishedAt.After(at) {
				at = e.PublishedAt
			}
			if at.After(updated) {
				updated = at
			}
			f.Entries = append(f.Entries, atomEntry{ID: EntryID(e.EventID), Title: atomText{Type: "text", Text: e.Title},
				Updated: at.UTC().Format(time.RFC3339), Link: atomLink{Rel: "alternate", Type: "text/html", Href: root + PageKey(e.PageID)},
				Summary: atomText{Type: "text", Text: readable.Clean(e.Summary)}})
		}
		f.Updated = updated.Format(time.RFC3339)
		var b bytes.Buffer
		b.WriteString(xml.Header)
		enc := xml.NewEncoder(&b)
		enc.Indent("", " ")
		if err := enc.Encode(f); err != nil {
			return nil, err
		}
		b.WriteString("\n")
		return b.Bytes(), nil
	}
}
