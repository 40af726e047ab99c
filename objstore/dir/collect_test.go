package dir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tidemark/tidemark/objstore"
)

// mustTemp plants a temporary file named name in dir, last written age ago.
func mustTemp(tb testing.TB, dir, name string, age time.Duration) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("half a page"), 0o644); err != nil {
		tb.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(p, at, at); err != nil {
		tb.Fatal(err)
	}
	return p
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// slotTemp is the name a write under lock slot leaves when it dies
// between creating its temporary file and renaming it.
func slotTemp(slot int, rand string) string { return fmt.Sprintf(".tmp-%02d-%s", slot, rand) }

// A write killed between its temporary file and its rename leaves the file
// behind; the store collects it (List in the directories it walks, Open in
// its root), never lists it as an object, and never takes the temporary
// file of a write in flight: one whose lock is held (whatever its age),
// or, for a name that does not say its lock (written before names did),
// one younger than staleTempAge.
func TestStaleTempFilesAreCollected(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"changes/a.html", "changes/b.html", "index.html"} {
		if _, err := s.Put(ctx, key, []byte("page "+key), objstore.PutOptions{Generation: 1}); err != nil {
			t.Fatal(err)
		}
	}
	changes := filepath.Join(root, "changes")
	inFlight := slotOf("changes/b.html")
	orphanSlot := slotOf("changes/a.html")
	if orphanSlot == inFlight {
		t.Fatal("pick keys with different lock slots")
	}
	orphan := mustTemp(t, changes, slotTemp(orphanSlot, "111"), 0)            // its writer is gone: no lock held
	writing := mustTemp(t, changes, slotTemp(inFlight, "222"), 48*time.Hour)  // its writer holds the lock, however slow
	oldLegacy := mustTemp(t, changes, ".tmp-333", staleTempAge+time.Minute)   // no lock named: old enough
	freshLegacy := mustTemp(t, changes, ".tmp-444", staleTempAge-time.Minute) // no lock named: may be in flight
	rootOrphan := mustTemp(t, root, slotTemp(slotOf("index.html"), "555"), 0)

	unlock, err := lockFile(s.lockPath(inFlight))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := s.List(ctx, "changes/", func(in objstore.Info) error { keys = append(keys, in.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"changes/a.html", "changes/b.html"}) {
		t.Errorf("List changes/ = %v: only the objects", keys)
	}
	for p, want := range map[string]bool{orphan: false, writing: true, oldLegacy: false, freshLegacy: true} {
		if exists(p) != want {
			t.Errorf("after List: %s exists %v, want %v", filepath.Base(p), !want, want)
		}
	}
	unlock()
	if _, err := Open(root); err != nil {
		t.Fatal(err)
	}
	if exists(rootOrphan) {
		t.Errorf("after Open: the root's orphan %s is still there", filepath.Base(rootOrphan))
	}
	// The write finished (or died) and let go of its lock: now it is an orphan.
	if err := s.List(ctx, "changes/", func(objstore.Info) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if exists(writing) || !exists(freshLegacy) {
		t.Errorf("after the lock was released: %s exists %v (want gone), %s exists %v (want kept)",
			filepath.Base(writing), exists(writing), filepath.Base(freshLegacy), exists(freshLegacy))
	}
	for _, key := range []string{"changes/a.html", "changes/b.html", "index.html"} {
		mustGet(t, s, key, "page "+key)
	}
}

// A write's temporary files name the lock it holds while they exist, so
// a collector holding that lock knows they are not in flight.
func TestTempFilesNameTheirLock(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.writeTemp(s.root, slotOf("changes/a.html"), []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if slot, named, ok := tempName(filepath.Base(p)); !ok || !named || slot != slotOf("changes/a.html") {
		t.Fatalf("temp file %s: slot %d %v, want %d", filepath.Base(p), slot, ok, slotOf("changes/a.html"))
	}
}

func mustGet(tb testing.TB, s *Store, key, want string) {
	tb.Helper()
	o, err := s.Get(context.Background(), key)
	if err != nil || string(o.Body) != want {
		tb.Fatalf("get %s: %q %v, want %q", key, o.Body, err, want)
	}
}

// A key whose name starts with "tmp-" has a sidecar (".tmp-….meta") that
// looks like a temporary file: the collector never takes it, however old,
// and the object stays whole.
func TestAnObjectNamedLikeATempFileIsNeverCollected(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"notes/tmp-07-report.html", "notes/tmp-07-123", "tmp-foo.html", "tmp-12345"}
	for _, key := range keys {
		if _, err := s.Put(ctx, key, []byte("page "+key), objstore.PutOptions{Generation: 1}); err != nil {
			t.Fatal(err)
		}
	}
	// Old enough for the age rule.
	old := time.Now().Add(-48 * time.Hour)
	if err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			return os.Chtimes(p, old, old)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a list collects; the second finds what the first left
		var listed []string
		if err := s.List(ctx, "", func(in objstore.Info) error { listed = append(listed, in.Key); return nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(root); err != nil {
			t.Fatal(err)
		}
		for _, key := range keys {
			if !slices.Contains(listed, key) {
				t.Fatalf("%s is not listed after the collector ran: %v", key, listed)
			}
			if _, err := s.Get(ctx, key); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
		}
	}
}
