package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/redact"
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

// listingObject is one listing object to write: a key, its renderer and,
// when it can say so without rendering, the digest of everything its
// content depends on (compared with the recorded one, so a refresh does
// not even render an object that has not changed).
type listingObject struct {
	key    string
	render func(gen int64) ([]byte, error)
	digest func() (string, error)
}

// contentHash is what a listing object's content is recorded by: its
// digest, or else the hash of its body rendered without a generation.
func (o listingObject) contentHash() (string, error) {
	if o.digest != nil {
		return o.digest()
	}
	plain, err := o.render(0)
	if err != nil {
		return "", err
	}
	return tidemark.HashEvidence(plain), nil
}

// templated is a listing object rendered by the wiki template t from
// data(gen). Its digest covers t's source and data without a generation,
// which is everything the body depends on but the generation.
func templated(key string, t *template.Template, data func(gen int64) map[string]any) listingObject {
	return listingObject{key: key,
		render: func(gen int64) ([]byte, error) {
			var b bytes.Buffer
			err := t.Execute(&b, data(gen))
			return b.Bytes(), err
		},
		digest: func() (string, error) {
			j, err := json.Marshal(data(0))
			if err != nil {
				return "", fmt.Errorf("digest of %s: %w", key, err)
			}
			return tidemark.HashEvidence(append([]byte(templateDigests[t.Name()]+"\n"), j...)), nil
		}}
}

func contentTypeOf(key string) string {
	if strings.HasSuffix(key, ".atom") {
		return "application/atom+xml; charset=utf-8"
	}
	return contentType
}

type pageLink struct {
	Label   string
	Href    string
	Current bool
}

// MaxListTitle is the most characters of a title a list shows: the
// index, a source's card, their archive pages, the feeds and a change
// page's links to its neighbours. The change page shows the title whole.
const MaxListTitle = 140

// ListTitle is title as a list shows it: whole when it has at most
// MaxListTitle characters, else cut at the last space before the limit
// (inside the text when there is none in its second half: a long unbroken
// title) and marked with an ellipsis. It counts characters, not bytes, and
// never cuts one in two.
func ListTitle(title string) string {
	if utf8.RuneCountInString(title) <= MaxListTitle {
		return title
	}
	r := []rune(title)[:MaxListTitle-1] // room for the ellipsis
	cut := len(r)
	if !unicode.IsSpace([]rune(title)[cut]) {
		for i := len(r) - 1; i >= len(r)/2; i-- {
			if unicode.IsSpace(r[i]) {
				cut = i
				break
			}
		}
	}
	return strings.TrimRightFunc(string(r[:cut]), func(c rune) bool {
		return unicode.IsSpace(c) || strings.ContainsRune(",;:.-–—", c)
	}) + "…"
}

// listingRow is what a listing shows of a change, and all its digest
// covers of it: a page republished with the same title and headline (a
// relink, a repair) changes no listing. Title is the title as a list
// shows it (ListTitle); FullTitle is the whole title when that is longer.
type listingRow struct {
	PageID, SourceID, Title, FullTitle, Headline string
	OccurredAt                                   time.Time
}

func listingRows(entries []PageEntry) []listingRow {
	rows := make([]listingRow, len(entries))
	for i, e := range entries {
		rows[i] = listingRow{PageID: e.PageID, SourceID: e.SourceID, Headline: e.Headline, OccurredAt: e.OccurredAt}
		rows[i].Title, rows[i].FullTitle = shownTitle(e.Title)
	}
	return rows
}

// shownTitle is title as a list shows it and, when that is shortened, the
// whole title (for the link's title attribute).
func shownTitle(title string) (shown, full string) {
	if shown = ListTitle(title); shown != title {
		full = title
	}
	return shown, full
}

// listingView is what the listing template shows of one page.
type listingView struct {
	Entries []listingRow
	Page    int // 1: the front page; archive n is page n+1 in titles
	Root    string
	Newer   string
	Older   string
	// Links are the front page's links to every archive page. An archive
	// page links only to its neighbours, the front page and the oldest
	// archive page, so a full archive page never changes again when newer
	// changes arrive: a publishing pass rewrites the front page and the
	// newest archive page, however long the history.
	Links          []pageLink
	Newest, Oldest string
}

// paginate splits entries (newest first) into the front page and the
// archive pages. hrefs maps (archive number, 0 for front) to a link
// relative to the root.
func paginate(entries []PageEntry, href func(n int) string) (front listingView, archives []listingView) {
	n := len(entries)
	front = listingView{Entries: listingRows(entries[:min(n, ListPageSize)]), Page: 1}
	if n <= ListPageSize {
		return front, nil
	}
	chunks := (n + ListPageSize - 1) / ListPageSize
	for c := 1; c <= chunks; c++ {
		lo, hi := (c-1)*ListPageSize, min(c*ListPageSize, n) // ascending positions [lo, hi)
		v := listingView{Entries: listingRows(entries[n-hi : n-lo]), Page: c + 1, Newer: href(0), Newest: href(0), Oldest: href(1)}
		if c < chunks {
			v.Newer = href(c + 1)
		}
		if c > 1 {
			v.Older = href(c - 1)
		}
		archives = append(archives, v)
	}
	front.Links = append(front.Links, pageLink{Label: "Newest", Href: href(0), Current: true})
	for c := chunks; c >= 1; c-- {
		front.Links = append(front.Links, pageLink{Label: strconv.Itoa(c), Href: href(c)})
	}
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
//
// every, if set, is the refresh's one read of every published page: a
// card's pages are taken from it rather than read again.
func (s *Service) listed(ctx context.Context, q ListingQuery, absent map[string]bool, every *everyPage) (all, feed []PageEntry, err error) {
	keep := func(entries []PageEntry) []PageEntry {
		out := entries[:0]
		for _, e := range entries {
			if !absent[e.PageID] {
				out = append(out, e)
			}
		}
		return out
	}
	if every != nil {
		pages, err := every.get(ctx, s.Store, q.SourceID)
		if err != nil {
			return nil, nil, err
		}
		all = slices.Clone(pages) // every's is shared; keep filters in place
	} else if all, err = s.Store.Listing(ctx, q); err != nil {
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

// everyPage is every published page in listing order (newest first),
// read once for a refresh that renders the index and cards: the order of a
// card's pages is the index's, so a card's pages are the index's of its
// source.
type everyPage struct {
	read     bool
	pages    []PageEntry
	bySource map[string][]PageEntry
}

// get is every published page, or sourceID's ("": every source's).
func (e *everyPage) get(ctx context.Context, st Store, sourceID string) ([]PageEntry, error) {
	if !e.read {
		pages, err := st.Listing(ctx, ListingQuery{})
		if err != nil {
			return nil, err
		}
		e.pages, e.read = pages, true
		e.bySource = map[string][]PageEntry{}
		for _, p := range pages {
			e.bySource[p.SourceID] = append(e.bySource[p.SourceID], p)
		}
	}
	if sourceID == "" {
		return e.pages, nil
	}
	return e.bySource[sourceID], nil
}

// renderCard renders a source's card, its archive pages and its feed,
// listing no page in absent; every, if set, is the refresh's read of every
// published page.
func (s *Service) renderCard(ctx context.Context, src SourceInfo, absent map[string]bool, every *everyPage) ([]listingObject, error) {
	entries, feed, err := s.listed(ctx, ListingQuery{SourceID: src.ID}, absent, every)
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
	loc := readable.SafeLink(redact.Location(src.Location))
	card := func(key string, v listingView, root string) listingObject {
		v.Root = root
		total := len(entries)
		if v.Page > 1 {
			total = 0 // an archive page does not show the count, so it never changes with it
		}
		return templated(key, cardTmpl, func(gen int64) map[string]any {
			return map[string]any{"Source": src, "Location": loc, "Total": total,
				"Generation": gen, "Entries": v.Entries, "Page": v.Page, "Root": v.Root,
				"Newer": v.Newer, "Older": v.Older, "Links": v.Links,
				"Newest": v.Newest, "Oldest": v.Oldest}
		})
	}
	// The card lives in sources/, its links are relative to that folder.
	for i := range front.Links {
		front.Links[i].Href = strings.TrimPrefix(front.Links[i].Href, "sources/")
	}
	front.Older = strings.TrimPrefix(front.Older, "sources/")
	objs := []listingObject{card(CardKey(src.ID), front, "../")}
	for i, v := range archives {
		objs = append(objs, card(CardArchiveKey(src.ID, i+1), v, "../../"))
	}
	objs = append(objs, listingObject{key: CardFeedKey(src.ID), render: s.atom(src.Name+" · tidemark", "urn:tidemark:source:"+src.ID,
		CardFeedKey(src.ID), feed)})
	return objs, nil
}

// renderIndex renders the index, its archive pages and the feed of all
// changes, listing no page in absent.
func (s *Service) renderIndex(ctx context.Context, sources []SourceEntry, absent map[string]bool, every *everyPage) ([]listingObject, error) {
	entries, feed, err := s.listed(ctx, ListingQuery{}, absent, every)
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
	index := func(key string, v listingView, root string) listingObject {
		// Only the front page lists the sources, with what it shows of
		// them (not their stamps).
		type sourceRow struct {
			ID, Name, Kind string
			Pages          int
		}
		var shown []sourceRow
		for _, src := range sources {
			if v.Page == 1 {
				shown = append(shown, sourceRow{src.ID, src.Name, src.Kind, src.Pages})
			}
		}
		// The names of the sources this page shows, so that a new source
		// changes no archive page.
		shownNames := make(map[string]string, 1)
		for _, e := range v.Entries {
			shownNames[e.SourceID] = names[e.SourceID]
		}
		return templated(key, indexTmpl, func(gen int64) map[string]any {
			return map[string]any{"Sources": shown, "Generation": gen,
				"Entries": v.Entries, "Page": v.Page, "Root": root,
				"Newer": v.Newer, "Older": v.Older, "Links": v.Links, "Newest": v.Newest, "Oldest": v.Oldest, "SourceNames": shownNames}
		})
	}
	objs := []listingObject{index(IndexKey, front, "")}
	for i, v := range archives {
		objs = append(objs, index(IndexArchiveKey(i+1), v, "../"))
	}
	objs = append(objs, listingObject{key: FeedKey, render: s.atom("tidemark: all changes", "urn:tidemark:feed:all", FeedKey, feed)})
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
			f.Entries = append(f.Entries, atomEntry{ID: EntryID(e.EventID), Title: atomText{Type: "text", Text: ListTitle(e.Title)},
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
