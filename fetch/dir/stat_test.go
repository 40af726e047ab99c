package dir_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/dir"
)

// statFetcher is a Fetcher whose runs start an hour from now, so the files
// a test writes are old enough for their status to be trusted, and that
// records the files it opens.
func statFetcher(t *testing.T, root string) (*dir.Fetcher, *[]string) {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("a file's status is trusted on Linux and macOS only")
	}
	f := &dir.Fetcher{}
	f.SetNow(func() time.Time { return time.Now().Add(time.Hour) })
	var opened []string
	f.SetBeforeOpen(func(rel string) {
		if fi, err := os.Lstat(filepath.Join(root, rel)); err == nil && fi.Mode().IsRegular() {
			opened = append(opened, rel)
		}
	})
	return f, &opened
}

func mustFetch(t *testing.T, f *dir.Fetcher, root, cursor string) tidemark.FetchResult {
	t.Helper()
	res, err := f.Fetch(context.Background(), tidemark.Source{Kind: "dir", Location: root}, cursor)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func titles(items []tidemark.Item) string {
	var s []string
	for _, it := range items {
		s = append(s, it.Title)
	}
	return strings.Join(s, "|")
}

// A run reads again only the files whose status (size, modification and
// change times, inode) changed since the run that hashed them: an edit
// that keeps a file's size and puts its modification time back is still
// seen (its change time moved), and so is a file replaced by another of
// the same size and time; a touch reads the file and finds no change.
func TestDirReadsOnlyTheFilesWhoseStatusChanged(t *testing.T) {
	root := mustRealDir(t)
	mustWrite(t, root, "a.txt", "alpha\n")
	mustWrite(t, root, "b.txt", "bravo\n")
	mustWrite(t, root, "sub/c.txt", "charlie\n")
	f, opened := statFetcher(t, root)

	res := mustFetch(t, f, root, "")
	if len(res.Items) != 3 || len(*opened) != 3 {
		t.Fatalf("first run: items %q, opened %q", titles(res.Items), *opened)
	}
	m, err := dir.DecodeManifest(res.Cursor)
	if err != nil || len(m.Stat) != 3 {
		t.Fatalf("first run's manifest keeps the status of %d files (%v), want 3: %s", len(m.Stat), err, res.Cursor)
	}
	cursor := res.Cursor

	*opened = nil
	res = mustFetch(t, f, root, cursor)
	if len(res.Items) != 0 || len(*opened) != 0 || res.Cursor != cursor {
		t.Fatalf("nothing changed: items %q, opened %q, cursor moved %v", titles(res.Items), *opened, res.Cursor != cursor)
	}

	// The same size, the modification time put back.
	p := filepath.Join(root, "a.txt")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, root, "a.txt", "ALPHA\n")
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	// Another file of the same size and time renamed over b.txt.
	q := filepath.Join(root, "b.txt")
	bi, err := os.Stat(q)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, root, "b.new", "BRAVO\n")
	if err := os.Chtimes(filepath.Join(root, "b.new"), bi.ModTime(), bi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "b.new"), q); err != nil {
		t.Fatal(err)
	}
	*opened = nil
	res = mustFetch(t, f, root, cursor)
	if got := titles(res.Items); got != "changed a.txt|changed b.txt" || !slices.Equal(*opened, []string{"a.txt", "b.txt"}) {
		t.Fatalf("two files edited behind their times: items %q, opened %q", got, *opened)
	}
	cursor = res.Cursor

	// A touch: read, unchanged, and not read again after.
	later := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(root, "sub/c.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	*opened = nil
	res = mustFetch(t, f, root, cursor)
	if len(res.Items) != 0 || !slices.Equal(*opened, []string{"sub/c.txt"}) {
		t.Fatalf("a touched file: items %q, opened %q", titles(res.Items), *opened)
	}
	*opened = nil
	if res = mustFetch(t, f, root, res.Cursor); len(*opened) != 0 {
		t.Fatalf("after the touch was read: opened %q", *opened)
	}

	// A manifest without status (an earlier release's, a skip's): every
	// file is read, and the next manifest keeps their status.
	plain, err := f.ResolveCursor(context.Background(), tidemark.Source{Kind: "dir"}, res.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, `"stat"`) {
		t.Fatalf("a skip target keeps the status it was given: %s", plain)
	}
	*opened = nil
	res = mustFetch(t, f, root, plain)
	if len(res.Items) != 0 || len(*opened) != 3 || !strings.Contains(res.Cursor, `"stat"`) {
		t.Fatalf("from a manifest without status: items %q, opened %q, cursor %s", titles(res.Items), *opened, res.Cursor)
	}
}

// A file written too shortly before a run for its times to tell a later
// write from it (a file system's time stamps are coarse) is read again by
// the next run, however its status reads.
func TestDirReadsARecentFileAgain(t *testing.T) {
	root := mustRealDir(t)
	mustWrite(t, root, "a.txt", "alpha\n")
	f, opened := statFetcher(t, root)
	f.SetNow(time.Now)
	res := mustFetch(t, f, root, "")
	if m, err := dir.DecodeManifest(res.Cursor); err != nil || len(m.Stat) != 0 {
		t.Fatalf("the status of a file written just now was kept: %s (%v)", res.Cursor, err)
	}
	*opened = nil
	mustFetch(t, f, root, res.Cursor)
	if !slices.Equal(*opened, []string{"a.txt"}) {
		t.Fatalf("a file written just before the last run: opened %q, want it read again", *opened)
	}
}

// A manifest's status must be of files it holds, in the form a run writes.
func TestDirManifestStatIsChecked(t *testing.T) {
	h := sha("x")
	for _, cur := range []string{
		`{"files":{},"stat":{"a.txt":"1:2:3:4:5"}}`,
		`{"files":{"a.txt":"` + h + `"},"stat":{"a.txt":"one"}}`,
	} {
		if _, err := dir.DecodeManifest(cur); err == nil {
			t.Errorf("%s read", cur)
		}
	}
}
