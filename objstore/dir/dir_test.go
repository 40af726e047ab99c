package dir_test

import (
	"context"
	"errors"
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
