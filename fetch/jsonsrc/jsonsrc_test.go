package jsonsrc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/fetch/jsonsrc"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// newAPI is a JSON endpoint whose answer the test changes between runs.
func newAPI() *fetchtest.Upstream { return fetchtest.NewUpstream("application/json") }

const doc1 = `{"meta":{"page":1},"data":{"releases":[
  {"uid": 1, "name": "v1.0", "notes": "first", "seen_at": "10:00", "url": "https://example.org/1"},
  {"uid": 2, "name": "v1.1", "notes": "second", "seen_at": "10:00"}]}}`

func TestJSONItemsFreezeCanonicallyAndReviseOnChange(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		a := newAPI()
		a.Set(200, doc1, "")
		srv, client := fetchtest.MustServe(t, a)
		h := fetchtest.MustHarness(t, b, "json", srv.URL, map[string]string{
			jsonsrc.ConfigItems: ".data.releases[]", jsonsrc.ConfigID: "uid", jsonsrc.ConfigIgnore: "seen_at",
		}, &jsonsrc.Fetcher{Client: client})
		rep := h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsNew != 2 {
			t.Fatalf("first run: %+v", rep)
		}
		evs := h.Events(t)
		if evs["1"].Title != "v1.0" || evs["1"].URL != "https://example.org/1" || evs["2"].Title != "v1.1" {
			t.Fatalf("events: %+v", evs)
		}
		if ev := h.Evidence(t, evs["1"].ID, 0); ev != `{"name":"v1.0","notes":"first","uid":1,"url":"https://example.org/1"}` {
			t.Fatalf("evidence %s", ev)
		}

		// Other key order, other whitespace, another volatile value: the
		// same content.
		a.Set(200, `{"data":{"releases":[{"seen_at":"11:00","url":"https://example.org/1","notes":"first","name":"v1.0","uid":1},
			{"notes":"second","name":"v1.1","uid":2,"seen_at":"11:00"}]}}`, "")
		h.MustRun(t, tidemark.OutcomeEmpty)

		a.Set(200, strings.Replace(doc1, `"second"`, `"second, amended"`, 1), "")
		rep = h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsNew != 0 || rep.EventsChanged != 1 || h.Events(t)["2"].Revision != 2 {
			t.Fatalf("amend run: %+v", rep)
		}

		a.Set(503, `{"error":"maintenance"}`, "")
		h.MustRun(t, tidemark.OutcomeUnreachable)
	})
}

func TestJSONUnusableAnswers(t *testing.T) {
	cases := map[string]string{
		"empty":        "",
		"not json":     "<html>oops</html>",
		"truncated":    doc1[:60],
		"trailing":     `[{"id":1}] [{"id":2}]`,
		"no identity":  `[{"id":1},{"name":"anonymous"}]`,
		"object id":    `[{"id":{"a":1}}]`,
		"not iterable": `"just a string"`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			a := newAPI()
			a.Set(200, body, "")
			srv, client := fetchtest.MustServe(t, a)
			h := fetchtest.MustHarness(t, sqltest.Backends()[0], "json", srv.URL, nil, &jsonsrc.Fetcher{Client: client})
			rep := h.MustRun(t, tidemark.OutcomeInvalid)
			if h.Current(t).Cursor != "" || len(h.Events(t)) != 0 {
				t.Fatalf("invalid run wrote something: %s", rep.Error)
			}
		})
	}
}

func TestSelectorConfig(t *testing.T) {
	if _, err := jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigItems: ".[] |"}, 0); err == nil {
		t.Fatal("a broken jq expression was accepted")
	}
	s, err := jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigItems: ".items[] | select(.ok)", jsonsrc.ConfigID: ".ref.sha", jsonsrc.ConfigTitle: "label"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	items, _, err := s.Select(context.Background(), []byte(`{"items":[{"ok":true,"ref":{"sha":"abc"},"label":"A"},{"ok":false,"ref":{"sha":"def"}}]}`))
	if err != nil || len(items) != 1 || items[0].Key != "abc" || items[0].Title != "A" {
		t.Fatalf("%v %+v", err, items)
	}
	if _, _, err := s.Select(context.Background(), []byte(`{"items":[{"ok":true,"ref":{"sha":"1"}},{"ok":true,"ref":{"sha":"2"}},{"ok":true,"ref":{"sha":"3"}}]}`)); err == nil {
		t.Fatal("more than max_items accepted")
	}
	// The worker's environment is not readable from an expression.
	t.Setenv("TIDEMARK_SECRET", "hunter2")
	s, err = jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigItems: "[{id: 1, env: $ENV.TIDEMARK_SECRET}][]"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	items, _, err = s.Select(context.Background(), []byte(`{}`))
	if err != nil || strings.Contains(string(items[0].Evidence), "hunter2") {
		t.Fatalf("environment leaked: %v %s", err, items[0].Evidence)
	}
}

// ignore paths are relative to each selected item, not to the answer: a
// path written from the answer's root matches nothing, and the fetch says
// so (source test shows it) instead of keeping the volatile field
// silently.
func TestIgnorePathsAreRelativeToEachItem(t *testing.T) {
	body := []byte(`{"total_count":2,"meta":{"fetched_at":"now"},"releases":[
		{"tag":"v1","name":"One","views":5,"stats":{"day":{"hits":1},"week":{"hits":7}}},
		{"tag":"v2","name":"Two","views":7}]}`)
	s, err := jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigItems: ".releases[]", jsonsrc.ConfigID: "tag",
		jsonsrc.ConfigIgnore: "views,stats.*.hits,releases.*.views,meta.fetched_at"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	items, _, notes, err := s.SelectWithNotes(context.Background(), body)
	if err != nil || len(items) != 2 {
		t.Fatalf("%v %+v", err, items)
	}
	if ev := string(items[0].Evidence); ev != `{"name":"One","stats":{"day":{},"week":{}},"tag":"v1"}` {
		t.Fatalf("evidence %s", ev)
	}
	want := []string{
		`ignore path "meta.fetched_at" matched nothing in any of the 2 items (paths are relative to each selected item)`,
		`ignore path "releases.*.views" matched nothing in any of the 2 items (paths are relative to each selected item)`,
	}
	if strings.Join(notes, "\n") != strings.Join(want, "\n") {
		t.Fatalf("notes:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
	}
	// The notes reach the fetch's result, which source test shows.
	a := newAPI()
	a.Set(200, string(body), "")
	srv, client := fetchtest.MustServe(t, a)
	src := tidemark.Source{Name: "api", Kind: "json", Location: srv.URL, Config: map[string]string{jsonsrc.ConfigItems: ".releases[]",
		jsonsrc.ConfigID: "tag", jsonsrc.ConfigIgnore: "views,releases.*.views"}}
	res, err := (&jsonsrc.Fetcher{Client: client}).Fetch(context.Background(), src, "")
	if err != nil || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], `"releases.*.views" matched nothing`) {
		t.Fatalf("fetch: %v, notes %q", err, res.Notes)
	}
}

// A path that can name nothing (an empty segment) is refused when the
// source is added or tested, naming the key and the path.
func TestIgnoreRefusesMalformedPaths(t *testing.T) {
	for _, bad := range []string{"stats..v", "views,stats..v", "a.", ".", "..a", "a.b.", "ok, . "} {
		_, err := jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigIgnore: bad}, 0)
		if !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("ignore=%q: %v, want invalid input", bad, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "ignore") || !strings.Contains(msg, "empty") {
			t.Errorf("ignore=%q: %q does not say what was wrong", bad, msg)
		}
	}
	for _, good := range []string{"views", ".views", "meta.fetched_at", "stats.*.hits", "*", "a, b.c"} {
		if _, err := jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigIgnore: good}, 0); err != nil {
			t.Errorf("ignore=%q: %v", good, err)
		}
	}
}

func FuzzSelect(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/seed/*.json")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, ".[]", "id")
	}
	f.Add([]byte(doc1), ".data.releases[]", "uid")
	f.Add([]byte(`[1,2,3]`), ".[]", ".")
	f.Add([]byte(`{"a":[{"id":"x"}]}`), ".a[] | select(.id)", ".id")
	f.Fuzz(func(t *testing.T, body []byte, items, id string) {
		s, err := jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigItems: items, jsonsrc.ConfigID: id}, 100)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		got, _, err := s.Select(ctx, body)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, it := range got {
			if it.Key == "" || seen[it.Key] {
				t.Fatalf("empty or repeated key %q", it.Key)
			}
			seen[it.Key] = true
		}
	})
}

func TestDeclaredMoreThanAdmittedFailsTheRun(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		a := newAPI()
		a.Set(200, `{"total_count": 3, "items": [{"id": 1}, {"id": 2}]}`, "")
		srv, client := fetchtest.MustServe(t, a)
		h := fetchtest.MustHarness(t, b, "json", srv.URL, map[string]string{
			jsonsrc.ConfigItems: ".items[]", jsonsrc.ConfigDeclared: "total_count",
		}, &jsonsrc.Fetcher{Client: client})
		rep := h.MustRun(t, tidemark.OutcomeInvalid)
		if !strings.Contains(rep.Error, "declared 3 results, 2 were admitted") || len(h.Events(t)) != 0 {
			t.Fatalf("short read: %q", rep.Error)
		}
		a.Set(200, `{"total_count": 3, "items": [{"id": 1}, {"id": 2}, {"id": 3}]}`, "")
		if rep := h.MustRun(t, tidemark.OutcomeItems); rep.EventsNew != 3 {
			t.Fatalf("complete answer: %+v", rep)
		}
	})
}

// Items an answer gives one identity are never dropped: identical ones are
// one item, differing ones each get a key of their own that does not
// depend on their order, so an unchanged answer keys them alike.
func TestItemsSharingAnIdentityStayApart(t *testing.T) {
	s, err := jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigItems: ".items[]"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	keys := func(body string) map[string]string {
		t.Helper()
		items, _, err := s.Select(context.Background(), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, it := range items {
			if _, dup := got[it.Key]; dup {
				t.Fatalf("key %q given twice: %+v", it.Key, items)
			}
			got[it.Key] = string(it.Evidence)
		}
		return got
	}

	got := keys(`{"items":[{"id":1,"title":"a"},{"id":1,"title":"dup"},{"id":2,"title":"b"}]}`)
	if len(got) != 3 || got["2"] != `{"id":2,"title":"b"}` {
		t.Fatalf("want 3 items (1 #…, 1 #…, 2), got %v", got)
	}
	for k := range got {
		if k != "2" && !strings.HasPrefix(k, "1 #") {
			t.Fatalf("key %q: an identity shared by differing items is keyed \"ID #hash\"", k)
		}
	}
	// The same answer in another order keys every item alike.
	again := keys(`{"items":[{"id":2,"title":"b"},{"title":"dup","id":1},{"id":1,"title":"a"}]}`)
	if len(again) != len(got) {
		t.Fatalf("reordered: %v, first %v", again, got)
	}
	for k, ev := range got {
		if again[k] != ev {
			t.Fatalf("reordered: key %q holds %q, was %q", k, again[k], ev)
		}
	}
	// Items that share their title and link too are told apart by their
	// whole evidence.
	got = keys(`{"items":[{"id":1,"title":"a","n":1},{"id":1,"title":"a","n":2}]}`)
	if len(got) != 2 {
		t.Fatalf("differing items with one identity, title and link: %v", got)
	}
	// An identical repeat is one item, keyed by its identity alone.
	got = keys(`{"items":[{"id":1,"title":"a"},{"id":1,"title":"a"}]}`)
	if len(got) != 1 || got["1"] != `{"id":1,"title":"a"}` {
		t.Fatalf("identical repeat: %v", got)
	}
}

func TestRepeatedIdentityBecomesEventsThatStay(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		a := newAPI()
		a.Set(200, `{"items":[{"id":1,"title":"a"},{"id":1,"title":"dup"}]}`, "")
		srv, client := fetchtest.MustServe(t, a)
		h := fetchtest.MustHarness(t, b, "json", srv.URL, map[string]string{jsonsrc.ConfigItems: ".items[]"}, &jsonsrc.Fetcher{Client: client})
		if rep := h.MustRun(t, tidemark.OutcomeItems); rep.EventsNew != 2 {
			t.Fatalf("first run: %+v", rep)
		}
		a.Set(200, `{"items":[{"id":1,"title":"dup"},{"id":1,"title":"a"}]}`, "")
		h.MustRun(t, tidemark.OutcomeEmpty)
		if n := len(h.Events(t)); n != 2 {
			t.Fatalf("%d events, want 2", n)
		}
	})
}

// An answer that holds all it declares is complete even when two of its
// items are the same item repeated word for word, which tidemark keeps
// as one: what is declared is checked against what the answer holds, and
// a real shortfall still fails the run.
func TestARepeatedItemIsNotAShortRead(t *testing.T) {
	s, err := jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigItems: ".items[]", jsonsrc.ConfigDeclared: "total"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		body          string
		items, declar int
	}{
		{`{"total": 3, "items": [{"id": 1}, {"id": 1}, {"id": 2}]}`, 2, 2}, // all there: no shortfall
		{`{"total": 4, "items": [{"id": 1}, {"id": 1}, {"id": 2}]}`, 2, 3}, // one missing: still one short
		{`{"total": 2, "items": [{"id": 1}, {"id": 2}]}`, 2, 2},
	} {
		items, declared, err := s.Select(context.Background(), []byte(tc.body))
		if err != nil || len(items) != tc.items || declared != tc.declar {
			t.Errorf("%s: %d items, declared %d (%v); want %d items, declared %d", tc.body, len(items), declared, err, tc.items, tc.declar)
		}
	}
}

// RFC 8259 lets a parser ignore a leading UTF-8 byte-order mark: an answer
// with one is read, and freezes to the same evidence as without, so a
// server that starts or stops sending one changes nothing.
func TestALeadingByteOrderMarkIsIgnored(t *testing.T) {
	doc := `{"data":[{"id":1,"name":"Café"},{"id":2,"name":"Two"}]}`
	s, err := jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigItems: ".data[]"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := s.Select(context.Background(), []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"\xef\xbb\xbf", "\xef\xbb\xbf \n"} {
		got, _, err := s.Select(context.Background(), []byte(prefix+doc))
		if err != nil {
			t.Fatalf("BOM %q: %v", prefix, err)
		}
		if len(got) != len(plain) {
			t.Fatalf("BOM %q: %d items, want %d", prefix, len(got), len(plain))
		}
		for i := range got {
			if got[i].Key != plain[i].Key || got[i].EvidenceHash() != plain[i].EvidenceHash() {
				t.Errorf("BOM %q: item %d %s %s, want %s %s", prefix, i, got[i].Key, got[i].Evidence, plain[i].Key, plain[i].Evidence)
			}
		}
	}
	// Only a leading mark: one inside the value is no whitespace.
	if _, _, err := s.Select(context.Background(), []byte(" \xef\xbb\xbf"+doc)); err == nil {
		t.Error("a byte-order mark after whitespace was accepted")
	}
}

// An item that once shared its identity keeps its own event when it is
// alone again under it, as feeds do (src.md #12).
func TestAnItemAloneAgainKeepsItsEvent(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		a := newAPI()
		a.Set(200, `{"items":[{"id":1,"title":"a"}]}`, "")
		srv, client := fetchtest.MustServe(t, a)
		h := fetchtest.MustHarness(t, b, "json", srv.URL, map[string]string{jsonsrc.ConfigItems: ".items[]"}, &jsonsrc.Fetcher{Client: client})
		h.MustRun(t, tidemark.OutcomeItems)
		a.Set(200, `{"items":[{"id":1,"title":"a"},{"id":1,"title":"b"}]}`, "")
		h.MustRun(t, tidemark.OutcomeItems)
		a.Set(200, `{"items":[{"id":1,"title":"b"}]}`, "")
		if rep := h.Run(t); rep.EventsNew+rep.EventsChanged != 0 {
			t.Fatalf("b alone again: %+v, want nothing new or changed", rep)
		}
		if !strings.Contains(h.Current(t).Cursor, `"shared":[`) {
			t.Fatalf("cursor %s remembers nothing", h.Current(t).Cursor)
		}
	})
}

// selectWithin runs Select and fails the test if it has not returned
// after limit: a watchdog, so an unbounded expression fails the test
// instead of hanging it.
func selectWithin(t *testing.T, s *jsonsrc.Selector, body string, limit time.Duration) ([]tidemark.Item, error) {
	t.Helper()
	type result struct {
		items []tidemark.Item
		err   error
	}
	done := make(chan result, 1)
	go func() {
		items, _, err := s.Select(context.Background(), []byte(body))
		done <- result{items, err}
	}()
	select {
	case r := <-done:
		return r.items, r.err
	case <-time.After(limit):
		t.Fatalf("Select still running after %v: the jq expressions have no bound", limit)
		return nil, nil
	}
}

// A source's jq expressions are bounded in steps (which bounds the memory
// they can build too) and in time, for the whole answer, whatever context
// the caller gives; passing a bound is invalid, naming it and its key
// (src.md #26).
func TestJQExpressionsAreBounded(t *testing.T) {
	s, err := jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigItems: "[range(1e8)] | length", jsonsrc.ConfigID: "."}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = selectWithin(t, s, `{}`, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), jsonsrc.ConfigJQSteps) || !strings.Contains(err.Error(), "steps") {
		t.Fatalf("an expression past the step bound: %v", err)
	}

	s, err = jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigItems: "[range(1e8)] | length", jsonsrc.ConfigID: ".",
		jsonsrc.ConfigJQSteps: "1000000000000", jsonsrc.ConfigJQTimeout: "50ms"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = selectWithin(t, s, `{}`, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), jsonsrc.ConfigJQTimeout) || !strings.Contains(err.Error(), "50ms") {
		t.Fatalf("an expression past the time bound: %v", err)
	}

	// The steps are counted over the whole answer (each item's identity,
	// title and link too), not per expression.
	s, err = jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigJQSteps: "50"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf(`{"id":%d}`, i))
	}
	if _, err := selectWithin(t, s, "["+strings.Join(many, ",")+"]", 30*time.Second); err == nil {
		t.Fatal("100 items in 50 steps")
	}

	for _, bad := range []map[string]string{{jsonsrc.ConfigJQSteps: "0"}, {jsonsrc.ConfigJQSteps: "many"},
		{jsonsrc.ConfigJQTimeout: "0s"}, {jsonsrc.ConfigJQTimeout: "10"}, {jsonsrc.ConfigJQTimeout: "1h"}} {
		if _, err := jsonsrc.NewSelector(bad, 0); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%v: %v, want invalid", bad, err)
		}
	}
}

// The default bounds admit the largest answer the default limits admit:
// 20,000 items, with the default identity, title and link.
func TestJQDefaultBoundsAdmitALargeAnswer(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"data":[`)
	for i := range 20000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"release %d","html_url":"https://example.org/r/%d","tags":["a","b"],"stats":{"n":%d}}`, i, i, i, i)
	}
	b.WriteString(`]}`)
	s, err := jsonsrc.NewSelector(map[string]string{jsonsrc.ConfigItems: ".data[]"}, 20000)
	if err != nil {
		t.Fatal(err)
	}
	items, err := selectWithin(t, s, b.String(), time.Minute)
	if err != nil || len(items) != 20000 {
		t.Fatalf("%d items, %v", len(items), err)
	}
}
