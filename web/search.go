package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/publish"
)

// Searcher finds published pages (sqlstore's publish store).
type Searcher interface {
	Search(ctx context.Context, q publish.SearchQuery) (publish.SearchResult, error)
}

// SearchHandler serves search over the published wiki:
//
//	GET /search?q=&offset=&limit=      the search page (HTML, no JavaScript)
//	GET /api/search?q=&offset=&limit=  publish.SearchResult as JSON
//
// A query that is not one (empty, only exclusions, an unclosed quote, too
// long) or a bad offset or limit is a 400 that says what was wrong.
// Search reads only published pages, which the wiki shows to anyone, so it
// is part of the public wiki, not of the operator's API.
func SearchHandler(s Searcher, log *slog.Logger) http.Handler {
	srv := &Server{Logger: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/search", func(w http.ResponseWriter, r *http.Request) {
		q, err := searchQuery(r)
		if err != nil {
			srv.fail(w, r, err)
			return
		}
		res, err := s.Search(r.Context(), q)
		if err != nil {
			srv.fail(w, r, err)
			return
		}
		if res.Hits == nil { // hits is an array, whatever the Searcher returned
			res.Hits = []publish.SearchHit{}
		}
		writeJSON(w, http.StatusOK, res)
	})
	mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusOK
		var res publish.SearchResult
		var msg, prev, next string
		raw := r.URL.Query().Get("q")
		q, err := searchQuery(r)
		if err == nil {
			res, err = s.Search(r.Context(), q)
		}
		switch {
		case err == nil:
			page := func(offset int) string {
				v := url.Values{"q": {raw}}
				if offset > 0 {
					v.Set("offset", strconv.Itoa(offset))
				}
				if r.URL.Query().Has("limit") {
					v.Set("limit", strconv.Itoa(q.Limit))
				}
				return "search?" + v.Encode()
			}
			prev, next = page(max(0, q.Offset-q.Limit)), page(q.Offset+q.Limit)
		case raw == "" && !r.URL.Query().Has("q"):
			// The bare search page: a form, no error.
		case errors.Is(err, tidemark.ErrInvalid):
			status, msg = http.StatusBadRequest, tidemark.Text(err)
		default:
			srv.fail(w, r, err)
			return
		}
		body, err := publish.RenderSearch(raw, res, msg, prev, next)
		if err != nil {
			srv.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
	return mux
}

func searchQuery(r *http.Request) (publish.SearchQuery, error) {
	v := r.URL.Query()
	// A number's range is ParseSearch's to check; here only whether it is one.
	num := func(name string, def int, want string) (int, error) {
		s := v.Get(name)
		if s == "" {
			return def, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, tidemark.Invalidf(name, s, "want %s", want)
		}
		return n, nil
	}
	limit, err := num("limit", publish.DefaultSearchLimit, fmt.Sprintf("a whole number from 1 to %d", publish.MaxSearchLimit))
	if err != nil {
		return publish.SearchQuery{}, err
	}
	offset, err := num("offset", 0, "a whole number, 0 or more")
	if err != nil {
		return publish.SearchQuery{}, err
	}
	return publish.ParseSearch(v.Get("q"), limit, offset)
}
