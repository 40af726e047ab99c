package dir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/dir"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func mustWrite(tb testing.TB, root, rel, content string) {
	tb.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func TestDirAddedChangedRemovedFiles(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		root := t.TempDir()
		mustWrite(t, root, "a.txt", "alpha\r\n")
		mustWrite(t, root, "sub/b.md", "# bravo\n")
		mustWrite(t, root, ".hidden/secret", "x")
		mustWrite(t, root, "bin.dat", "\x00\x01\x02")
		if err := os.Symlink("/etc/passwd", filepath.Join(root, "link")); err != nil {
			t.Fatal(err)
		}
		h := fetchtest.MustHarness(t, b, "dir", root, nil, &dir.Fetcher{})

		rep := h.MustRun(t, tidemark.OutcomeItems)
		evs := h.Events(t)
		if rep.EventsNew != 3 || len(evs) != 3 || evs["sub/b.md"].Title != "added sub/b.md" {
			t.Fatalf("first run: %+v %v", rep, evs)
		}
		if ev := h.Evidence(t, evs["a.txt"].ID, 0); !strings.HasPrefix(ev, "file a.txt\nchange added\nsha256 ") || !strings.HasSuffix(ev, "\nalpha\n") {
			t.Fatalf("evidence:\n%s", ev)
		}
		if ev := h.Evidence(t, evs["bin.dat"].ID, 0); strings.Contains(ev, "\x00") {
			t.Fatalf("binary content inlined: %q", ev)
		}
		h.MustRun(t, tidemark.OutcomeEmpty)

		mustWrite(t, root, "a.txt", "alpha two\n")
		if err := os.Remove(filepath.Join(root, "sub/b.md")); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, root, "c.txt", "charlie\n")
		rep = h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsNew != 1 || rep.EventsChanged != 2 {
			t.Fatalf("change run: %+v", rep)
		}
		evs = h.Events(t)
		if ev := h.Evidence(t, evs["sub/b.md"].ID, 0); !strings.Contains(ev, "change removed\nprevious ") || evs["sub/b.md"].Title != "removed sub/b.md" {
			t.Fatalf("removal evidence:\n%s", ev)
		}
		if evs["a.txt"].Revision != 2 || !strings.Contains(h.Evidence(t, evs["a.txt"].ID, 0), "change changed") {
			t.Fatalf("change: %+v", evs["a.txt"])
		}
		m, err := dir.DecodeManifest(h.Current(t).Cursor)
		if err != nil || len(m.Files) != 3 || m.Files["sub/b.md"] != "" {
			t.Fatalf("manifest: %v %+v", err, m)
		}

		// Re-adding the removed file with its old content is a change too.
		mustWrite(t, root, "sub/b.md", "# bravo\n")
		rep = h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsChanged != 1 || h.Events(t)["sub/b.md"].Revision != 3 {
			t.Fatalf("re-add: %+v", rep)
		}
	})
}

func TestDirLimitsAndFailures(t *testing.T) {
	b := sqltest.Backends()[0]
	root := t.TempDir()
	for _, n := range []string{"1.txt", "2.txt", "3.log"} {
		mustWrite(t, root, n, n)
	}
	h := fetchtest.MustHarness(t, b, "dir", root, map[string]string{dir.ConfigMaxFiles: "2"}, &dir.Fetcher{})
	rep := h.MustRun(t, tidemark.OutcomeInvalid)
	if !strings.Contains(rep.Error, "more than 2 files") || h.Current(t).Cursor != "" {
		t.Fatalf("over the limit: %q", rep.Error)
	}

	h = fetchtest.MustHarness(t, b, "dir", root, map[string]string{dir.ConfigMaxFiles: "2", dir.ConfigInclude: "*.txt"}, &dir.Fetcher{})
	if rep := h.MustRun(t, tidemark.OutcomeItems); rep.EventsNew != 2 {
		t.Fatalf("include: %+v", rep)
	}

	h = fetchtest.MustHarness(t, b, "dir", filepath.Join(root, "missing"), nil, &dir.Fetcher{})
	h.MustRun(t, tidemark.OutcomeUnreachable)
}
