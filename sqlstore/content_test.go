package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
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

func TestContentVersionedWrites(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := sqltest.MustOpen(t, b, sqltest.NewEnv(1))
		st := db.Content()
		mustCollection(t, st, "notes", content.Field{Name: "title", Type: content.Text}, content.Field{Name: "n", Type: content.Number})

		d := mustPut(t, st, "notes", content.Put{Set: content.Fields{"title": str("hello"), "n": json.RawMessage("3")}})
		if d.Version != 1 {
			t.Fatalf("created at version %d, want 1", d.Version)
		}
		d2 := mustPut(t, st, "notes", content.Put{ID: d.ID, BaseVersion: 1, Set: content.Fields{"title": str("hello, world")}})
		if d2.Version != 2 || string(d2.Fields["n"]) != "3" {
			t.Fatalf("update: %+v", d2)
		}
		// A write based on version 1 after version 2 exists is refused and
		// changes nothing.
		_, err := st.Put(ctx, "notes", content.Put{ID: d.ID, BaseVersion: 1, Set: content.Fields{"title": str("lost update")}})
		if !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("stale write: got %v, want ErrConflict", err)
		}
		got, _ := st.Document(ctx, "notes", d.ID)
		if got.Version != 2 || string(got.Fields["title"]) != `"hello, world"` {
			t.Fatalf("after stale write: %+v", got)
		}
		vs, err := st.Versions(ctx, "notes", d.ID)
		if err != nil || len(vs) != 2 || vs[0].Reason != content.ReasonCreate || vs[1].Reason != content.ReasonPut {
			t.Fatalf("versions: %+v %v", vs, err)
		}
		// Creating over an existing ID is a conflict too.
		if _, err := st.Put(ctx, "notes", content.Put{ID: d.ID, Set: content.Fields{"title": str("x")}}); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("create over existing: %v", err)
		}
		// Validation names the document, the field and the value.
		_, err = st.Put(ctx, "notes", content.Put{ID: d.ID, BaseVersion: 2, Set: content.Fields{"n": str("seven")}})
		var inv *tidemark.InvalidError
		if !errors.As(err, &inv) || inv.Value != `"seven"` || inv.Field != "document notes/"+d.ID+" field n" {
			t.Fatalf("invalid value: %#v", err)
		}
		if _, err := st.Put(ctx, "notes", content.Put{Set: content.Fields{"nope": str("x")}}); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("unknown field: %v", err)
		}
		// The built-in pages collection exists, and its overrides read back.
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

func fieldType(tb testing.TB, st *sqlstore.ContentStore, coll, field string) content.FieldType {
	tb.Helper()
	c, err := st.Collection(context.Background(), coll)
	if err != nil {
		tb.Fatal(err)
	}
	f, _ := c.Field(field)
	return f.Type
}

func TestMigrationFailFixResumeAndAbort(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := sqltest.MustOpen(t, b, sqltest.NewEnv(2))
		st := db.Content()
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
	})
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

// Two workers never step one run: the second is refused while the lease
// lives, takes over once it expired, and the first then moves nothing.
func TestMigrationClaimFence(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(4)
		db := sqltest.MustOpen(t, b, env)
		st := db.Content()
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
		env.Clock.Advance(ttl + 1)
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
	})
}

// Writers editing other fields of the collection while a migration runs
// are never lost and never deadlock with the batches; a write to the
// migrating field is refused while the run is running.
func TestMigrationWithConcurrentWriters(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := sqltest.MustOpen(t, b, sqltest.NewEnv(5))
		st := db.Content()
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
		for i := 0; ; i++ {
			if !released && refused > 0 && editsDuring >= 3 {
				close(overlapped)
				released = true
			}
			select {
			case err := <-done:
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
				t.Logf("%d edits during the run, %d writes to the migrating field refused", i, refused)
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
	})
}
