package web

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/tidemark/tidemark"
)

// Page is one page of a list endpoint: Next, when not empty, is the opaque
// cursor of the next page (?cursor=NEXT); a page without Next is the last.
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}

// Limits of a list endpoint's ?limit=.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// pageCursor is what an opaque cursor holds: the list it belongs to and
// the sort key of the last item of the previous page. It is a position,
// not an offset, so rows added meanwhile neither repeat nor skip items.
type pageCursor struct {
	List string `json:"l"`
	At   int64  `json:"t,omitempty"` // Unix milliseconds
	Key  string `json:"k,omitempty"`
	N    int64  `json:"n,omitempty"`
}

func (c pageCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// pageParams reads ?limit= and ?cursor= for the list named list. A cursor
// of another list, or one that is not a cursor, is invalid input.
func pageParams(r *http.Request, list string) (limit int, cur pageCursor, err error) {
	q := r.URL.Query()
	limit = DefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return 0, cur, tidemark.Invalidf("limit", v, "want a whole number from 1 to %d", MaxLimit)
		}
		limit = n
	}
	v := q.Get("cursor")
	if v == "" {
		return limit, cur, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err == nil {
		err = json.Unmarshal(b, &cur)
	}
	if err != nil || cur.List != list || cur.Key == "" {
		return 0, pageCursor{}, tidemark.Invalidf("cursor", v, "not a cursor of this list: pass the next of a previous page of %s unchanged", list)
	}
	return limit, cur, nil
}

// paginate cuts items, read with limit+1, to a page: when there was one
// more, Next points after the page's last item.
func paginate[T any](items []T, limit int, next func(last T) pageCursor) Page[T] {
	if items == nil {
		items = []T{}
	}
	if len(items) <= limit {
		return Page[T]{Items: items}
	}
	items = items[:limit]
	return Page[T]{Items: items, Next: next(items[limit-1]).encode()}
}

// pageAfter pages a list held in memory and sorted by key (sources and
// lanes: few, read whole).
func pageAfter[T any](items []T, limit int, cur pageCursor, list string, key func(T) string) Page[T] {
	start := 0
	if cur.Key != "" {
		for start < len(items) && key(items[start]) <= cur.Key {
			start++
		}
	}
	rest := items[start:]
	if len(rest) > limit+1 {
		rest = rest[:limit+1]
	}
	return paginate(rest, limit, func(last T) pageCursor { return pageCursor{List: list, Key: key(last)} })
}
