package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func mustCollection(tb testing.TB, st *sqlstore.ContentStore, name string, fields ...content.Field) {
	tb.Helper()
	if _, err := st.CreateCollection(context.Background(), name, fields); err != nil {
		tb.Fatalf("create collection %s: %v", name, err)
	}
}

func mustPut(tb testing.TB, st *sqlstore.ContentStore, coll string, p content.Put) content.Document {
	tb.Helper()
	d, err := st.Put(context.Background(), coll, p)
	if err != nil {
		tb.Fatalf("put %s/%s: %v", coll, p.ID, err)
	}
	return d
}

func str(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

// The built-in pages collection exists, and its overrides read back.
// (Versioned writes themselves are in contenttest, run by
// TestContentConformance.)
func TestContentPageOverrides(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := sqltest.MustOpen(t, b, sqltest.NewEnv(1))
		st := db.Content()
		ev := db.IDs.New()
		if _, ok, err := st.PageOverrides(ctx, ev); ok || err != nil {
			t.Fatalf("overrides of a page without document: %v %v", ok, err)
		}
		mustPut(t, st, content.PagesCollection, content.Put{ID: ev, Set: content.Fields{"title": str("Corrected"), "notes": json.RawMessage(`[{"_type":"block","children":[{"_type":"span","text":"see also"}]}]`)}})
		o, ok, err := st.PageOverrides(ctx, ev)
		if err != nil || !ok || !o.HasTitle || o.Title != "Corrected" || o.NotesText != "see also" {
			t.Fatalf("overrides: %+v %v %v", o, ok, err)
		}
	})
}

// seed creates n documents whose field v is text, "0".."n-1" (and so
// convertible to number and, wrapped, to rich text).
func seed(tb testing.TB, st *sqlstore.ContentStore, coll string, n int) []string {
	tb.Helper()
	mustCollection(tb, st, coll, content.Field{Name: "v", Type: content.Text}, content.Field{Name: "keep", Type: content.Text})
	i := 0
	var ids []string
	_, err := st.Import(context.Background(), coll, func() (content.Put, bool, error) {
		if i == n {
			return content.Put{}, false, nil
		}
		i++
		return content.Put{Set: content.Fields{"v": str(fmt.Sprint(i - 1)), "keep": str("k")}}, true, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	docs, err := st.Documents(context.Background(), coll, "", n+1)
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
	r, err := m.Start(context.Background(), coll, "v", to, batch)
	if err != nil {
		tb.Fatalf("start %s.v→%s: %v", coll, to, err)
	}
	return r
}

// An injected error at each boundary of a batch rolls the whole batch back;
// driving again completes with every value converted once.
func TestMigrationErrorAtEveryBoundary(t *testing.T) {
	points := []string{"migrate.batch.after-convert", "migrate.batch.before-flip", "migrate.batch.before-commit"}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for _, p := range points {
			t.Run(p, func(t *testing.T) {
				ctx := context.Background()
				db := sqltest.MustOpen(t, b, sqltest.NewEnv(3))
				st := db.Content()
				ids := seed(t, st, "things", 10)
				m := &content.Migrator{Store: st, Holder: "w1"}
				run := mustStart(t, m, "things", content.RichText, 4)
				if err := failpoint.Arm(p + "=error@1"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(failpoint.Reset)
				var fe *failpoint.Error
				if _, err := m.Drive(ctx, run.ID); !errors.As(err, &fe) {
					t.Fatalf("drive with %s armed: %v", p, err)
				}
				failpoint.Reset()
				r, _ := st.Run(ctx, run.ID)
				if r.Status != content.RunRunning {
					t.Fatalf("after the error: %+v", r)
				}
				if _, err := m.Drive(ctx, run.ID); err != nil {
					t.Fatal(err)
				}
				for i, id := range ids {
					d, _ := st.Document(ctx, "things", id)
					want := fmt.Sprintf(`[{"_type":"block","children":[{"_type":"span","text":"%d"}]}]`, i)
					if string(d.Fields["v"]) != want {
						t.Fatalf("doc %d: %s", i, d.Fields["v"])
					}
				}
			})
		}
	})
}

// The versioned-write helper itself refuses a stale base in its own
// conditional update (not only in Put's read), names the document, and
// rolls back everything written with it, extra statements included.
func TestWriteVersionsHelper(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := sqltest.MustOpen(t, b, sqltest.NewEnv(6))
		st := db.Content()
		ids := seed(t, st, "things", 3)
		f := func(s string) content.Fields { return content.Fields{"v": str(s), "keep": str("k")} }
		extraRan := 0
		extra := func() error { extraRan++; return nil }
		// Two good writes and one based on version 0 of an existing one.
		err := st.WriteVersionsForTest(ctx, "things", ids, []int64{1, 1, 2}, []content.Fields{f("a"), f("b"), f("c")}, extra)
		if !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), ids[2]) {
			t.Fatalf("stale base: %v", err)
		}
		if extraRan != 0 {
			t.Fatal("extra statements ran after a refused write")
		}
		for i, id := range ids {
			d, _ := st.Document(ctx, "things", id)
			vs, _ := st.Versions(ctx, "things", id)
			if d.Version != 1 || len(vs) != 1 || string(d.Fields["v"]) != string(str(fmt.Sprint(i))) {
				t.Fatalf("doc %d after a refused batch: version %d, %d snapshots, %s", i, d.Version, len(vs), d.Fields)
			}
		}
		// An error from an extra statement rolls back the documents.
		boom := errors.New("boom")
		if err := st.WriteVersionsForTest(ctx, "things", ids[:1], []int64{1}, []content.Fields{f("x")}, func() error { return boom }); !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if d, _ := st.Document(ctx, "things", ids[0]); d.Version != 1 {
			t.Fatalf("documents kept after the extra statement failed: %+v", d)
		}
		// Good writes move every document on by one, with one snapshot each.
		if err := st.WriteVersionsForTest(ctx, "things", ids, []int64{1, 1, 1}, []content.Fields{f("a"), f("b"), f("c")}, extra); err != nil || extraRan != 1 {
			t.Fatalf("good batch: %v (extra ran %d)", err, extraRan)
		}
		for _, id := range ids {
			vs, _ := st.Versions(ctx, "things", id)
			if len(vs) != 2 || vs[1].Version != 2 || vs[1].Reason != content.ReasonPut {
				t.Fatalf("versions of %s: %+v", id, vs)
			}
		}
		// The same in a larger batch: one stale base in the middle refuses
		// it all, and the others commit when it is fixed.
		many := seed(t, st, "many", 40)
		bases, fields := make([]int64, len(many)), make([]content.Fields, len(many))
		for i := range many {
			bases[i], fields[i] = 1, f(fmt.Sprint("new", i))
		}
		bases[17] = 3
		err = st.WriteVersionsForTest(ctx, "many", many, bases, fields, extra)
		if !errors.Is(err, tidemark.ErrConflict) || !strings.Contains(err.Error(), many[17]) || extraRan != 1 {
			t.Fatalf("stale base in a large batch: %v (extra ran %d)", err, extraRan)
		}
		for _, id := range many {
			if d, _ := st.Document(ctx, "many", id); d.Version != 1 {
				t.Fatalf("document %s moved on in a refused batch: %+v", id, d)
			}
		}
		bases[17] = 1
		if err := st.WriteVersionsForTest(ctx, "many", many, bases, fields, extra); err != nil || extraRan != 2 {
			t.Fatalf("large batch: %v (extra ran %d)", err, extraRan)
		}
		for i, id := range many {
			d := mustDoc(t, st, "many", id)
			vs, _ := st.Versions(ctx, "many", id)
			if d.Version != 2 || string(d.Fields["v"]) != string(str(fmt.Sprint("new", i))) || len(vs) != 2 ||
				vs[1].Version != 2 || string(vs[1].Fields["v"]) != string(d.Fields["v"]) || vs[1].Reason != content.ReasonPut {
				t.Fatalf("document %d after a large batch: %+v, versions %+v", i, d, vs)
			}
		}
	})
}

func mustDoc(t *testing.T, st content.Store, coll, id string) content.Document {
	t.Helper()
	d, err := st.Document(context.Background(), coll, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
