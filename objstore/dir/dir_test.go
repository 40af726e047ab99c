package dir_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
