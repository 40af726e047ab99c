package dir_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/objstore/objstoretest"
)

func TestConformance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		s, err := dir.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// A store whose directory was deleted under an open Store (an operator
// emptied the wiki while a daemon or serve ran) takes writes again: the
// folder and its lock files are made anew, not refused with a lock error.
func TestWritesAfterTheDirectoryWasDeleted(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "wiki")
	s, err := dir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "changes/a.html", []byte("one"), objstore.PutOptions{Generation: 1}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "changes/a.html"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("get after the deletion: %v, want not found", err)
	}
	if _, err := s.Put(ctx, "index.html", []byte("two"), objstore.PutOptions{Cond: objstore.Cond{IfNoneMatch: true}, Generation: 1}); err != nil {
		t.Fatalf("put after the deletion: %v", err)
	}
	if o, err := s.Get(ctx, "index.html"); err != nil || string(o.Body) != "two" {
		t.Fatalf("get %q %v", o.Body, err)
	}
	if err := s.Delete(ctx, "index.html"); err != nil {
		t.Fatal(err)
	}
}

// A read is never torn by a write of another process: the body and the
// generation Get returns are of one write. A publisher reads back the page
// it wrote while another process writes a newer generation of it; a body
// of the newer write under its own older generation would look like its
// write corrupted (a read-back that differs), not like the newer
// generation that overtook it.
func TestGetIsNotTornByAWriteOfAnotherProcess(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writer, err := dir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := dir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	writer.NoSync, reader.NoSync = true, true
	const key, writes = "changes/p.html", 200
	body := func(gen int64) []byte { return []byte(fmt.Sprintf("<p>generation %d</p>", gen)) }
	if _, err := objstore.PutGeneration(ctx, writer, key, body(1), 1, ""); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for gen := int64(2); gen <= writes; gen++ {
			if _, err := objstore.PutGeneration(ctx, writer, key, body(gen), gen, ""); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var torn error
	for reads := 0; torn == nil; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
		o, err := reader.Get(ctx, key)
		if err != nil {
			torn = fmt.Errorf("read %d: %w", reads, err)
		} else if want := body(o.Generation); string(o.Body) != string(want) {
			torn = fmt.Errorf("read %d: generation %d with the body %q, want %q", reads, o.Generation, o.Body, want)
		}
	}
	if err := <-done; err != nil { // the writer ends before the directory is removed
		t.Error(err)
	}
	t.Fatal(torn)
}

// handEdit rewrites the file of key behind the store's back, as an
// operator's editor would, and gives it a modification time of its own
// (a filesystem's clock may not have ticked since the store wrote it).
func handEdit(tb testing.TB, s *dir.Store, key, body string) {
	tb.Helper()
	p := filepath.Join(s.Root(), filepath.FromSlash(key))
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
	at := time.Now().Add(time.Minute)
	if err := os.Chtimes(p, at, at); err != nil {
		tb.Fatal(err)
	}
}

// A file edited in place by hand (its sidecar untouched) is a different
// object: Head and List report the ETag of the bytes it holds, so a sweep
// comparing ETags sees the change, and a compare-and-swap on the ETag the
// sidecar recorded fails, while one on the ETag reported succeeds.
func TestAFileEditedByHandIsAnotherVersion(t *testing.T) {
	for _, edit := range []struct{ name, body string }{
		{"same size", "TWO"},
		{"other size", "HACKED BY HAND"},
	} {
		t.Run(edit.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := dir.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			const key = "changes/a.html"
			put, err := s.Put(ctx, key, []byte("one"), objstore.PutOptions{Generation: 3})
			if err != nil {
				t.Fatal(err)
			}
			handEdit(t, s, key, edit.body)
			got, err := s.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			head, err := s.Head(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if head.ETag == put.ETag || head.ETag != got.ETag || head.Size != int64(len(edit.body)) {
				t.Fatalf("head after a hand edit: %+v, want the ETag %s of the bytes held (written: %s)", head, got.ETag, put.ETag)
			}
			var listed []objstore.Info
			if err := s.List(ctx, "changes/", func(in objstore.Info) error { listed = append(listed, in); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(listed) != 1 || listed[0].ETag != got.ETag {
				t.Fatalf("list after a hand edit: %+v, want the ETag %s", listed, got.ETag)
			}
			_, err = s.Put(ctx, key, []byte("three"), objstore.PutOptions{Cond: objstore.Cond{IfMatch: put.ETag}, Generation: 4})
			if !errors.Is(err, objstore.ErrPrecondition) {
				t.Fatalf("put if-match the written ETag over a hand edit: %v, want a precondition failure", err)
			}
			if _, err := objstore.PutGeneration(ctx, s, key, []byte("three"), 4, "text/html"); err != nil {
				t.Fatalf("put generation over a hand edit: %v", err)
			}
			if o, err := s.Get(ctx, key); err != nil || string(o.Body) != "three" {
				t.Fatalf("get %q %v", o.Body, err)
			}
		})
	}
}

// A sidecar written before sidecars kept the body's time has none: its
// file is read once, a hand edit is seen, and an unchanged file's time is
// recorded so that later looks need not read it.
func TestASidecarWithoutTheBodysTime(t *testing.T) {
	ctx := context.Background()
	s, err := dir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	side := func(key string) string {
		return filepath.Join(s.Root(), "changes", "."+filepath.Base(key)+".meta")
	}
	put := map[string]objstore.Info{}
	for _, key := range []string{"changes/a.html", "changes/b.html"} {
		in, err := s.Put(ctx, key, []byte("page "+key), objstore.PutOptions{Generation: 2})
		if err != nil {
			t.Fatal(err)
		}
		put[key] = in
		// As an earlier release wrote it.
		old := fmt.Sprintf(`{"generation":2,"etag":%q,"size":%d}`, in.ETag, in.Size)
		if err := os.WriteFile(side(key), []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	handEdit(t, s, "changes/b.html", "HACKED BY HAND")
	listed := map[string]objstore.Info{}
	if err := s.List(ctx, "changes/", func(in objstore.Info) error { listed[in.Key] = in; return nil }); err != nil {
		t.Fatal(err)
	}
	if listed["changes/a.html"].ETag != put["changes/a.html"].ETag {
		t.Fatalf("an unchanged file under an older sidecar: %+v, want %+v", listed["changes/a.html"], put["changes/a.html"])
	}
	if listed["changes/b.html"].ETag == put["changes/b.html"].ETag {
		t.Fatalf("a hand edit under an older sidecar went unseen: %+v", listed["changes/b.html"])
	}
	if b, err := os.ReadFile(side("changes/a.html")); err != nil || !strings.Contains(string(b), "mtime_ns") {
		t.Fatalf("the unchanged file's time was not recorded: %s %v", b, err)
	}
	if b, err := os.ReadFile(side("changes/b.html")); err != nil || strings.Contains(string(b), "mtime_ns") {
		t.Fatalf("an edited file's time was recorded as the sidecar's version: %s %v", b, err)
	}
}
