package publish

import (
	"bytes"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/tidemark/tidemark"
)

// Search finds published pages by their titles, summaries and the readable
// text of their evidence. The index is written in the transaction that
// marks a page published, so it never lists a page that is not published,
// and a withdrawn page leaves it in the transaction that withdraws it.

// SearchQuery is a parsed query: words and quoted phrases a page must all
// contain, and words or phrases (prefixed with -) it must not.
type SearchQuery struct {
	// Raw is the query as the user wrote it.
	Raw      string
	Terms    []string
	Excluded []string
	Limit    int
	Offset   int
}

// MaxSearchQuery bounds a query's length.
const MaxSearchQuery = 500

// A page of search results holds DefaultSearchLimit hits unless the user
// asks for another number from 1 to MaxSearchLimit.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
)

// ParseSearch parses a user's query. An empty query, one over
// MaxSearchQuery bytes, one with nothing but exclusions, a limit outside 1
// to MaxSearchLimit or a negative offset is invalid (tidemark.ErrInvalid):
// it says what was wrong.
func ParseSearch(raw string, limit, offset int) (SearchQuery, error) {
	q := SearchQuery{Raw: strings.TrimSpace(raw), Limit: limit, Offset: offset}
	if q.Limit < 1 || q.Limit > MaxSearchLimit {
		return q, tidemark.Invalidf("limit", strconv.Itoa(q.Limit), "want a whole number from 1 to %d", MaxSearchLimit)
	}
	if q.Offset < 0 {
		return q, tidemark.Invalidf("offset", strconv.Itoa(q.Offset), "want a whole number, 0 or more")
	}
	switch {
	case q.Raw == "":
		return q, tidemark.Invalidf("search query", q.Raw, "is empty: give words to search for")
	case len(q.Raw) > MaxSearchQuery:
		return q, tidemark.Invalidf("search query", q.Raw, "is over %d bytes", MaxSearchQuery)
	}
	s := q.Raw
	for s != "" {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			break
		}
		neg := false
		if s[0] == '-' {
			neg, s = true, s[1:]
		}
		var term string
		if strings.HasPrefix(s, `"`) {
			end := strings.Index(s[1:], `"`)
			if end < 0 {
				return q, tidemark.Invalidf("search query", q.Raw, "has an unclosed quote")
			}
			term, s = s[1:1+end], s[2+end:]
		} else {
			end := strings.IndexFunc(s, unicode.IsSpace)
			if end < 0 {
				end = len(s)
			}
			term, s = s[:end], s[end:]
		}
		term = strings.Join(strings.Fields(strings.ReplaceAll(term, `"`, " ")), " ")
		if !strings.ContainsFunc(term, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			continue
		}
		if neg {
			q.Excluded = append(q.Excluded, term)
		} else {
			q.Terms = append(q.Terms, term)
		}
	}
	if len(q.Terms) == 0 {
		return q, tidemark.Invalidf("search query", q.Raw, "has no word to look for (only punctuation or exclusions)")
	}
	return q, nil
}

// SearchHit is a published page that matched.
type SearchHit struct {
	PageID     string    `json:"page_id"`
	EventID    string    `json:"event_id"`
	SourceID   string    `json:"source_id"`
	SourceName string    `json:"source_name"`
	Title      string    `json:"title"`
	OccurredAt time.Time `json:"occurred_at"`
	// Snippet is the matching text; Marks are its matched fragments.
	Snippet []SnippetPart `json:"snippet"`
	// URL is the page's path relative to the wiki's root.
	URL string `json:"url"`
}

// SnippetPart is a fragment of a snippet, Match when it matched the query.
type SnippetPart struct {
	Text  string `json:"text"`
	Match bool   `json:"match,omitempty"`
}

// SearchResult is one page of hits; More says a next page exists.
type SearchResult struct {
	Query  string      `json:"query"`
	Hits   []SearchHit `json:"hits"`
	Offset int         `json:"offset"`
	Limit  int         `json:"limit"`
	More   bool        `json:"more"`
}

// Snippet markers: private-use characters the stores put around matches;
// they are removed from the text before it is indexed.
const (
	MarkStart = '\uE000'
	MarkEnd   = '\uE001'
)

// SplitSnippet splits a marked snippet into parts.
func SplitSnippet(s string) []SnippetPart {
	var out []SnippetPart
	match := false
	for s != "" {
		i := strings.IndexAny(s, string([]rune{MarkStart, MarkEnd}))
		if i < 0 {
			out = append(out, SnippetPart{Text: s, Match: match})
			break
		}
		if i > 0 {
			out = append(out, SnippetPart{Text: s[:i], Match: match})
		}
		match = strings.HasPrefix(s[i:], string(MarkStart))
		s = s[i+len(string(MarkStart)):]
	}
	return out
}

// searchText strips the snippet markers from text to be indexed.
func searchText(s string) string {
	return strings.NewReplacer(string(MarkStart), "", string(MarkEnd), "").Replace(s)
}

// searchTmpl is the search page, in the wiki's look; it is served at
// /search, so links are relative to the wiki's root.
var searchTmpl = wikiTemplate("search", `{{if .Query}}{{.Query}} · {{end}}Search · tidemark`, ``, `<nav class="crumbs"><a href="index.html">All changes</a> › Search</nav>
<main>
<h1>Search</h1>
<form class="search" action="search" method="get"><input type="search" name="q" value="{{.Query}}" placeholder="words, &quot;a phrase&quot;, -excluded" aria-label="Search"> <button type="submit">Search</button></form>
{{if .Error}}<p class="error">{{.Error}}</p>
{{else if .Query}}{{with .Result}}{{if .Hits}}<p class="meta">Results {{add .Offset 1}}–{{add .Offset (len .Hits)}} for “{{.Query}}”</p>
<ol class="hits" start="{{add .Offset 1}}">
{{range .Hits}}<li>{{$shown := listTitle .Title}}<a href="{{.URL}}"{{if ne $shown .Title}} title="{{.Title}}"{{end}}>{{$shown}}</a> <span class="meta"><span>{{.SourceName}}</span><span><time datetime="{{iso .OccurredAt}}">{{date .OccurredAt}}</time></span></span>
<p class="snippet">{{range .Snippet}}{{if .Match}}<mark>{{.Text}}</mark>{{else}}{{.Text}}{{end}}{{end}}</p></li>
{{end}}</ol>
<nav class="pager">{{if gt .Offset 0}}<a href="{{$.Prev}}">← Previous</a>{{else}}<span></span>{{end}}{{if .More}}<a href="{{$.Next}}">Next →</a>{{end}}</nav>
{{else}}<p class="empty">Nothing published matches “{{.Query}}”.</p>
{{end}}{{end}}{{end}}</main>
`)

// RenderSearch renders the search page for a query: its result, or the
// reason the query is not one (errMsg).
func RenderSearch(query string, res SearchResult, errMsg, prev, next string) ([]byte, error) {
	var b bytes.Buffer
	err := searchTmpl.Execute(&b, map[string]any{"Query": query, "Result": res, "Error": errMsg,
		"Prev": prev, "Next": next, "Generation": int64(0)})
	return b.Bytes(), err
}
