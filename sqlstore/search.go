package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode"

	"github.com/tidemark/tidemark/publish"
)

// searchDialect is a dialect's full-text search: SQLite's FTS5, or
// PostgreSQL's tsvector with a GIN index (migration 0009).
type searchDialect struct {
	// index writes a published page's row in tx.
	index func(ctx context.Context, tx *sql.Tx, pageID, title, summary, text string) error
	// unindex removes a page's rows in tx.
	unindex func(ctx context.Context, tx *sql.Tx, pageID string) error
	// unindexSource are the statements that remove the rows of every
	// page of the source $1, run before its pages are deleted.
	unindexSource []string
	// query is the search statement: $1 the dialect's query text, $2
	// limit, $3 offset; it selects the page entry columns and a marked
	// snippet.
	query string
	// match turns a parsed query into the dialect's query text.
	match func(q publish.SearchQuery) string
}

const searchColumns = `p.id, p.event_id, p.source_id, so.name, ` + shownTitle + `, e.occurred_at`

// shownTitle is the title a page shows: the one recorded when it was
// published (an editor's override included), else the event's.
const shownTitle = `COALESCE(NULLIF(p.title, ''), e.title)`

var sqliteSearch = &searchDialect{
	index: func(ctx context.Context, tx *sql.Tx, pageID, title, summary, text string) error {
		var row int64
		err := tx.QueryRowContext(ctx, `INSERT INTO page_search_rows (page_id) VALUES ($1)
			ON CONFLICT (page_id) DO UPDATE SET page_id = excluded.page_id RETURNING row`, pageID).Scan(&row)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO page_search (rowid, title, summary, evidence) VALUES ($1, $2, $3, $4)`,
			row, title, summary, text)
		return err
	},
	// The page's row mapping goes with its FTS row, so nothing of the
	// page is left to hold a reference to it.
	unindex: func(ctx context.Context, tx *sql.Tx, pageID string) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM page_search WHERE rowid = (SELECT row FROM page_search_rows WHERE page_id = $1)`, pageID)
		if err == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM page_search_rows WHERE page_id = $1`, pageID)
		}
		return err
	},
	unindexSource: []string{
		`DELETE FROM page_search WHERE rowid IN (SELECT r.row FROM page_search_rows r JOIN pages p ON p.id = r.page_id WHERE p.source_id = $1)`,
		`DELETE FROM page_search_rows WHERE page_id IN (SELECT id FROM pages WHERE source_id = $1)`,
	},
	query: `SELECT ` + searchColumns + `, snippet(page_search, -1, char(57344), char(57345), '…', 24)
		FROM page_search JOIN page_search_rows r ON r.row = page_search.rowid
		JOIN pages p ON p.id = r.page_id JOIN events e ON e.id = p.event_id JOIN sources so ON so.id = p.source_id
		WHERE page_search MATCH $1 AND p.published_summary_id IS NOT NULL
		ORDER BY bm25(page_search, 10.0, 4.0, 1.0), p.id LIMIT $2 OFFSET $3`,
	// Every term is an FTS5 string (quotes doubled), so no user text is
	// ever FTS5 syntax: terms are ANDed, exclusions NOT-ed.
	match: func(q publish.SearchQuery) string {
		quote := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
		var b strings.Builder
		for i, t := range q.Terms {
			if i > 0 {
				b.WriteString(" AND ")
			}
			b.WriteString(quote(t))
		}
		for _, t := range q.Excluded {
			b.WriteString(" NOT " + quote(t))
		}
		return b.String()
	},
}

var postgresSearch = &searchDialect{
	index: func(ctx context.Context, tx *sql.Tx, pageID, title, summary, text string) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO page_search (page_id, title, summary, evidence) VALUES ($1, $2, $3, $4)
			ON CONFLICT (page_id) DO UPDATE SET title = excluded.title, summary = excluded.summary, evidence = excluded.evidence`,
			pageID, title, summary, text)
		return err
	},
	unindex: func(ctx context.Context, tx *sql.Tx, pageID string) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM page_search WHERE page_id = $1`, pageID)
		return err
	},
	unindexSource: []string{`DELETE FROM page_search WHERE page_id IN (SELECT id FROM pages WHERE source_id = $1)`},
	query: `SELECT ` + searchColumns + `, ts_headline('simple', ps.title || ' — ' || ps.summary || E'\n' || left(ps.evidence, 20000), q,
			'StartSel=' || chr(57344) || ',StopSel=' || chr(57345) || ',MaxWords=40,MinWords=12,MaxFragments=2,FragmentDelimiter=" … "')
		FROM page_search ps CROSS JOIN websearch_to_tsquery('simple', $1) AS q
		JOIN pages p ON p.id = ps.page_id JOIN events e ON e.id = p.event_id JOIN sources so ON so.id = p.source_id
		WHERE ps.document @@ q AND p.published_summary_id IS NOT NULL
		ORDER BY ts_rank(ps.document, q) DESC, p.id LIMIT $2 OFFSET $3`,
	// websearch_to_tsquery never fails on user text; it is given the
	// parsed terms in its own grammar, each a phrase of its words, with
	// ASCII punctuation read as a space, as the index reads it (migration
	// 0027): "webhook.go" is the phrase "webhook go".
	match: func(q publish.SearchQuery) string {
		var parts []string
		for _, t := range q.Terms {
			parts = append(parts, `"`+punctuationAsSpace(t)+`"`)
		}
		for _, t := range q.Excluded {
			parts = append(parts, `-"`+punctuationAsSpace(t)+`"`)
		}
		return strings.Join(parts, " ")
	},
}

// punctuationAsSpace reads ASCII punctuation as a space, as PostgreSQL's
// search index does (and SQLite's unicode61 tokenizer).
func punctuationAsSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && unicode.IsPunct(r) || unicode.IsSymbol(r) && r < 0x80 {
			return ' '
		}
		return r
	}, s)
}

// Search finds published pages matching q, best first.
func (s *PublishStore) Search(ctx context.Context, q publish.SearchQuery) (publish.SearchResult, error) {
	res := publish.SearchResult{Query: q.Raw, Offset: q.Offset, Limit: q.Limit, Hits: []publish.SearchHit{}}
	sd := s.db.Dialect.search
	hits, err := queryAll(ctx, s.db.db, func(sc scanner) (publish.SearchHit, error) {
		var h publish.SearchHit
		var at int64
		var snippet sql.NullString
		err := sc.Scan(&h.PageID, &h.EventID, &h.SourceID, &h.SourceName, &h.Title, &at, &snippet)
		h.OccurredAt = fromMS(at)
		h.Snippet = publish.SplitSnippet(snippet.String)
		h.URL = publish.PageKey(h.PageID)
		return h, err
	}, sd.query, sd.match(q), q.Limit+1, q.Offset)
	if err != nil {
		return res, fmt.Errorf("search %q: %w", q.Raw, err)
	}
	if len(hits) > q.Limit {
		hits, res.More = hits[:q.Limit], true
	}
	res.Hits = append(res.Hits, hits...)
	return res, nil
}
