// Package feed fetches RSS, Atom and JSON Feed documents. Each entry is an
// item keyed by its GUID or ID, else its link, else a hash of its title and
// content; entries a document gives the same identity stay apart (see
// fetch.Keys). Its evidence is a canonical JSON record of the entry, so an
// edited entry re-freezes to new evidence (a new revision of the same
// event) while an untouched one hashes the same and is a no-op.
//
// A document is read as text in one place (toUTF8: the charset of the
// Content-Type or of the XML declaration, legacy ones included; the
// characters XML forbids removed) and scanned as a stream before the
// feed parser builds anything, so a document over max_items is refused
// with memory bounded by the body limit, not by the document.
//
// The cursor (fetch.ItemsCursor) holds the HTTP validators (ETag,
// Last-Modified) and the identities the feed ever gave to differing
// entries, as a small JSON object: they advance only when the run
// settles, never on a failed run, and a 304 Not Modified settles empty
// with them unchanged.
package feed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch"
	"github.com/tidemark/tidemark/fetch/canon"
	"github.com/tidemark/tidemark/fetch/httpx"
)

// Config keys understood in a feed source's config.
const (
	// ConfigMaxBytes bounds the body size (default: the client's limit).
	ConfigMaxBytes = "max_bytes"
	// ConfigMaxItems bounds the entries of one document (default
	// fetch.DefaultMaxItems); a larger feed is invalid rather than
	// half-read, and is refused before its entries are built.
	ConfigMaxItems = "max_items"
	// ConfigIgnore and ConfigIgnoreQuery: see CheckConfig.
	ConfigIgnore      = "ignore"
	ConfigIgnoreQuery = "ignore_query"
)

// Fields names the fields of an entry's evidence record that ConfigIgnore
// may leave out (the identity may not be).
var Fields = []string{"title", "link", "published", "updated", "authors", "categories", "enclosures", "description", "content"}

// TrackingParams are the query parameters that ConfigIgnoreQuery's
// "tracking" names: they say who sent a reader, not what the entry is,
// and some feeds change them on every request. They are dropped only when
// a source asks: a link is part of an entry's identity and evidence, so
// dropping them by default would make every entry whose link carries one
// a new event (or a revision) on the first run after the upgrade that
// began to. Patterns are path.Match globs over the parameter's name.
var TrackingParams = []string{"utm_*", "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "twclid",
	"igshid", "mc_cid", "mc_eid", "_hsenc", "_hsmi", "mkt_tok", "_ga", "_gl", "oly_anon_id", "oly_enc_id", "vero_id", "rb_clickid"}

// CheckConfig refuses, naming the key and the value, an ignore that names
// no field of an entry's evidence (or names its identity) and an
// ignore_query that is no parameter name or glob.
func CheckConfig(cfg map[string]string) error {
	_, err := newOptions(cfg)
	return err
}

// Options say how Parse reads a source's entries.
type Options struct {
	// MaxItems bounds the entries (> 0).
	MaxItems int
	// Shared is what the source's cursor remembers of the identities its
	// feed gave to differing entries (fetch.Keys).
	Shared []string
	// Ignore lists fields of the evidence record to leave out (Fields).
	Ignore []string
	// IgnoreQuery lists query parameters (globs) removed from links;
	// "tracking" stands for TrackingParams.
	IgnoreQuery []string
}

func newOptions(cfg map[string]string) (Options, error) {
	var o Options
	for _, f := range canon.SplitList(cfg[ConfigIgnore]) {
		if !slices.Contains(Fields, f) {
			return o, tidemark.Invalidf("config "+ConfigIgnore, f, "not a field of a feed entry's evidence; one of %s (the identity, id, cannot be ignored)", strings.Join(Fields, ", "))
		}
		o.Ignore = append(o.Ignore, f)
	}
	for _, q := range canon.SplitList(cfg[ConfigIgnoreQuery]) {
		_, err := path.Match(q, "")
		if err != nil || strings.ContainsAny(q, " \t&=#/?%") {
			return o, tidemark.Invalidf("config "+ConfigIgnoreQuery, q, "not a query parameter name or glob (sid, ref_*)")
		}
		o.IgnoreQuery = append(o.IgnoreQuery, q)
	}
	return o, nil
}

// Accept is the Accept header of feed requests.
const Accept = "application/rss+xml, application/atom+xml, application/feed+json, application/json;q=0.9, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"

// Fetcher reads feeds through an httpx.Client.
type Fetcher struct {
	Client *httpx.Client
}

// Fetch implements tidemark.Fetcher.
func (f *Fetcher) Fetch(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
	ctx = httpx.WithAllowPrivate(ctx, src.AllowPrivate) // the source's own setting, never the process's
	maxBytes, err := fetch.IntConfig(src.Config, ConfigMaxBytes, 0)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	maxItems, err := fetch.IntConfig(src.Config, ConfigMaxItems, fetch.DefaultMaxItems)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	opt, err := newOptions(src.Config)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	cur := fetch.DecodeItemsCursor(cursor)
	resp, err := f.Client.Get(ctx, httpx.Request{
		URL: src.Location, Accept: Accept, Validators: cur.Validators, MaxBodyBytes: maxBytes,
	})
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	if resp.NotModified {
		return tidemark.FetchResult{Cursor: cursor, NotBefore: resp.MaxAge}, nil
	}
	body := resp.Body
	resp.Body = nil // Parse is the body's last user: it may be collected as soon as it is parsed
	opt.MaxItems, opt.Shared = int(maxItems), cur.Shared
	items, shared, err := ParseWith(body, resp.Header.Get("Content-Type"), resp.URL, opt)
	if err != nil {
		if ct := resp.ContentType(); ct == "text/html" || ct == "application/xhtml+xml" {
			return tidemark.FetchResult{}, tidemark.Unusable("served "+ct+", not a feed", err)
		}
		return tidemark.FetchResult{}, tidemark.Unusable("unusable feed", err)
	}
	// An entry dated in the future did not occur after it was read: it
	// would sit on top of every listing. Its evidence keeps the date.
	now := f.Client.Now()
	for i := range items {
		if items[i].OccurredAt.After(now) {
			items[i].OccurredAt = now
		}
	}
	next := fetch.ItemsCursor{Validators: resp.Validators, Shared: shared}
	return tidemark.FetchResult{Items: items, Cursor: next.Encode(), NotBefore: resp.MaxAge}, nil
}

// ResolveCursor checks a skip target: the kind's cursor, a JSON object of
// HTTP validators and shared identities (fetch.CheckItemsCursor). It is
// stored as given.
func (f *Fetcher) ResolveCursor(_ context.Context, _ tidemark.Source, to string) (string, error) {
	if err := fetch.CheckItemsCursor("to", "feed", to); err != nil {
		return "", err
	}
	return to, nil
}

// CheckCursor checks a cursor to fetch from (source test --cursor), as
// ResolveCursor does. Fetch itself reads an unreadable cursor as none,
// which is safe for a run but would hide a mistyped --cursor.
func (f *Fetcher) CheckCursor(cursor string) error {
	return fetch.CheckItemsCursor("cursor", "feed", cursor)
}

// ErrNotAFeed: the document is none of RSS, Atom or JSON Feed.
var ErrNotAFeed = errors.New("feed: not an RSS, Atom or JSON feed")

// Parse parses a feed document into items with canonical evidence.
// contentType is the Content-Type header it was served with ("" when
// unknown), whose charset is honoured; base resolves relative links. A
// document that does not parse, or has more than maxItems entries
// (maxItems > 0), is an error, found by a streaming scan before any entry
// is built. Entries identical in every recorded field are one item;
// entries that only share an identity stay apart (see fetch.Keys).
func Parse(body []byte, contentType, base string, maxItems int) ([]tidemark.Item, error) {
	items, _, err := ParseWith(body, contentType, base, Options{MaxItems: maxItems})
	return items, err
}

// ParseWith is Parse with a source's options: the identities its cursor
// remembers as shared (fetch.Keys), which stay keyed apart, and what it
// ignores. It returns what to remember next.
func ParseWith(body []byte, contentType, base string, opt Options) ([]tidemark.Item, []string, error) {
	cands, err := parse(body, contentType, base, opt)
	if err != nil {
		return nil, nil, err
	}
	items, shared := fetch.Keys(cands, opt.Shared)
	return items, shared, nil
}

func parse(body []byte, contentType, base string, opt Options) ([]fetch.Candidate, error) {
	maxItems := opt.MaxItems
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("feed: empty document")
	}
	body, err := toUTF8(body, contentType)
	if err != nil {
		return nil, err
	}
	switch start := bytes.TrimLeft(body, " \t\r\n\uFEFF"); {
	case len(start) > 0 && start[0] == '<':
		body = stripForbiddenRefs(body)
		root, _, err := scanXML(body, maxItems)
		switch strings.ToLower(root) {
		case "rss", "rdf", "feed":
		default:
			return nil, ErrNotAFeed
		}
		if err != nil {
			return nil, err
		}
	case len(start) > 0 && start[0] == '{':
		// A leading UTF-8 byte-order mark may be ignored (RFC 8259); the
		// JSON decoders would refuse it.
		body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
		mt, _, _ := strings.Cut(contentType, ";")
		servedAsFeed := strings.EqualFold(strings.TrimSpace(mt), "application/feed+json")
		if _, err := scanJSON(body, servedAsFeed, maxItems); err != nil {
			return nil, err
		}
	default:
		return nil, ErrNotAFeed
	}
	fd, err := gofeed.NewParser().Parse(bytes.NewReader(body))
	if errors.Is(err, gofeed.ErrFeedTypeNotDetected) {
		return nil, ErrNotAFeed
	}
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	if maxItems > 0 && len(fd.Items) > maxItems {
		// The scan counted fewer entries than the parser found.
		return nil, tooMany(len(fd.Items), maxItems)
	}
	baseURL, _ := url.Parse(base)
	if fd.Link != "" && baseURL != nil {
		if u, err := baseURL.Parse(fd.Link); err == nil {
			baseURL = u
		}
	}
	entries := make([]fetch.Candidate, 0, len(fd.Items))
	for i, e := range fd.Items {
		if e == nil {
			continue
		}
		fd.Items[i] = nil // the parser's copy may go once its entry is built
		en, err := newEntry(e, baseURL, opt)
		if err != nil {
			return nil, err
		}
		entries = append(entries, en)
	}
	return entries, nil
}

// record is an entry's frozen evidence; its field order is the canonical
// order.
type record struct {
	ID          string      `json:"id"`
	Title       string      `json:"title"`
	Link        string      `json:"link,omitempty"`
	Published   string      `json:"published,omitempty"`
	Updated     string      `json:"updated,omitempty"`
	Authors     []string    `json:"authors,omitempty"`
	Categories  []string    `json:"categories,omitempty"`
	Enclosures  []enclosure `json:"enclosures,omitempty"`
	Description string      `json:"description,omitempty"`
	Content     string      `json:"content,omitempty"`
}

type enclosure struct {
	URL    string `json:"url"`
	Type   string `json:"type,omitempty"`
	Length string `json:"length,omitempty"`
}

func newEntry(e *gofeed.Item, base *url.URL, opt Options) (fetch.Candidate, error) {
	var drop []string
	for _, q := range opt.IgnoreQuery {
		if q == "tracking" {
			drop = append(drop, TrackingParams...)
		} else {
			drop = append(drop, q)
		}
	}
	r := record{
		Title:       canon.Line(e.Title),
		Link:        dropQuery(resolve(base, strings.TrimSpace(e.Link)), drop),
		Description: canon.Text(e.Description),
		Content:     canon.Text(e.Content),
	}
	if e.PublishedParsed != nil {
		r.Published = e.PublishedParsed.UTC().Format(time.RFC3339)
	} else {
		r.Published = canon.Line(e.Published)
	}
	if e.UpdatedParsed != nil {
		r.Updated = e.UpdatedParsed.UTC().Format(time.RFC3339)
	} else {
		r.Updated = canon.Line(e.Updated)
	}
	for _, p := range e.Authors {
		if p == nil {
			continue
		}
		a := canon.Line(p.Name)
		if p.Email != "" {
			a = strings.TrimSpace(a + " <" + canon.Line(p.Email) + ">")
		}
		if a != "" {
			r.Authors = append(r.Authors, a)
		}
	}
	for _, c := range e.Categories {
		if c = canon.Line(c); c != "" {
			r.Categories = append(r.Categories, c)
		}
	}
	sort.Strings(r.Categories) // reordering tags is not a change
	for _, en := range e.Enclosures {
		if en != nil && en.URL != "" {
			r.Enclosures = append(r.Enclosures, enclosure{URL: dropQuery(resolve(base, en.URL), drop), Type: canon.Line(en.Type), Length: canon.Line(en.Length)})
		}
	}
	switch {
	case strings.TrimSpace(e.GUID) != "":
		r.ID = canon.Line(e.GUID)
	case r.Link != "":
		r.ID = r.Link
	default:
		r.ID = "sha256:" + tidemark.HashEvidence([]byte(r.Title+"\n"+r.Description+"\n"+r.Content))
	}
	title := plainText(r.Title)
	if title == "" {
		title = firstLine(htmlText(r.Description), htmlText(r.Content), r.Link, r.ID)
	}
	link := r.Link
	// Atom's parser copies an entry's update date into a published date
	// it lacks: ignoring the one ignores its copy.
	copied := strings.TrimSpace(e.Published) == strings.TrimSpace(e.Updated)
	for _, f := range opt.Ignore {
		switch f {
		case "title":
			r.Title = ""
		case "link":
			r.Link = ""
		case "published":
			r.Published = ""
		case "updated":
			r.Updated = ""
			if copied {
				r.Published = ""
			}
		case "authors":
			r.Authors = nil
		case "categories":
			r.Categories = nil
		case "enclosures":
			r.Enclosures = nil
		case "description":
			r.Description = ""
		case "content":
			r.Content = ""
		}
	}
	ev, err := canon.Value(r)
	if err != nil {
		return fetch.Candidate{}, err
	}
	var at time.Time
	switch {
	case e.UpdatedParsed != nil:
		at = e.UpdatedParsed.UTC()
	case e.PublishedParsed != nil:
		at = e.PublishedParsed.UTC()
	}
	return fetch.Candidate{
		Item:   tidemark.Item{Title: title, URL: link, OccurredAt: at, Evidence: ev},
		ID:     r.ID,
		Stable: tidemark.HashEvidence([]byte(r.Link + "\n" + r.Title + "\n" + r.Published))[:16],
	}, nil
}

// dropQuery removes from link's query the parameters whose name matches
// one of patterns, keeping the others as written and in order.
func dropQuery(link string, patterns []string) string {
	head, query, ok := strings.Cut(link, "?")
	if !ok || len(patterns) == 0 {
		return link
	}
	query, frag, hasFrag := strings.Cut(query, "#")
	var kept []string
	for _, kv := range strings.Split(query, "&") {
		name, _, _ := strings.Cut(kv, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if kv == "" || !slices.ContainsFunc(patterns, func(p string) bool { ok, _ := path.Match(p, name); return ok }) {
			kept = append(kept, kv)
		}
	}
	out := head
	if q := strings.Join(kept, "&"); q != "" {
		out += "?" + q
	}
	if hasFrag {
		out += "#" + frag
	}
	return out
}

func resolve(base *url.URL, ref string) string {
	if ref == "" || base == nil {
		return ref
	}
	u, err := base.Parse(ref)
	if err != nil {
		return ref
	}
	return u.String()
}

func firstLine(ss ...string) string {
	for _, s := range ss {
		s = canon.Line(s)
		if s == "" {
			continue
		}
		if r := []rune(s); len(r) > 80 {
			return string(r[:80]) + "…"
		}
		return s
	}
	return "(untitled)"
}
