// Package jsonsrc watches a JSON endpoint. A jq expression (through gojq)
// selects the items; each selected value is an item whose identity is a
// configured field and whose evidence is its canonical JSON (sorted keys,
// numbers as written) with the volatile fields the source names removed.
// Items an answer gives one identity are never dropped (fetch.Keys).
// An item whose content changed re-freezes as a new revision of its event.
//
// The cursor (fetch.ItemsCursor) holds the HTTP validators and the
// identities answers gave to differing items; they advance only when the
// run settles.
package jsonsrc

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/itchyny/gojq"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch"
	"github.com/tidemark/tidemark/fetch/canon"
	"github.com/tidemark/tidemark/fetch/httpx"
)

// Config keys understood in a json source's config.
const (
	// ConfigItems is the jq expression selecting items (default ".[]").
	ConfigItems = "items"
	// ConfigID names each item's identity: a field name, or a jq
	// expression when it starts with "." (default "id").
	ConfigID = "id"
	// ConfigTitle and ConfigURL are field names or jq expressions for the
	// event's title and link (defaults: title or name; url, html_url or
	// link).
	ConfigTitle = "title"
	ConfigURL   = "url"
	// ConfigIgnore lists volatile fields (comma-separated dotted paths,
	// "*" for every key) removed before hashing.
	ConfigIgnore = "ignore"
	// ConfigDeclared is a jq expression for how many items the answer says
	// it holds (".total_count"); more declared than admitted fails the run
	// instead of settling past items that did not arrive.
	ConfigDeclared = "declared"
	// ConfigMaxItems bounds the items of one answer (default 20000).
	ConfigMaxItems = "max_items"
	// ConfigMaxBytes bounds the body size.
	ConfigMaxBytes = "max_bytes"
	// ConfigJQSteps bounds the steps the jq expressions take over one
	// answer, all of them together (default DefaultJQSteps).
	ConfigJQSteps = "jq_steps"
	// ConfigJQTimeout bounds the time they take over one answer (a Go
	// duration, default DefaultJQTimeout, at most MaxJQTimeout).
	ConfigJQTimeout = "jq_timeout"
)

// Bounds of the jq expressions over one answer. A source's expression is
// its operator's (or a token holder's) text: a typo such as ".." over a
// large answer, or "[range(1e9)]", must not hold a worker, or grow its
// memory, past the run's intent.
const (
	// DefaultJQSteps admits the largest answer the default limits admit
	// (20,000 items with their identity, title and link: 1.3 million
	// steps) several times over. One step is one instruction of gojq's
	// machine, which builds at most one value, so the bound on steps also
	// bounds the memory the expressions build ("[range(1e8)]" stops near
	// 3 million elements, tens of MB), up to gojq's own bound on one
	// string repetition.
	DefaultJQSteps int64 = 10_000_000
	// DefaultJQTimeout and MaxJQTimeout bound the time.
	DefaultJQTimeout = 10 * time.Second
	MaxJQTimeout     = 5 * time.Minute
)

// Fetcher watches JSON endpoints through an httpx.Client.
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
	sel, err := NewSelector(src.Config, int(maxItems))
	if err != nil {
		return tidemark.FetchResult{}, fmt.Errorf("source %s: %w", src.Name, err)
	}
	cur := fetch.DecodeItemsCursor(cursor)
	resp, err := f.Client.Get(ctx, httpx.Request{
		URL: src.Location, Accept: "application/json, application/*+json;q=0.9, */*;q=0.1",
		Validators: cur.Validators, MaxBodyBytes: maxBytes,
	})
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	if resp.NotModified {
		return tidemark.FetchResult{Cursor: cursor, NotBefore: resp.MaxAge}, nil
	}
	got, err := sel.Read(ctx, resp.Body, cur.Shared)
	if err != nil {
		if ctx.Err() != nil {
			return tidemark.FetchResult{}, ctx.Err()
		}
		if ct := resp.ContentType(); ct != "" && !strings.Contains(ct, "json") && errors.Is(err, ErrNotJSON) {
			return tidemark.FetchResult{}, tidemark.Unusable("served "+ct+", not JSON", err)
		}
		return tidemark.FetchResult{}, tidemark.Unusable("unusable JSON", err)
	}
	next := fetch.ItemsCursor{Validators: resp.Validators, Shared: got.Shared}
	return tidemark.FetchResult{Items: got.Items, Declared: got.Declared, Cursor: next.Encode(), NotBefore: resp.MaxAge, Notes: got.Notes}, nil
}

// ResolveCursor checks a skip target: the kind's cursor, a JSON object of
// HTTP validators and shared identities (fetch.CheckItemsCursor). It is
// stored as given.
func (f *Fetcher) ResolveCursor(_ context.Context, _ tidemark.Source, to string) (string, error) {
	if err := fetch.CheckItemsCursor("to", "json", to); err != nil {
		return "", err
	}
	return to, nil
}

// CheckCursor checks a cursor to fetch from (source test --cursor), as
// ResolveCursor does.
func (f *Fetcher) CheckCursor(cursor string) error {
	return fetch.CheckItemsCursor("cursor", "json", cursor)
}

// Selector turns a JSON document into items.
type Selector struct {
	items, id, title, url *gojq.Code
	declared              *gojq.Code // nil: the answer declares nothing
	ignore                []string
	maxItems              int
	steps                 int64
	timeout               time.Duration
}

// ErrNotJSON: the body is not a JSON document.
var ErrNotJSON = errors.New("jsonsrc: not JSON")

// NewSelector compiles a source's config. A bad expression, or an ignore
// path that can name nothing (an empty segment), is an *InvalidError
// naming the key.
func NewSelector(cfg map[string]string, maxItems int) (*Selector, error) {
	s := &Selector{ignore: canon.SplitList(cfg[ConfigIgnore]), maxItems: maxItems, timeout: DefaultJQTimeout}
	var err error
	if s.steps, err = fetch.IntConfig(cfg, ConfigJQSteps, DefaultJQSteps); err != nil {
		return nil, err
	}
	if v := strings.TrimSpace(cfg[ConfigJQTimeout]); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > MaxJQTimeout {
			return nil, tidemark.Invalidf("config "+ConfigJQTimeout, v, "want a duration above 0 and at most %v (10s, 1m)", MaxJQTimeout)
		}
		s.timeout = d
	}
	for _, p := range s.ignore {
		if err := canon.CheckPath(p); err != nil {
			return nil, tidemark.Invalidf("config "+ConfigIgnore, p, "not a dotted path relative to each item (views, stats.*.hits): %v", err)
		}
	}
	if s.items, err = compile(ConfigItems, cfg[ConfigItems], ".[]"); err != nil {
		return nil, err
	}
	if s.id, err = compile(ConfigID, field(cfg[ConfigID]), ".id"); err != nil {
		return nil, err
	}
	if s.title, err = compile(ConfigTitle, field(cfg[ConfigTitle]), ".title? // .name? // empty"); err != nil {
		return nil, err
	}
	if s.url, err = compile(ConfigURL, field(cfg[ConfigURL]), ".url? // .html_url? // .link? // empty"); err != nil {
		return nil, err
	}
	if d := cfg[ConfigDeclared]; strings.TrimSpace(d) != "" {
		if s.declared, err = compile(ConfigDeclared, field(d), ""); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// field turns a bare field name into a jq path; expressions pass through.
func field(v string) string {
	v = strings.TrimSpace(v)
	if v == "" || strings.HasPrefix(v, ".") || strings.ContainsAny(v, "|()[]$ ") {
		return v
	}
	return ".[" + quote(v) + "]"
}

func quote(s string) string {
	b, _ := canon.Value(s)
	return string(b)
}

func compile(key, expr, def string) (*gojq.Code, error) {
	if strings.TrimSpace(expr) == "" {
		expr = def
	}
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, tidemark.Invalidf("config "+key, expr, "not a jq expression: %v", err)
	}
	// No environment: a source's expression must not read the worker's
	// variables into evidence.
	c, err := gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, tidemark.Invalidf("config "+key, expr, "%v", err)
	}
	return c, nil
}

// Select decodes body and returns one item per value the items
// expression yields, in order, and the count the answer declares (0 when
// not configured). An item without an identity, or an answer with more
// than maxItems items, is an error. Items sharing an identity are keyed
// apart as fetch.Keys says: identical ones are one item, differing ones
// are each kept as "ID #hash".
func (s *Selector) Select(ctx context.Context, body []byte) ([]tidemark.Item, int, error) {
	items, declared, _, err := s.SelectWithNotes(ctx, body)
	return items, declared, err
}

// SelectWithNotes is Select, with notes on what it noticed but did not
// refuse: each ignore path that matched nothing in any item (they are
// relative to each selected item, not to the answer).
func (s *Selector) SelectWithNotes(ctx context.Context, body []byte) ([]tidemark.Item, int, []string, error) {
	got, err := s.Read(ctx, body, nil)
	return got.Items, got.Declared, got.Notes, err
}

// Selection is what Read finds in an answer.
type Selection struct {
	Items []tidemark.Item
	// Declared is the count the answer declares (0 when not configured).
	Declared int
	// Notes say what Read noticed but did not refuse.
	Notes []string
	// Shared is what the source's cursor is to remember next of the
	// identities answers gave to differing items (fetch.Keys).
	Shared []string
}

// Read is SelectWithNotes for a source whose cursor remembers shared,
// the identities its answers gave to differing items before (fetch.Keys):
// those stay keyed apart.
func (s *Selector) Read(ctx context.Context, body []byte, shared []string) (Selection, error) {
	items, declared, notes, shared, err := s.read(ctx, body, shared)
	return Selection{Items: items, Declared: declared, Notes: notes, Shared: shared}, err
}

func (s *Selector) read(ctx context.Context, body []byte, shared []string) ([]tidemark.Item, int, []string, []string, error) {
	ctx, stop := s.bound(ctx)
	defer stop()
	doc, err := canon.Decode(body)
	if err != nil {
		return nil, 0, nil, nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	declared := 0
	if s.declared != nil {
		v, err := s.first(ctx, s.declared, doc)
		if err != nil {
			return nil, 0, nil, nil, fmt.Errorf("declared count: %w", err)
		}
		n, err := strconv.Atoi(v)
		if v != "" && (err != nil || n < 0) {
			return nil, 0, nil, nil, fmt.Errorf("declared count %q is not a whole number", v)
		}
		declared = n
	}
	items, shared, held, matched, err := s.selectItems(ctx, doc, shared)
	if declared > 0 {
		// The declaration is of what the answer holds; an item repeated
		// word for word is held, and kept once: only what is missing from
		// the answer is missing.
		declared = len(items) + max(0, declared-held)
	}
	var notes []string
	for i, p := range s.ignore {
		if err == nil && held > 0 && !matched[i] {
			notes = append(notes, fmt.Sprintf("ignore path %q matched nothing in any of the %d items (paths are relative to each selected item)", p, held))
		}
	}
	return items, declared, notes, shared, err
}

// selectItems returns the answer's items, keyed (fetch.Keys), how many
// the answer held before identical repeats were kept once, and for each
// ignore path whether it removed anything from any item.
func (s *Selector) selectItems(ctx context.Context, doc any, shared []string) ([]tidemark.Item, []string, int, []bool, error) {
	var cands []fetch.Candidate
	matched := make([]bool, len(s.ignore))
	iter := s.items.RunWithContext(ctx, doc)
	for n := 0; ; n++ {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := v.(error); ok {
			return nil, nil, 0, nil, fmt.Errorf("items expression: %w", err)
		}
		if s.maxItems > 0 && n >= s.maxItems {
			return nil, nil, 0, nil, fmt.Errorf("more than the limit of %d items", s.maxItems)
		}
		id, err := s.first(ctx, s.id, v)
		if err != nil {
			return nil, nil, 0, nil, fmt.Errorf("item %d: identity: %w", n, err)
		}
		if id == "" {
			return nil, nil, 0, nil, fmt.Errorf("item %d has no identity (set config %q)", n, ConfigID)
		}
		title, _ := s.first(ctx, s.title, v)
		link, _ := s.first(ctx, s.url, v)
		kept, m := canon.DropMatched(v, s.ignore)
		for i := range m {
			matched[i] = matched[i] || m[i]
		}
		ev, err := canon.Value(kept)
		if err != nil {
			return nil, nil, 0, nil, fmt.Errorf("item %d: %w", n, err)
		}
		// What tells apart items an answer gives one identity: the title
		// and link as configured (a JSON item has no date of its own).
		stable := tidemark.HashEvidence([]byte(link + "\n" + title))[:16]
		if title == "" {
			title = fetch.ItemKey(id)
		}
		cands = append(cands, fetch.Candidate{
			Item: tidemark.Item{Title: canon.Line(title), URL: link, Evidence: ev},
			ID:   id, Stable: stable,
		})
	}
	keyed, shared := fetch.Keys(cands, shared)
	return keyed, shared, len(cands), matched, nil
}

// bound returns ctx under the selector's bounds on its jq expressions:
// every expression run under it, over one answer, shares them. Past a
// bound the expression's next step fails with an error naming the bound
// and its config key (errJQBound); ctx's own end is passed on as it is.
func (s *Selector) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	timeout := &jqBoundError{what: fmt.Sprintf("took longer than %v", s.timeout), key: ConfigJQTimeout}
	tctx, cancel := context.WithTimeoutCause(ctx, s.timeout, timeout)
	return &stepBudget{Context: tctx, limit: s.steps, over: make(chan struct{}),
		err: &jqBoundError{what: fmt.Sprintf("took more than %d steps", s.steps), key: ConfigJQSteps}}, cancel
}

// errJQBound is the root of an expression stopped by a bound.
var errJQBound = errors.New("jsonsrc: jq expressions passed a bound")

type jqBoundError struct{ what, key string }

func (e *jqBoundError) Error() string {
	return fmt.Sprintf("the jq expressions %s over this answer (raise config %s, or narrow the expressions)", e.what, e.key)
}

func (e *jqBoundError) Unwrap() error { return errJQBound }

// stepBudget counts the steps of gojq's machine, which asks its context's
// Done before each one, and ends the context once they pass limit. Its
// Done returns another channel once the limit has passed, which is all
// the machine's select needs; a context derived from it would see only
// the time bound.
type stepBudget struct {
	context.Context
	steps, limit int64
	over         chan struct{}
	once         sync.Once
	err          error
}

func (b *stepBudget) Done() <-chan struct{} {
	if atomic.AddInt64(&b.steps, 1) > b.limit {
		b.once.Do(func() { close(b.over) })
		return b.over
	}
	return b.Context.Done()
}

func (b *stepBudget) Err() error {
	if atomic.LoadInt64(&b.steps) > b.limit {
		return b.err
	}
	if err := b.Context.Err(); err != nil {
		if cause := context.Cause(b.Context); errors.Is(cause, errJQBound) {
			return cause
		}
		return err
	}
	return nil
}

// first runs code on v and returns its first output as a string: strings
// as they are, numbers as written, booleans as true/false; null or no
// output is "". Objects and arrays are an error.
func (s *Selector) first(ctx context.Context, code *gojq.Code, v any) (string, error) {
	out, ok := code.RunWithContext(ctx, v).Next()
	if !ok || out == nil {
		return "", nil
	}
	switch x := out.(type) {
	case error:
		return "", x
	case string:
		return canon.Line(x), nil
	case bool, int, float64, *big.Int:
		return fmt.Sprint(x), nil
	case fmt.Stringer: // json.Number
		return x.String(), nil
	default:
		return "", fmt.Errorf("is a %T, want a string or number", out)
	}
}
