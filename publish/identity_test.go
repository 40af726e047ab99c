package publish_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func mustDirService(t *testing.T, st publish.Store, path, location string) *publish.Service {
	t.Helper()
	objs, err := dir.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return &publish.Service{Store: st, Objects: objs, StoreLocation: location}
}

func countObjects(t *testing.T, s objstore.Store) int {
	t.Helper()
	n := 0
	if err := s.List(context.Background(), "", func(objstore.Info) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustMismatch(t *testing.T, what string, err error) {
	t.Helper()
	var me *publish.StoreMismatchError
	if !errors.Is(err, publish.ErrStoreMismatch) || !errors.Is(err, tidemark.ErrInvalid) || !errors.As(err, &me) {
		t.Fatalf("%s: %v, want ErrStoreMismatch", what, err)
	}
}

// Two workers share one database but not one store: the first publication
// binds the wiki to its store, and a worker on another store (another
// directory, the same path on another machine, a copy) refuses to publish
// or sweep, so nothing is republished into a store the wiki does not live
// in and the bound store stays converged.
func TestStoreIdentity(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		root := t.TempDir()
		pathA := filepath.Join(root, "a")
		a := mustDirService(t, nil, pathA, pathA)
		f := mustFixture(t, b, a.Objects)
		a.Store = f.st
		ev := f.mustEvent(t, "c1", "change", "evidence")
		s1 := f.mustAccept(t, ev, "The summary.", "m1")
		if _, err := a.Publish(ctx, s1.ID); err != nil {
			t.Fatal(err)
		}
		rec, ok, err := f.st.BoundStore(ctx)
		if err != nil || !ok || rec.Location != pathA || rec.ID == "" {
			t.Fatalf("bound store = %+v %v %v, want %s", rec, ok, err, pathA)
		}

		// Another directory.
		pathB := filepath.Join(root, "b")
		other := mustDirService(t, f.st, pathB, pathB)
		if err := other.CheckStore(ctx); err == nil {
			t.Fatal("check of another store passed")
		}
		_, err = other.Sweep(ctx)
		mustMismatch(t, "sweep into another store", err)
		s2 := f.mustAccept(t, ev, "The newer summary.", "m2")
		_, err = other.Publish(ctx, s2.ID)
		mustMismatch(t, "publish into another store", err)
		if n := countObjects(t, other.Objects); n != 0 {
			t.Fatalf("the refused worker wrote %d objects into its store", n)
		}

		// The same path on another machine: an empty directory where the
		// bound one is recorded. Only the marker tells them apart.
		pathC := filepath.Join(root, "c")
		sameName := mustDirService(t, f.st, pathC, pathA)
		_, err = sameName.Sweep(ctx)
		mustMismatch(t, "sweep at the same path on another machine", err)

		// A copy of the bound store, marker and all, at another location.
		pathD := filepath.Join(root, "d")
		marker, err := os.ReadFile(filepath.Join(pathA, filepath.FromSlash(publish.StoreMarkerKey)))
		if err != nil {
			t.Fatal(err)
		}
		cp := mustDirService(t, f.st, pathD, pathD)
		if _, err := cp.Objects.Put(ctx, publish.StoreMarkerKey, marker, objstore.PutOptions{Generation: 1}); err != nil {
			t.Fatal(err)
		}
		_, err = cp.Sweep(ctx)
		mustMismatch(t, "sweep into a copy", err)

		// The bound store, from a fresh service (another worker that shares
		// it): it publishes, and once converged two sweeps publish nothing.
		shared := mustDirService(t, f.st, pathA, pathA)
		if err := shared.CheckStore(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := shared.Publish(ctx, s2.ID); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			rep, err := shared.Sweep(ctx)
			if err != nil || rep.Republished != 0 || rep.Failed != 0 {
				t.Fatalf("sweep %d of the bound store: %+v %v, want nothing republished", i, rep, err)
			}
		}

		// An operator moves the wiki to b on purpose: b is bound, a is not.
		moved := mustDirService(t, f.st, pathB, pathB)
		if rec, err := moved.Rebind(ctx); err != nil || rec.Location != pathB {
			t.Fatalf("rebind: %+v %v", rec, err)
		}
		rep, err := moved.Sweep(ctx)
		if err != nil || rep.Republished != 1 {
			t.Fatalf("sweep after rebind: %+v %v, want the page republished into the new store", rep, err)
		}
		_, err = mustDirService(t, f.st, pathA, pathA).Sweep(ctx)
		mustMismatch(t, "sweep of the old store after rebind", err)
	})
}

// The first binders of two stores racing on one database: the first
// recorded wins and the other refuses.
func TestStoreIdentityFirstBinderWins(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		root := t.TempDir()
		a := mustDirService(t, nil, filepath.Join(root, "a"), "a")
		f := mustFixture(t, b, a.Objects)
		a.Store = f.st
		other := mustDirService(t, f.st, filepath.Join(root, "b"), "b")
		if _, err := a.BindStore(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := other.BindStore(ctx)
		mustMismatch(t, "the second binder", err)
		if _, err := a.BindStore(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A worker that bound the wiki's store before an operator rebound the
// wiki elsewhere (a daemon not restarted) keeps its binding, and with it
// writes to the old store; the books refuse its marks and its records of
// what the old store holds, so they go on saying what the new store lacks.
func TestAWorkerThatMissedARebindChangesNothing(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		root := t.TempDir()
		pathA, pathB := filepath.Join(root, "a"), filepath.Join(root, "b")
		a := mustDirService(t, nil, pathA, pathA)
		f := mustFixture(t, b, a.Objects)
		a.Store = f.st
		ev := f.mustEvent(t, "c1", "change", "evidence")
		if _, err := a.Publish(ctx, f.mustAccept(t, ev, "The summary.", "m1").ID); err != nil {
			t.Fatal(err)
		}
		moved := mustDirService(t, f.st, pathB, pathB)
		if _, err := moved.Rebind(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := moved.Missing(ctx); err != nil || n != 1 {
			t.Fatalf("missing after the rebind to an empty store: %d %v, want 1", n, err)
		}
		s2 := f.mustAccept(t, ev, "The newer summary.", "m2")
		_, err := a.Publish(ctx, s2.ID)
		mustMismatch(t, "the stale worker's publication", err)
		mustPublished(t, f.mustSummary(t, s2.ID), false)
		_, err = a.PublishPending(ctx, 10)
		mustMismatch(t, "the stale worker's publishing pass", err)
		_, err = a.Sweep(ctx)
		mustMismatch(t, "the stale worker's sweep", err)
		mustPublished(t, f.mustSummary(t, s2.ID), false)
		if n, err := moved.Missing(ctx); err != nil || n != 1 {
			t.Fatalf("missing after the stale worker's attempts: %d %v, want 1", n, err)
		}
		if rep, err := moved.Sweep(ctx); err != nil || rep.Republished != 1 || rep.Missing != 0 {
			t.Fatalf("the new store's sweep: %+v %v", rep, err)
		}
	})
}

// A long-lived service (the daemon's, one for every round) checks the
// store afresh at each pass, sweep and listings refresh, not once for its
// life: a store wiped (or an emptied bucket recreated) under it, marker
// and all, is refused, and nothing is written into it.
func TestALongLivedServiceChecksTheStoreEachPass(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "wiki")
		svc := mustDirService(t, nil, path, path)
		f := mustFixture(t, b, svc.Objects)
		svc.Store = f.st
		ev := f.mustEvent(t, "c1", "change", "evidence")
		f.mustAccept(t, ev, "The summary.", "m1")
		if rep, err := svc.PublishPending(ctx, 10); err != nil || rep.Published != 1 {
			t.Fatalf("first pass: %+v %v", rep, err)
		}
		if rep, err := svc.Sweep(ctx); err != nil || rep.Failed != 0 {
			t.Fatalf("first sweep: %+v %v", rep, err)
		}
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		f.mustAccept(t, f.mustEvent(t, "c2", "another change", "evidence 2"), "Another summary.", "m1")
		_, err := svc.PublishPending(ctx, 10)
		mustMismatch(t, "a pass into the wiped store", err)
		_, err = svc.PublishPendingPages(ctx, 10)
		mustMismatch(t, "a pass of pages into the wiped store", err)
		_, err = svc.Sweep(ctx)
		mustMismatch(t, "a sweep of the wiped store", err)
		_, err = svc.RefreshListings(ctx)
		mustMismatch(t, "a listings refresh of the wiped store", err)
		if n := countObjects(t, svc.Objects); n != 0 {
			t.Fatalf("the service wrote %d objects into the wiped store", n)
		}
	})
}
