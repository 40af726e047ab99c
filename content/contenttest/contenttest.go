// Package contenttest is the conformance suite every content.Store passes,
// in the manner of testing/fstest: an implementation's tests call Run with
// a way to open a fresh store. It holds the store's promises: a versioned
// write and its snapshot in one transaction, refused on a stale base; a
// migration run's cursor advancing with its conversions; the field's type
// flipping with the last batch; the run's claim fence.
package contenttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/content"
)

// Harness is a fresh, empty store (its built-in collections aside) and the
// fake clock it runs on.
type Harness struct {
	Store content.Store
	Clock *clock.Fake
}

// Run runs the content store conformance suite. open returns a fresh,
// empty store for each subtest.
func Run(t *testing.T, open func(t *testing.T) Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"CollectionsRefuseBadInput", testCollections},
		{"VersionedWriteKeepsSnapshots", testVersionedWrite},
		{"StaleBaseChangesNothing", testStaleBase},
		{"ValuesCheckedAgainstTheirType", testValidation},
		{"ImportAllOrNothing", testImport},
		{"DocumentsPageInIDOrder", testDocumentsPaging},
		{"StepAdvancesCursorWithConversions", testStepCursor},
		{"TypeFlipsWithTheLastBatch", testTypeFlip},
		{"BatchBoundedByBytes", testBatchBytes},
		{"FailFixResumeAbort", testFailFixResumeAbort},
		{"AbortLeavesOneType", testAbortLeavesOneType},
		{"OversizedConversionFailsTheRun", testOversizedConversion},
		{"StoppedWorkerReleasesItsClaim", testStoppedWorkerReleases},
		{"ClaimFence", testClaimFence},
		{"PendingRuns", testPendingRuns},
		{"ConcurrentWritersDuringRun", testConcurrentWriters},
		{"DeleteIsVersionedAndAudited", testDelete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var ctx = context.Background()

func mustCollection(tb testing.TB, st content.Store, name string, fields ...content.Field) {
	tb.Helper()
	if _, err := st.CreateCollection(ctx, name, fields); err != nil {
		tb.Fatalf("create collection %s: %v", name, err)
	}
}

func mustPut(tb testing.TB, st content.Store, coll string, p content.Put) content.Document {
	tb.Helper()
	d, err := st.Put(ctx, coll, p)
	if err != nil {
		tb.Fatalf("put %s/%s: %v", coll, p.ID, err)
	}
	return d
}

func mustDocument(tb testing.TB, st content.Store, coll, id string) content.Document {
	tb.Helper()
	d, err := st.Document(ctx, coll, id)
	if err != nil {
		tb.Fatalf("document %s/%s: %v", coll, id, err)
	}
	return d
}

func mustVersions(tb testing.TB, st content.Store, coll, id string) []content.Version {
	tb.Helper()
	vs, err := st.Versions(ctx, coll, id)
	if err != nil {
		tb.Fatalf("versions of %s/%s: %v", coll, id, err)
	}
	return vs
}

// Document IDs are ULIDs; these two are never made by a store's clock.
const (
	chosenID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	ghostID  = "01ARZ3NDEKTSV4RRFFQ69G5FAW"
)

func str(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

// seed creates n documents whose field v is text, "0".."n-1" (and so
// convertible to number and, wrapped, to rich text).
func seed(tb testing.TB, st content.Store, coll string, n int) []string {
	tb.Helper()
	mustCollection(tb, st, coll, content.Field{Name: "v", Type: content.Text}, content.Field{Name: "keep", Type: content.Text})
	i := 0
	var ids []string
	_, err := st.Import(ctx, coll, func() (content.Put, bool, error) {
		if i == n {
			return content.Put{}, false, nil
		}
		i++
		return content.Put{Set: content.Fields{"v": str(fmt.Sprint(i - 1)), "keep": str("k")}}, true, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	docs, err := st.Documents(ctx, coll, "", n+1)
	if err != nil || len(docs) != n {
		tb.Fatalf("seeded %d documents: %v", len(docs), err)
	}
	for _, d := range docs {
		ids = append(ids, d.ID)
	}
	return ids
}

// mustStart records a run of field v of coll to type to.
func mustStart(tb testing.TB, m *content.Migrator, coll string, to content.FieldType, batch int) content.Run {
	tb.Helper()
	r, err := m.Start(ctx, coll, "v", to, batch)
	if err != nil {
		tb.Fatalf("start %s.v→%s: %v", coll, to, err)
	}
	return r
}

func fieldType(tb testing.TB, st content.Store, coll, field string) content.FieldType {
	tb.Helper()
	c, err := st.Collection(ctx, coll)
	if err != nil {
		tb.Fatal(err)
	}
	f, _ := c.Field(field)
	return f.Type
}

func testCollections(t *testing.T, h Harness) {
	st := h.Store
	mustCollection(t, st, "notes", content.Field{Name: "title", Type: content.Text})
	if _, err := st.CreateCollection(ctx, "notes", []content.Field{{Name: "x", Type: content.Text}}); !errors.Is(err, tidemark.ErrConflict) {
		t.Fatalf("create a collection twice: %v, want ErrConflict", err)
	}
	for name, fields := range map[string][]content.Field{
		"Bad Name": {{Name: "x", Type: content.Text}},
		"badtype":  {{Name: "x", Type: "colour"}},
		"dupfield": {{Name: "x", Type: content.Text}, {Name: "x", Type: content.Number}},
		"idfield":  {{Name: "id", Type: content.Text}},
	} {
		if _, err := st.CreateCollection(ctx, name, fields); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("create collection %q %v: %v, want ErrInvalid", name, fields, err)
		}
	}
	c, err := st.Collection(ctx, "notes")
	if err != nil || c.Name != "notes" || len(c.Fields) != 1 || c.Fields[0] != (content.Field{Name: "title", Type: content.Text}) || c.BuiltIn {
		t.Fatalf("collection %+v %v", c, err)
	}
	if _, err := st.Collection(ctx, "nowhere"); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("missing collection: %v, want ErrNotFound", err)
	}
	all, err := st.Collections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range all {
		names[c.Name] = true
	}
	if !names["notes"] || names["Bad Name"] || names["badtype"] {
		t.Fatalf("collections %v", names)
	}
}

func testVersionedWrite(t *testing.T, h Harness) {
	st := h.Store
	mustCollection(t, st, "notes", content.Field{Name: "title", Type: content.Text}, content.Field{Name: "n", Type: content.Number})
	d := mustPut(t, st, "notes", content.Put{Set: content.Fields{"title": str("hello"), "n": json.RawMessage("3")}})
	if d.Version != 1 || d.ID == "" || d.Collection != "notes" {
		t.Fatalf("created %+v, want version 1", d)
	}
	d2 := mustPut(t, st, "notes", content.Put{ID: d.ID, BaseVersion: 1, Set: content.Fields{"title": str("hello, world")}})
	if d2.Version != 2 || string(d2.Fields["n"]) != "3" || string(d2.Fields["title"]) != `"hello, world"` {
		t.Fatalf("update %+v", d2)
	}
	d3 := mustPut(t, st, "notes", content.Put{ID: d.ID, BaseVersion: 2, Unset: []string{"n"}})
	if _, has := d3.Fields["n"]; d3.Version != 3 || has {
		t.Fatalf("unset %+v", d3)
	}
	// Every write left one snapshot, equal to the document it made.
	vs := mustVersions(t, st, "notes", d.ID)
	if len(vs) != 3 {
		t.Fatalf("%d snapshots, want 3", len(vs))
	}
	for i, want := range []content.Document{d, d2, d3} {
		v := vs[i]
		if v.Version != want.Version || v.DocumentID != d.ID || fmt.Sprint(v.Fields) != fmt.Sprint(want.Fields) || v.RunID != "" {
			t.Fatalf("snapshot %d = %+v, want the fields of %+v", i, v, want)
		}
	}
	if vs[0].Reason != content.ReasonCreate || vs[1].Reason != content.ReasonPut || vs[2].Reason != content.ReasonPut {
		t.Fatalf("snapshot reasons %s %s %s", vs[0].Reason, vs[1].Reason, vs[2].Reason)
	}
	if got := mustDocument(t, st, "notes", d.ID); got.Version != 3 || fmt.Sprint(got.Fields) != fmt.Sprint(d3.Fields) {
		t.Fatalf("read back %+v, want %+v", got, d3)
	}
	// A chosen ID is kept.
	if e := mustPut(t, st, "notes", content.Put{ID: chosenID, Set: content.Fields{"title": str("x")}}); e.ID != chosenID {
		t.Fatalf("created %s, want %s", e.ID, chosenID)
	}
	if _, err := st.Put(ctx, "notes", content.Put{ID: "not a ulid", Set: content.Fields{"title": str("x")}}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("create with a malformed ID: %v, want ErrInvalid", err)
	}
	if _, err := st.Document(ctx, "notes", ghostID); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("missing document: %v, want ErrNotFound", err)
	}
	if _, err := st.Put(ctx, "nowhere", content.Put{Set: content.Fields{"title": str("x")}}); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("put into a missing collection: %v, want ErrNotFound", err)
	}
}

func testStaleBase(t *testing.T, h Harness) {
	st := h.Store
	mustCollection(t, st, "notes", content.Field{Name: "title", Type: content.Text})
	d := mustPut(t, st, "notes", content.Put{Set: content.Fields{"title": str("one")}})
	mustPut(t, st, "notes", content.Put{ID: d.ID, BaseVersion: 1, Set: content.Fields{"title": str("two")}})
	for _, base := range []int64{1, 3} {
		_, err := st.Put(ctx, "notes", content.Put{ID: d.ID, BaseVersion: base, Set: content.Fields{"title": str("lost update")}})
		if !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("write based on version %d of 2: %v, want ErrConflict", base, err)
		}
	}
	// Creating over an existing ID is a stale base too.
	if _, err := st.Put(ctx, "notes", content.Put{ID: d.ID, Set: content.Fields{"title": str("x")}}); !errors.Is(err, tidemark.ErrConflict) {
		t.Fatalf("create over an existing document: %v, want ErrConflict", err)
	}
	// An update of a document that does not exist is not a create.
	if _, err := st.Put(ctx, "notes", content.Put{ID: ghostID, BaseVersion: 1, Set: content.Fields{"title": str("x")}}); err == nil {
		t.Fatal("an update of a missing document created it")
	}
	got := mustDocument(t, st, "notes", d.ID)
	if got.Version != 2 || string(got.Fields["title"]) != `"two"` {
		t.Fatalf("after refused writes %+v", got)
	}
	if vs := mustVersions(t, st, "notes", d.ID); len(vs) != 2 {
		t.Fatalf("refused writes left %d snapshots, want 2", len(vs))
	}
	if _, err := st.Document(ctx, "notes", ghostID); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("ghost document: %v, want ErrNotFound", err)
	}
}

func testValidation(t *testing.T, h Harness) {
	st := h.Store
	mustCollection(t, st, "notes", content.Field{Name: "title", Type: content.Text}, content.Field{Name: "n", Type: content.Number},
		content.Field{Name: "on", Type: content.Boolean})
	d := mustPut(t, st, "notes", content.Put{Set: content.Fields{"title": str("t"), "n": json.RawMessage("1")}})
	// Validation names the document, the field and the value.
	_, err := st.Put(ctx, "notes", content.Put{ID: d.ID, BaseVersion: 1, Set: content.Fields{"n": str("seven")}})
	var inv *tidemark.InvalidError
	if !errors.As(err, &inv) || inv.Value != `"seven"` || !strings.Contains(inv.Field, d.ID) || !strings.Contains(inv.Field, "n") {
		t.Fatalf("invalid value: %#v", err)
	}
	for name, f := range map[string]content.Fields{
		"unknown field":   {"nope": str("x")},
		"text as number":  {"title": json.RawMessage("3")},
		"number as bool":  {"on": json.RawMessage("1")},
		"malformed value": {"n": json.RawMessage("{")},
	} {
		if _, err := st.Put(ctx, "notes", content.Put{ID: d.ID, BaseVersion: 1, Set: f}); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("put with %s: %v, want ErrInvalid", name, err)
		}
	}
	if got := mustDocument(t, st, "notes", d.ID); got.Version != 1 {
		t.Fatalf("refused writes moved the document to version %d", got.Version)
	}
}

func testImport(t *testing.T, h Harness) {
	st := h.Store
	mustCollection(t, st, "notes", content.Field{Name: "n", Type: content.Number})
	// A bad value in the middle refuses the whole import.
	vals := []string{"1", "2", `"three"`, "4"}
	i := 0
	n, err := st.Import(ctx, "notes", func() (content.Put, bool, error) {
		if i == len(vals) {
			return content.Put{}, false, nil
		}
		i++
		return content.Put{Set: content.Fields{"n": json.RawMessage(vals[i-1])}}, true, nil
	})
	if !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("import with a bad value: %d, %v; want ErrInvalid", n, err)
	}
	if docs, err := st.Documents(ctx, "notes", "", 10); err != nil || len(docs) != 0 {
		t.Fatalf("a refused import left %d documents: %v", len(docs), err)
	}
	// So does an error from the source.
	boom := errors.New("read error")
	i = 0
	if _, err := st.Import(ctx, "notes", func() (content.Put, bool, error) {
		i++
		if i == 3 {
			return content.Put{}, false, boom
		}
		return content.Put{Set: content.Fields{"n": json.RawMessage("1")}}, true, nil
	}); !errors.Is(err, boom) {
		t.Fatalf("import with a failing source: %v", err)
	}
	if docs, _ := st.Documents(ctx, "notes", "", 10); len(docs) != 0 {
		t.Fatalf("a failed import left %d documents", len(docs))
	}
	ids := seed(t, st, "things", 5)
	for _, id := range ids {
		if vs := mustVersions(t, st, "things", id); len(vs) != 1 || vs[0].Version != 1 || vs[0].Reason != content.ReasonCreate {
			t.Fatalf("imported document %s has snapshots %+v", id, vs)
		}
	}
}

func testDocumentsPaging(t *testing.T, h Harness) {
	st := h.Store
	ids := seed(t, st, "things", 7)
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("documents not in ID order: %s after %s", ids[i], ids[i-1])
		}
	}
	var walked []string
	after := ""
	for {
		page, err := st.Documents(ctx, "things", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 {
			t.Fatalf("a page of %d documents, limit 3", len(page))
		}
		if len(page) == 0 {
			break
		}
		for _, d := range page {
			walked = append(walked, d.ID)
		}
		after = page[len(page)-1].ID
	}
	if fmt.Sprint(walked) != fmt.Sprint(ids) {
		t.Fatalf("paged walk %v, want %v", walked, ids)
	}
}

// After every step, the documents up to the cursor are converted (with a
// migrate snapshot naming the run) and the rest are not: the cursor moves
// in the transaction that converts.
func testStepCursor(t *testing.T, h Harness) {
	st := h.Store
	ids := seed(t, st, "things", 7)
	run := mustStart(t, &content.Migrator{Store: st, Holder: "w1"}, "things", content.Number, 3)
	if run.Status != content.RunRunning || run.Cursor != "" || run.Total != 7 || run.From != content.Text || run.To != content.Number {
		t.Fatalf("started run %+v", run)
	}
	c, err := st.ClaimRun(ctx, run.ID, "w1", content.DefaultLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; ; step++ {
		r, err := st.Step(ctx, c, content.DefaultLeaseTTL)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		upto := min(3*step, len(ids))
		if r.Cursor != ids[upto-1] || r.Converted != int64(upto) || r.Walked != int64(upto) || r.Batches != int64(step) {
			t.Fatalf("step %d: run %+v, want cursor %s after %d documents", step, r, ids[upto-1], upto)
		}
		for i, id := range ids {
			d := mustDocument(t, st, "things", id)
			vs := mustVersions(t, st, "things", id)
			last := vs[len(vs)-1]
			if i < upto {
				if string(d.Fields["v"]) != fmt.Sprint(i) || d.Version != 2 || last.Reason != content.ReasonMigrate || last.RunID != run.ID ||
					string(last.Fields["v"]) != fmt.Sprint(i) || string(d.Fields["keep"]) != `"k"` {
					t.Fatalf("step %d: converted doc %d = %+v, last snapshot %+v", step, i, d, last)
				}
			} else if string(d.Fields["v"]) != string(str(fmt.Sprint(i))) || d.Version != 1 || len(vs) != 1 {
				t.Fatalf("step %d: doc %d past the cursor changed: %+v", step, i, d)
			}
		}
		if r.Status == content.RunDone {
			if upto != len(ids) {
				t.Fatalf("done after %d of %d documents", upto, len(ids))
			}
			break
		}
		if step > len(ids) {
			t.Fatalf("run not done after %d steps: %+v", step, r)
		}
	}
	// A claim of a finished run is refused.
	if _, err := st.ClaimRun(ctx, run.ID, "w1", content.DefaultLeaseTTL); !errors.Is(err, tidemark.ErrConflict) {
		t.Fatalf("claim a done run: %v, want ErrConflict", err)
	}
}

// testBatchBytes: a batch holds no more than content.MaxBatchBytes of
// stored fields, whatever its size in documents; the run goes on with the
// next document in the next batch and flips the type once, with the last.
func testBatchBytes(t *testing.T, h Harness) {
	st := h.Store
	mustCollection(t, st, "big", content.Field{Name: "v", Type: content.Text}, content.Field{Name: "pad", Type: content.Text})
	pad := str(strings.Repeat("x", 200_000))
	n := content.MaxBatchBytes/len(pad) + 5
	for i := range n {
		mustPut(t, st, "big", content.Put{Set: content.Fields{"v": str(fmt.Sprint(i)), "pad": pad}})
	}
	run := mustStart(t, &content.Migrator{Store: st, Holder: "w1"}, "big", content.Number, content.MaxBatch)
	c, err := st.ClaimRun(ctx, run.ID, "w1", content.DefaultLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Step(ctx, c, content.DefaultLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	// Every document but the last of the batch starts within the budget.
	if r.Status != content.RunRunning || r.Converted < 1 || int(r.Converted-1)*len(pad) >= content.MaxBatchBytes || r.Converted == int64(n) {
		t.Fatalf("first batch of %d documents of %d bytes (budget %d): %+v", n, len(pad), content.MaxBatchBytes, r)
	}
	if got := fieldType(t, st, "big", "v"); got != content.Text {
		t.Fatalf("type flipped to %s after the first batch", got)
	}
	for r.Status == content.RunRunning {
		if r, err = st.Step(ctx, c, content.DefaultLeaseTTL); err != nil {
			t.Fatal(err)
		}
	}
	if r.Status != content.RunDone || r.Converted != int64(n) || r.Batches < 2 || fieldType(t, st, "big", "v") != content.Number {
		t.Fatalf("run ended %+v", r)
	}
	docs, err := st.Documents(ctx, "big", "", n+1)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if vs := mustVersions(t, st, "big", d.ID); d.Version != 2 || len(vs) != 2 || vs[1].Reason != content.ReasonMigrate {
			t.Fatalf("document %s: version %d, %d snapshots", d.ID, d.Version, len(vs))
		}
	}
}

func testTypeFlip(t *testing.T, h Harness) {
	st := h.Store
	ids := seed(t, st, "things", 5)
	run := mustStart(t, &content.Migrator{Store: st, Holder: "w1"}, "things", content.Number, 2)
	c, err := st.ClaimRun(ctx, run.ID, "w1", content.DefaultLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := st.Step(ctx, c, content.DefaultLeaseTTL)
		if err != nil {
			t.Fatal(err)
		}
		got := fieldType(t, st, "things", "v")
		if r.Status == content.RunDone {
			if got != content.Number || r.FinishedAt == nil || r.Converted != int64(len(ids)) {
				t.Fatalf("done run %+v: type %s with %d converted, want number with all %d", r, got, r.Converted, len(ids))
			}
			break
		}
		if got != content.Text {
			t.Fatalf("type flipped to %s before the last batch (cursor %s)", got, r.Cursor)
		}
	}
	// The new type is the field's from now on, for old and new documents.
	d := mustDocument(t, st, "things", ids[0])
	if _, err := st.Put(ctx, "things", content.Put{ID: ids[0], BaseVersion: d.Version, Set: content.Fields{"v": str("9")}}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("text into the flipped field: %v, want ErrInvalid", err)
	}
	mustPut(t, st, "things", content.Put{Set: content.Fields{"v": json.RawMessage("42")}})
	// A change to the same type, or of an unknown field, is no run.
	if _, err := st.StartRun(ctx, "things", "v", content.Number, 10); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("a run to the same type: %v, want ErrInvalid", err)
	}
	if _, err := st.StartRun(ctx, "things", "nope", content.Number, 10); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("a run of an unknown field: %v, want ErrInvalid", err)
	}
}

func testPendingRuns(t *testing.T, h Harness) {
	st := h.Store
	seed(t, st, "things", 3)
	mustCollection(t, st, "others", content.Field{Name: "v", Type: content.Text})
	m := &content.Migrator{Store: st, Holder: "w1"}
	r1 := mustStart(t, m, "things", content.Number, 10)
	r2 := mustStart(t, m, "others", content.RichText, 10)
	pending := func() []string {
		t.Helper()
		rs, err := st.Runs(ctx, content.RunFilter{Pending: true})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	if got := pending(); len(got) != 2 {
		t.Fatalf("pending runs %v, want both", got)
	}
	if _, err := st.ClaimRun(ctx, r1.ID, "w1", content.DefaultLeaseTTL); err != nil {
		t.Fatal(err)
	}
	if got := pending(); len(got) != 1 || got[0] != r2.ID {
		t.Fatalf("pending runs with one claimed %v, want [%s]", got, r2.ID)
	}
	// An expired claim makes the run pending again.
	h.Clock.Advance(content.DefaultLeaseTTL + 1)
	if got := pending(); len(got) != 2 {
		t.Fatalf("pending runs after the lease expired %v, want both", got)
	}
	c, err := st.ClaimRun(ctx, r1.ID, "w1", content.DefaultLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseRun(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := pending(); len(got) != 2 {
		t.Fatalf("pending runs after a release %v, want both", got)
	}
	if r, err := m.Drive(ctx, r1.ID); err != nil || r.Status != content.RunDone {
		t.Fatalf("drive: %+v %v", r, err)
	}
	if got := pending(); len(got) != 1 || got[0] != r2.ID {
		t.Fatalf("pending runs after one finished %v, want [%s]", got, r2.ID)
	}
	all, err := st.Runs(ctx, content.RunFilter{Collection: "things"})
	if err != nil || len(all) != 1 || all[0].ID != r1.ID {
		t.Fatalf("runs of things %+v %v", all, err)
	}
	if _, err := st.Run(ctx, "no-such-run"); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("missing run: %v, want ErrNotFound", err)
	}
}

func testFailFixResumeAbort(t *testing.T, h Harness) {
	st := h.Store
	ids := seed(t, st, "things", 20)
	bad := ids[11]
	d, _ := st.Document(ctx, "things", bad)
	mustPut(t, st, "things", content.Put{ID: bad, BaseVersion: d.Version, Set: content.Fields{"v": str("eleven")}})

	m := &content.Migrator{Store: st, Holder: "w1"}
	// A run can be aborted before it converted anything: a text→datetime
	// run, recorded and never driven, aborts to nothing.
	probe := mustStart(t, m, "things", content.DateTime, 3)
	if ab, err := m.Abort(ctx, probe.ID); err != nil || ab.Status != content.RunAborted || ab.Restored != 0 {
		t.Fatalf("abort an untouched run: %+v %v", ab, err)
	}
	// An unsupported pair is refused before a run exists.
	mustCollection(t, st, "flags", content.Field{Name: "on", Type: content.Boolean}, content.Field{Name: "when", Type: content.DateTime})
	if _, err := m.Start(ctx, "flags", "when", content.Number, 3); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("datetime→number: got %v, want refused before the run", err)
	}
	if runs, _ := st.Runs(ctx, content.RunFilter{Collection: "flags"}); len(runs) != 0 {
		t.Fatalf("a refused change left a run: %+v", runs)
	}

	run := mustStart(t, m, "things", content.Number, 3)
	_, err := m.Drive(ctx, run.ID)
	var failed *content.FailedError
	if !errors.As(err, &failed) || !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("drive: got %v, want a failed run", err)
	}
	r := failed.Run
	// One open run per field: a second is refused, naming the first.
	if _, err := m.Start(ctx, "things", "v", content.RichText, 3); !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), run.ID) {
		t.Fatalf("a second run of an open field: %v", err)
	}
	if r.Status != content.RunFailed || r.FailedDocumentID != bad || r.FailedValue != `"eleven"` || r.Cursor != ids[10] || r.Converted != 11 {
		t.Fatalf("failed run: %+v", r)
	}
	if fieldType(t, st, "things", "v") != content.Text {
		t.Fatal("type flipped on a failed run")
	}
	// Consistent: converted up to the cursor, untouched after it.
	for i, id := range ids {
		d, _ := st.Document(ctx, "things", id)
		want := str(fmt.Sprint(i))
		if i <= 10 {
			want = json.RawMessage(fmt.Sprint(i))
		}
		if i == 11 {
			want = str("eleven")
		}
		if string(d.Fields["v"]) != string(want) {
			t.Fatalf("doc %d: v = %s, want %s", i, d.Fields["v"], want)
		}
	}
	// While failed, a converted document takes the new type and one not
	// reached yet the old: the operator fixes the failing one in text.
	d, _ = st.Document(ctx, "things", bad)
	if _, err := st.Put(ctx, "things", content.Put{ID: bad, BaseVersion: d.Version, Set: content.Fields{"v": json.RawMessage("11")}}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("number into an unconverted document: %v", err)
	}
	d0, _ := st.Document(ctx, "things", ids[0])
	if _, err := st.Put(ctx, "things", content.Put{ID: ids[0], BaseVersion: d0.Version, Set: content.Fields{"v": str("0")}}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("text into a converted document: %v", err)
	}
	mustPut(t, st, "things", content.Put{ID: bad, BaseVersion: d.Version, Set: content.Fields{"v": str("11")}})

	// Abort restores what was converted and keeps the type.
	ab, err := m.Abort(ctx, run.ID)
	if err != nil || ab.Status != content.RunAborted || ab.Restored != 11 {
		t.Fatalf("abort: %+v %v", ab, err)
	}
	for i, id := range ids {
		d, _ := st.Document(ctx, "things", id)
		if string(d.Fields["v"]) != string(str(fmt.Sprint(i))) || string(d.Fields["keep"]) != `"k"` {
			t.Fatalf("after abort doc %d: %s", i, d.Fields)
		}
	}
	if fieldType(t, st, "things", "v") != content.Text {
		t.Fatal("abort changed the type")
	}

	// A fresh run now completes.
	run2 := mustStart(t, m, "things", content.Number, 7)
	// While it is running, writes to the field are refused, others pass.
	c, err := st.ClaimRun(ctx, run2.ID, "w1", content.DefaultLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	last := ids[len(ids)-1]
	dl, _ := st.Document(ctx, "things", last)
	if _, err := st.Put(ctx, "things", content.Put{ID: last, BaseVersion: dl.Version, Set: content.Fields{"v": str("1")}}); !errors.Is(err, tidemark.ErrConflict) {
		t.Fatalf("write to a migrating field: %v", err)
	}
	mustPut(t, st, "things", content.Put{ID: last, BaseVersion: dl.Version, Set: content.Fields{"keep": str("edited")}})
	// Another worker cannot take it while the lease lives; a stale
	// claim moves nothing.
	if _, err := st.ClaimRun(ctx, run2.ID, "w2", content.DefaultLeaseTTL); !errors.Is(err, tidemark.ErrClaimHeld) {
		t.Fatalf("second worker: %v", err)
	}
	stale := c
	stale.Token = "not-the-token"
	if _, err := st.Step(ctx, stale, content.DefaultLeaseTTL); !errors.Is(err, tidemark.ErrStaleClaim) {
		t.Fatalf("stale step: %v", err)
	}
	done, err := m.Drive(ctx, run2.ID)
	if err != nil || done.Status != content.RunDone || done.Converted != 20 {
		t.Fatalf("drive: %+v %v", done, err)
	}
	if fieldType(t, st, "things", "v") != content.Number {
		t.Fatal("type did not flip")
	}
	for i, id := range ids {
		d, _ := st.Document(ctx, "things", id)
		if string(d.Fields["v"]) != fmt.Sprint(i) {
			t.Fatalf("doc %d: v = %s", i, d.Fields["v"])
		}
	}
	if _, err := m.Abort(ctx, run2.ID); !errors.Is(err, tidemark.ErrConflict) {
		t.Fatalf("abort of a done run: %v", err)
	}
}

// Two workers never step one run: the second is refused while the lease
// lives, takes over once it expired, and the first then moves nothing.
func testClaimFence(t *testing.T, h Harness) {
	st := h.Store
	seed(t, st, "things", 10)
	run := mustStart(t, (&content.Migrator{Store: st, Holder: "w1"}), "things", content.Number, 3)
	ttl := content.DefaultLeaseTTL
	c1, err := st.ClaimRun(ctx, run.ID, "w1", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := st.Step(ctx, c1, ttl); err != nil || r.Cursor == "" || r.Converted != 3 {
		t.Fatalf("first step: %+v %v", r, err)
	}
	if _, err := st.ClaimRun(ctx, run.ID, "w2", ttl); !errors.Is(err, tidemark.ErrClaimHeld) {
		t.Fatalf("claim under a live lease: %v", err)
	}
	h.Clock.Advance(ttl + 1)
	c2, err := st.ClaimRun(ctx, run.ID, "w2", ttl)
	if err != nil {
		t.Fatalf("claim after the lease expired: %v", err)
	}
	if _, err := st.Step(ctx, c1, ttl); !errors.Is(err, tidemark.ErrStaleClaim) {
		t.Fatalf("the first worker's step after losing the claim: %v", err)
	}
	r, err := st.Run(ctx, run.ID)
	if err != nil || r.Converted != 3 || r.Holder != "w2" {
		t.Fatalf("after the stale step: %+v %v", r, err)
	}
	// The same holder re-enters its own run without waiting.
	c2b, err := st.ClaimRun(ctx, run.ID, "w2", ttl)
	if err != nil || c2b.Token == c2.Token {
		t.Fatalf("re-entry: %+v %v", c2b, err)
	}
	if _, err := st.Step(ctx, c2, ttl); !errors.Is(err, tidemark.ErrStaleClaim) {
		t.Fatalf("step with the token re-entry replaced: %v", err)
	}
	m := &content.Migrator{Store: st, Holder: "w2"}
	if r, err := m.Drive(ctx, run.ID); err != nil || r.Status != content.RunDone || r.Converted != 10 {
		t.Fatalf("drive: %+v %v", r, err)
	}
}

// Writers editing other fields of the collection while a migration runs
// are never lost and never deadlock with the batches; a write to the
// migrating field is refused while the run is running.
func testConcurrentWriters(t *testing.T, h Harness) {
	st := h.Store
	ids := seed(t, st, "things", 40)
	m := &content.Migrator{Store: st, Holder: "w1"}
	run := mustStart(t, m, "things", content.Number, 3)
	// The run waits after its first batch until the writers have edited
	// and been refused, so the edits overlap the batches on every
	// machine, however fast the run would otherwise be.
	firstBatch, overlapped := make(chan struct{}), make(chan struct{})
	var once sync.Once
	m.Progress = func(content.Run) { once.Do(func() { close(firstBatch); <-overlapped }) }
	done := make(chan error, 1)
	go func() {
		_, err := m.Drive(ctx, run.ID)
		done <- err
	}()
	<-firstBatch
	edits := map[string]int{}
	refused, editsDuring, released := 0, 0, false
	// finish checks, once the run has ended, that it converted every
	// document and lost no edit.
	finish := func(err error, steps int) {
		t.Helper()
		if err != nil {
			t.Fatalf("drive: %v", err)
		}
		if refused == 0 || editsDuring < 3 {
			t.Fatalf("the run ended before the edits overlapped it: %d edits, %d refused", editsDuring, refused)
		}
		for _, id := range ids {
			d, err := st.Document(ctx, "things", id)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(`"edit %d"`, edits[id]); edits[id] > 0 && string(d.Fields["keep"]) != want {
				t.Fatalf("doc %s keep = %s, want %s: an edit was lost", id, d.Fields["keep"], want)
			}
			var n float64
			if err := json.Unmarshal(d.Fields["v"], &n); err != nil {
				t.Fatalf("doc %s v = %s, not converted", id, d.Fields["v"])
			}
		}
		t.Logf("%d edits during the run, %d writes to the migrating field refused", steps, refused)
	}
	// The writers take a bounded number of steps: enough to overlap the
	// paused run and then its remaining batches; after them, the test
	// waits for the run to end.
	const maxSteps = 10 * 40
	for i := 0; i < maxSteps; i++ {
		if !released && refused > 0 && editsDuring >= 3 {
			close(overlapped)
			released = true
		}
		select {
		case err := <-done:
			finish(err, i)
			return
		default:
		}
		id := ids[i%len(ids)]
		d, err := st.Document(ctx, "things", id)
		if err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			_, err := st.Put(ctx, "things", content.Put{ID: id, BaseVersion: d.Version, Set: content.Fields{"v": str("1")}})
			switch {
			case errors.Is(err, tidemark.ErrConflict):
				refused++
			case err == nil:
				t.Fatalf("a write to the migrating field passed while the run was running")
			case errors.Is(err, tidemark.ErrInvalid):
				// the run finished between: v is a number now
			default:
				t.Fatal(err)
			}
			continue
		}
		_, err = st.Put(ctx, "things", content.Put{ID: id, BaseVersion: d.Version, Set: content.Fields{"keep": str(fmt.Sprintf("edit %d", edits[id]+1))}})
		if errors.Is(err, tidemark.ErrConflict) {
			continue // a batch converted the document since we read it
		}
		if err != nil {
			t.Fatal(err)
		}
		edits[id]++
		editsDuring++
	}
	if !released {
		// The run is paused until released: the writers never overlapped it.
		close(overlapped)
		t.Fatalf("%d steps without overlapping the run: %d edits, %d refused", maxSteps, editsDuring, refused)
	}
	finish(<-done, maxSteps)
}

func testDelete(t *testing.T, h Harness) {
	st := h.Store
	ids := seed(t, st, "notes", 3)
	d := mustPut(t, st, "notes", content.Put{ID: ids[0], BaseVersion: 1, Set: content.Fields{"v": str("edited")}, Actor: "ann"})
	if d.Version != 2 {
		t.Fatalf("put: version %d", d.Version)
	}
	// A delete based on an old version changes nothing, and returns no
	// action: a caller shows what was deleted only when something was.
	if a, err := st.Delete(ctx, "notes", ids[0], 1, content.Action{Actor: "bob"}); !errors.Is(err, tidemark.ErrConflict) || !reflect.ValueOf(a).IsZero() {
		t.Fatalf("stale delete: %+v %v, want no action and a conflict", a, err)
	}
	mustDocument(t, st, "notes", ids[0])
	a, err := st.Delete(ctx, "notes", ids[0], 2, content.Action{Actor: "bob", Forced: true, Note: "spam"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Action != content.ActionDelete || a.Version != 2 || string(a.Fields["v"]) != `"edited"` || a.Actor != "bob" || !a.Forced {
		t.Fatalf("delete's audit: %+v", a)
	}
	if _, err := st.Document(ctx, "notes", ids[0]); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("deleted document still reads: %v", err)
	}
	if _, err := st.Delete(ctx, "notes", ids[0], 2, content.Action{Actor: "bob"}); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	// The ID can be used again: its history went with it.
	if d := mustPut(t, st, "notes", content.Put{ID: ids[0], Set: content.Fields{"v": str("again")}}); d.Version != 1 {
		t.Fatalf("recreated at version %d", d.Version)
	}
	acts, err := st.Actions(ctx, content.ActionFilter{Collection: "notes", DocumentID: ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 2 || acts[0].Action != content.ActionDelete || acts[1].Action != content.ActionPut || acts[1].Actor != "ann" || acts[1].Version != 2 {
		t.Fatalf("audit, newest first: %+v", acts)
	}
	// No delete while a migration of the collection is unfinished: its
	// cursor and an abort's restorations count on the documents.
	m := &content.Migrator{Store: st, Holder: "w1"}
	run := mustStart(t, m, "notes", content.RichText, 1)
	if a, err := st.Delete(ctx, "notes", ids[1], 1, content.Action{Actor: "bob", Forced: true}); !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), run.ID) ||
		!reflect.ValueOf(a).IsZero() {
		t.Fatalf("delete during a run: %+v %v, want no action and a conflict naming the run", a, err)
	}
	mustDocument(t, st, "notes", ids[1])
	if _, err := st.Record(ctx, content.Action{Action: content.ActionMigrationStart, Collection: "notes"}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("an action without an actor: %v", err)
	}
	if _, err := st.Record(ctx, content.Action{Action: content.ActionMigrationStart, Collection: "notes", RunID: run.ID, Actor: "cy"}); err != nil {
		t.Fatal(err)
	}
	if acts, err := st.Actions(ctx, content.ActionFilter{RunID: run.ID}); err != nil || len(acts) != 1 || acts[0].Actor != "cy" {
		t.Fatalf("the run's audit: %+v %v", acts, err)
	}
}

// testAbortLeavesOneType: while a run is failed, a document at or before
// its cursor that the run did not convert (its field was empty when the
// run passed it, or it was created since with a low ID) has no type an
// abort and a finished run would agree on, so a value written to that
// field there is refused; after the abort every value of the field is of
// the type the field declares, and a later run converts them all.
func testAbortLeavesOneType(t *testing.T, h Harness) {
	st := h.Store
	ids := seed(t, st, "things", 12)
	// ids[2] has no v when the run walks it; ids[8] fails the run.
	mustPut(t, st, "things", content.Put{ID: ids[2], BaseVersion: 1, Unset: []string{"v"}})
	mustPut(t, st, "things", content.Put{ID: ids[8], BaseVersion: 1, Set: content.Fields{"v": str("eight")}})
	m := &content.Migrator{Store: st, Holder: "w1"}
	run := mustStart(t, m, "things", content.Number, 3)
	var failed *content.FailedError
	if _, err := m.Drive(ctx, run.ID); !errors.As(err, &failed) || failed.Run.Cursor != ids[7] {
		t.Fatalf("drive: %v, want failed after %s", err, ids[7])
	}
	const lowID = "00000000000000000000000002" // before every seeded document
	refused := []struct {
		name string
		put  content.Put
	}{
		{"a number into a passed empty field", content.Put{ID: ids[2], BaseVersion: 2, Set: content.Fields{"v": json.RawMessage("7")}}},
		{"text into a passed empty field", content.Put{ID: ids[2], BaseVersion: 2, Set: content.Fields{"v": str("7")}}},
		{"a new low-ID document with the field", content.Put{ID: lowID, Set: content.Fields{"v": json.RawMessage("5")}}},
	}
	for _, tc := range refused {
		_, err := st.Put(ctx, "things", tc.put)
		if !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), run.ID) {
			t.Errorf("%s while the run is failed: %v, want a conflict naming the run", tc.name, err)
		}
	}
	i := 0
	if _, err := st.Import(ctx, "things", func() (content.Put, bool, error) {
		i++
		return content.Put{ID: lowID, Set: content.Fields{"v": json.RawMessage("5")}}, i == 1, nil
	}); !errors.Is(err, tidemark.ErrConflict) {
		t.Errorf("import of a low-ID document with the field while the run is failed: %v, want a conflict", err)
	}
	// What leaves the field empty, and writes to other fields, pass.
	mustPut(t, st, "things", content.Put{ID: lowID, Set: content.Fields{"keep": str("low")}})
	mustPut(t, st, "things", content.Put{ID: ids[2], BaseVersion: 2, Set: content.Fields{"keep": str("edited"), "v": json.RawMessage("null")}})
	// A converted document takes the new type; the abort restores it.
	mustPut(t, st, "things", content.Put{ID: ids[0], BaseVersion: 2, Set: content.Fields{"v": json.RawMessage("70")}})

	if ab, err := m.Abort(ctx, run.ID); err != nil || ab.Status != content.RunAborted {
		t.Fatalf("abort: %+v %v", ab, err)
	}
	if got := fieldType(t, st, "things", "v"); got != content.Text {
		t.Fatalf("type after the abort %s, want text", got)
	}
	docs, err := st.Documents(ctx, "things", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		v, ok := d.Fields["v"]
		if !ok {
			continue
		}
		if _, err := content.Normalize(content.Text, v); err != nil {
			t.Errorf("after the abort %s has v = %s in a text field", d.ID, v)
		}
	}
	// So a later run meets only text.
	fix := mustDocument(t, st, "things", ids[8])
	mustPut(t, st, "things", content.Put{ID: ids[8], BaseVersion: fix.Version, Set: content.Fields{"v": str("8")}})
	if r, err := m.Drive(ctx, mustStart(t, m, "things", content.Number, 3).ID); err != nil || r.Status != content.RunDone {
		t.Fatalf("a later run: %+v %v", r, err)
	}
}

// testOversizedConversion: a conversion whose output a write would refuse
// (a value over content.MaxValueBytes, a document over
// content.MaxDocumentBytes) fails the run at that document, naming it and
// the reason, as a value the rule refuses does: the claim is released,
// the documents before it are converted, it is stored unchanged.
func testOversizedConversion(t *testing.T, h Harness) {
	st := h.Store
	rule, _ := content.RuleFor(content.Text, content.RichText)
	pad := str(strings.Repeat("p", 200_000))
	for _, tc := range []struct {
		name  string
		big   content.Fields
		limit int
	}{
		// Just under the value limit as text, over it as rich text.
		{"value", content.Fields{"v": str(strings.Repeat("x", content.MaxValueBytes-50))}, content.MaxValueBytes},
		// A value that stays under the limit, in a document that grows
		// past its own.
		{"document", content.Fields{"v": str(strings.Repeat("a\n\n", 4300)), "p1": pad, "p2": pad, "p3": pad, "p4": pad}, content.MaxDocumentBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			coll := "big" + tc.name
			mustCollection(t, st, coll, content.Field{Name: "v", Type: content.Text}, content.Field{Name: "p1", Type: content.Text},
				content.Field{Name: "p2", Type: content.Text}, content.Field{Name: "p3", Type: content.Text}, content.Field{Name: "p4", Type: content.Text})
			// The rule alone refuses the value that grows too large, and
			// converts the other.
			if _, err := rule.Apply(tc.big["v"]); (err != nil) != (tc.name == "value") {
				t.Fatalf("the %s case converts by the rule alone: %v", tc.name, err)
			}
			first := mustPut(t, st, coll, content.Put{ID: "01ARZ3NDEKTSV4RRFFQ69G5FA0", Set: content.Fields{"v": str("one")}})
			big := mustPut(t, st, coll, content.Put{ID: "01ARZ3NDEKTSV4RRFFQ69G5FA1", Set: tc.big})
			after := mustPut(t, st, coll, content.Put{ID: "01ARZ3NDEKTSV4RRFFQ69G5FA2", Set: content.Fields{"v": str("three")}})
			m := &content.Migrator{Store: st, Holder: "w1"}
			run := mustStart(t, m, coll, content.RichText, 10)
			_, err := m.Drive(ctx, run.ID)
			var failed *content.FailedError
			if !errors.As(err, &failed) || !errors.Is(err, tidemark.ErrInvalid) {
				t.Fatalf("drive: %v, want a failed run", err)
			}
			r, err := st.Run(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != content.RunFailed || r.FailedDocumentID != big.ID || r.Cursor != first.ID || r.Converted != 1 || r.Holder != "" ||
				!strings.Contains(r.Error, fmt.Sprint(tc.limit)) {
				t.Fatalf("run after an oversized conversion: %+v", r)
			}
			if d := mustDocument(t, st, coll, big.ID); d.Version != 1 || string(d.Fields["v"]) != string(big.Fields["v"]) {
				t.Fatalf("the oversized document changed: version %d", d.Version)
			}
			if d := mustDocument(t, st, coll, after.ID); d.Version != 1 {
				t.Fatalf("the document after it changed: version %d", d.Version)
			}
			if fieldType(t, st, coll, "v") != content.Text {
				t.Fatal("the type flipped")
			}
			// Fixed, the run resumes to the end.
			mustPut(t, st, coll, content.Put{ID: big.ID, BaseVersion: 1, Set: content.Fields{"v": str("two")}})
			if r, err := m.Drive(ctx, run.ID); err != nil || r.Status != content.RunDone || r.Converted != 3 {
				t.Fatalf("resume after the fix: %+v %v", r, err)
			}
		})
	}
}

// stepHook is a store whose Step first calls before, which may end the
// step with an error of its own.
type stepHook struct {
	content.Store
	before func(ctx context.Context) (context.Context, error)
}

func (s stepHook) Step(ctx context.Context, c content.RunClaim, ttl time.Duration) (content.Run, error) {
	ctx, err := s.before(ctx)
	if err != nil {
		return content.Run{}, err
	}
	return s.Store.Step(ctx, c, ttl)
}

// testStoppedWorkerReleasesItsClaim: a worker interrupted in the middle of
// a batch (its context cancelled while Step runs, as Ctrl-C or SIGTERM
// does), or whose batch failed for a reason that is not the data's, gives
// its claim up: another worker takes the run at once, with no lease to
// wait out, and finishes it.
func testStoppedWorkerReleases(t *testing.T, h Harness) {
	st := h.Store
	seed(t, st, "things", 10)
	boom := errors.New("the database went away")
	for _, tc := range []struct {
		name string
		stop func(ctx context.Context, cancel context.CancelFunc) (context.Context, error)
		want error
	}{
		{"interrupted in a batch", func(ctx context.Context, cancel context.CancelFunc) (context.Context, error) {
			cancel()
			return ctx, nil
		}, context.Canceled},
		{"a batch that failed", func(ctx context.Context, _ context.CancelFunc) (context.Context, error) { return ctx, boom }, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := mustStart(t, &content.Migrator{Store: st, Holder: "w1"}, "things", content.Number, 3)
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			steps := 0
			m := &content.Migrator{Store: stepHook{Store: st, before: func(ctx context.Context) (context.Context, error) {
				if steps++; steps == 2 {
					return tc.stop(ctx, cancel)
				}
				return ctx, nil
			}}, Holder: "w1"}
			if _, err := m.Drive(wctx, run.ID); !errors.Is(err, tc.want) {
				t.Fatalf("drive: %v, want %v", err, tc.want)
			}
			r, err := st.Run(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != content.RunRunning || r.Converted != 3 || r.Holder != "" || r.LeaseExpiresAt != nil {
				t.Fatalf("run after the worker stopped: %+v, want running and unclaimed after one batch", r)
			}
			// No lease to wait out: the clock does not move.
			if r, err := (&content.Migrator{Store: st, Holder: "w2"}).Drive(ctx, run.ID); err != nil || r.Status != content.RunDone || r.Converted != 10 {
				t.Fatalf("another worker at once: %+v %v", r, err)
			}
			// The next case migrates the field back.
			if r, err := (&content.Migrator{Store: st, Holder: "w2"}).Drive(ctx, mustStartTo(t, st, "things", content.Text).ID); err != nil || r.Status != content.RunDone {
				t.Fatalf("migrate back: %+v %v", r, err)
			}
		})
	}
}

func mustStartTo(tb testing.TB, st content.Store, coll string, to content.FieldType) content.Run {
	tb.Helper()
	return mustStart(tb, &content.Migrator{Store: st, Holder: "w1"}, coll, to, 3)
}
