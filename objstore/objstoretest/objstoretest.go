// Package objstoretest is the conformance suite every objstore.Store
// passes, in the manner of Litestream's RunWithReplicaClient: one set of
// assertions, run against the directory, S3 and in-memory stores.
package objstoretest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/s3"
)

// S3 returns a store on the S3 server named by TIDEMARK_TEST_S3_* (.ci/s3.sh
// starts one), under prefix or, when prefix is "", under a fresh one; it
// skips the test when no server is configured.
func S3(t testing.TB, prefix string) *s3.Store {
	t.Helper()
	ep := os.Getenv("TIDEMARK_TEST_S3_ENDPOINT")
	if ep == "" {
		t.Skip("TIDEMARK_TEST_S3_ENDPOINT not set (.ci/s3.sh starts a server)")
	}
	if prefix == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		prefix = "t-" + hex.EncodeToString(b[:])
	}
	s, err := s3.New(s3.Config{
		Bucket: os.Getenv("TIDEMARK_TEST_S3_BUCKET"), Prefix: prefix, Endpoint: ep, PathStyle: true,
		AccessKey: os.Getenv("TIDEMARK_TEST_S3_ACCESS_KEY"), SecretKey: os.Getenv("TIDEMARK_TEST_S3_SECRET_KEY"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Run runs the suite. newStore returns an empty store (or one whose keys
// under the test's prefix are empty) for each subtest.
func Run(t *testing.T, newStore func(t *testing.T) objstore.Store) {
	ctx := context.Background()

	t.Run("GetMissing", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Get(ctx, "changes/missing.html"); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("Get missing: %v, want ErrNotFound", err)
		}
		if _, err := s.Head(ctx, "changes/missing.html"); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("Head missing: %v, want ErrNotFound", err)
		}
	})

	t.Run("PutGetRoundTrip", func(t *testing.T) {
		s := newStore(t)
		body := []byte("<p>hello</p>")
		info, err := s.Put(ctx, "changes/a.html", body, objstore.PutOptions{Generation: 7, ContentType: "text/html; charset=utf-8"})
		if err != nil {
			t.Fatal(err)
		}
		if info.ETag == "" || info.Generation != 7 {
			t.Fatalf("Put info %+v", info)
		}
		o, err := s.Get(ctx, "changes/a.html")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(o.Body, body) || o.ETag != info.ETag || o.Generation != 7 {
			t.Fatalf("Get = %q %+v, want %q etag %s gen 7", o.Body, o.Info, body, info.ETag)
		}
		h, err := s.Head(ctx, "changes/a.html")
		if err != nil || h.ETag != info.ETag || h.Generation != 7 || h.Size != int64(len(body)) {
			t.Fatalf("Head = %+v, %v", h, err)
		}
		// A different body gets a different ETag.
		info2, err := s.Put(ctx, "changes/a.html", []byte("<p>other</p>"), objstore.PutOptions{Generation: 8})
		if err != nil || info2.ETag == info.ETag {
			t.Fatalf("second Put: %+v %v (first etag %s)", info2, err, info.ETag)
		}
	})

	t.Run("CreateOnly", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Put(ctx, "k.html", []byte("one"), objstore.PutOptions{Cond: objstore.Cond{IfNoneMatch: true}, Generation: 1}); err != nil {
			t.Fatal(err)
		}
		_, err := s.Put(ctx, "k.html", []byte("two"), objstore.PutOptions{Cond: objstore.Cond{IfNoneMatch: true}, Generation: 2})
		if !errors.Is(err, objstore.ErrPrecondition) {
			t.Fatalf("second create: %v, want ErrPrecondition", err)
		}
		mustBody(t, s, "k.html", "one", 1)
	})

	t.Run("IfMatch", func(t *testing.T) {
		s := newStore(t)
		_, err := s.Put(ctx, "k.html", []byte("x"), objstore.PutOptions{Cond: objstore.Cond{IfMatch: `"0123"`}, Generation: 1})
		if !errors.Is(err, objstore.ErrPrecondition) {
			t.Fatalf("If-Match on a missing key: %v, want ErrPrecondition", err)
		}
		if _, err := s.Head(ctx, "k.html"); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("failed If-Match created the key: %v", err)
		}
		v1, err := s.Put(ctx, "k.html", []byte("one"), objstore.PutOptions{Generation: 1})
		if err != nil {
			t.Fatal(err)
		}
		v2, err := s.Put(ctx, "k.html", []byte("two"), objstore.PutOptions{Cond: objstore.Cond{IfMatch: v1.ETag}, Generation: 2})
		if err != nil {
			t.Fatalf("If-Match current: %v", err)
		}
		_, err = s.Put(ctx, "k.html", []byte("three"), objstore.PutOptions{Cond: objstore.Cond{IfMatch: v1.ETag}, Generation: 3})
		if !errors.Is(err, objstore.ErrPrecondition) {
			t.Fatalf("If-Match stale: %v, want ErrPrecondition", err)
		}
		mustBody(t, s, "k.html", "two", 2)
		if h, _ := s.Head(ctx, "k.html"); h.ETag != v2.ETag {
			t.Fatalf("etag %s, want %s", h.ETag, v2.ETag)
		}
	})

	t.Run("DeleteAndList", func(t *testing.T) {
		s := newStore(t)
		for _, k := range []string{"changes/b.html", "changes/a.html", "sources/s.html", "index.html"} {
			if _, err := s.Put(ctx, k, []byte(k), objstore.PutOptions{Generation: 1}); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		err := s.List(ctx, "changes/", func(in objstore.Info) error {
			if in.ETag == "" || in.Size == 0 {
				return fmt.Errorf("list %s: info %+v", in.Key, in)
			}
			got = append(got, in.Key)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != "[changes/a.html changes/b.html]" {
			t.Fatalf("List changes/ = %v", got)
		}
		if err := s.Delete(ctx, "changes/a.html"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "changes/a.html"); err != nil {
			t.Fatalf("delete missing: %v", err)
		}
		if _, err := s.Get(ctx, "changes/a.html"); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("Get deleted: %v", err)
		}
		got = nil
		_ = s.List(ctx, "", func(in objstore.Info) error { got = append(got, in.Key); return nil })
		if fmt.Sprint(got) != "[changes/b.html index.html sources/s.html]" {
			t.Fatalf("List all = %v", got)
		}
		got = nil
		_ = s.List(ctx, "nothing/", func(in objstore.Info) error { got = append(got, in.Key); return nil })
		if len(got) != 0 {
			t.Fatalf("List nothing/ = %v", got)
		}
	})

	t.Run("BadKeys", func(t *testing.T) {
		s := newStore(t)
		for _, k := range []string{"", "/abs", "../up", "a/../b", "a//b", ".hidden", "a/.meta"} {
			if _, err := s.Put(ctx, k, []byte("x"), objstore.PutOptions{Generation: 1}); err == nil {
				t.Errorf("Put %q accepted", k)
			}
		}
	})

	t.Run("PutGeneration", func(t *testing.T) {
		s := newStore(t)
		if _, err := objstore.PutGeneration(ctx, s, "p.html", []byte("gen 2"), 2, ""); err != nil {
			t.Fatal(err)
		}
		_, err := objstore.PutGeneration(ctx, s, "p.html", []byte("gen 1"), 1, "")
		if !errors.Is(err, objstore.ErrNewerGeneration) {
			t.Fatalf("older generation: %v, want ErrNewerGeneration", err)
		}
		if _, err := objstore.PutGeneration(ctx, s, "p.html", []byte("gen 2"), 2, ""); err != nil {
			t.Fatalf("replay of the stored generation: %v", err)
		}
		if _, err := objstore.PutGeneration(ctx, s, "p.html", []byte("gen 3"), 3, ""); err != nil {
			t.Fatal(err)
		}
		mustBody(t, s, "p.html", "gen 3", 3)
		// Generation 1, a key's first, is written without a read first:
		// created when absent, a replay when it is stored, refused under a
		// newer one.
		first, err := objstore.PutGeneration(ctx, s, "q.html", []byte("first"), 1, "")
		if err != nil {
			t.Fatal(err)
		}
		again, err := objstore.PutGeneration(ctx, s, "q.html", []byte("first"), 1, "")
		if err != nil || again.ETag != first.ETag {
			t.Fatalf("replay of generation 1: %+v, %v; want the stored %+v", again, err, first)
		}
		if _, err := objstore.PutGeneration(ctx, s, "q.html", []byte("second"), 2, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := objstore.PutGeneration(ctx, s, "q.html", []byte("first"), 1, ""); !errors.Is(err, objstore.ErrNewerGeneration) {
			t.Fatalf("generation 1 over 2: %v, want ErrNewerGeneration", err)
		}
		mustBody(t, s, "q.html", "second", 2)
	})

	t.Run("ConditionalWriteRaceEveryOrder", func(t *testing.T) {
		for _, sched := range Schedules(2, 2, 2) {
			t.Run(fmt.Sprint(sched), func(t *testing.T) {
				s := newStore(t)
				if _, err := s.Put(ctx, "race.html", []byte("gen 1"), objstore.PutOptions{Generation: 1}); err != nil {
					t.Fatal(err)
				}
				errs := RunSchedule(t, s, sched,
					func(ctx context.Context, s objstore.Store) error {
						_, err := objstore.PutGeneration(ctx, s, "race.html", []byte("older gen 2"), 2, "")
						return err
					},
					func(ctx context.Context, s objstore.Store) error {
						_, err := objstore.PutGeneration(ctx, s, "race.html", []byte("newer gen 3"), 3, "")
						return err
					})
				if errs[1] != nil {
					t.Fatalf("newer writer failed: %v", errs[1])
				}
				if errs[0] != nil && !errors.Is(errs[0], objstore.ErrNewerGeneration) {
					t.Fatalf("older writer: %v, want nil or ErrNewerGeneration", errs[0])
				}
				mustBody(t, s, "race.html", "newer gen 3", 3)
			})
		}
	})
}

func mustBody(t *testing.T, s objstore.Store, key, want string, gen int64) {
	t.Helper()
	o, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if string(o.Body) != want || o.Generation != gen {
		t.Fatalf("%s = %q generation %d, want %q generation %d", key, o.Body, o.Generation, want, gen)
	}
}

// Schedules returns every sequence of n writer choices (0..writers-1) with
// at least min choices of each writer: the orders in which RunSchedule lets
// the writers take their store operations.
func Schedules(writers, perWriter, extra int) [][]int {
	n := writers*perWriter + extra
	var out [][]int
	var rec func(prefix []int)
	rec = func(prefix []int) {
		if len(prefix) == n {
			counts := make([]int, writers)
			for _, w := range prefix {
				counts[w]++
			}
			for _, c := range counts {
				if c < perWriter {
					return
				}
			}
			out = append(out, append([]int(nil), prefix...))
			return
		}
		for w := range writers {
			rec(append(prefix, w))
		}
	}
	rec(nil)
	return out
}

// RunSchedule runs each writer in its own goroutine against a gated view of
// s that lets exactly one store operation proceed at a time, in the order
// sched names the writers. When the named writer has finished, the other
// goes; after sched is used up, the writers run freely in turn. It returns
// each writer's error.
func RunSchedule(t *testing.T, s objstore.Store, sched []int, writers ...func(context.Context, objstore.Store) error) []error {
	t.Helper()
	type arrival struct {
		w    int
		done bool
	}
	arrive := make(chan arrival)
	gos := make([]chan struct{}, len(writers))
	errs := make([]error, len(writers))
	var wg sync.WaitGroup
	for i, fn := range writers {
		gos[i] = make(chan struct{})
		g := &gated{Store: s, before: func() { arrive <- arrival{w: i}; <-gos[i] }}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(context.Background(), g)
			arrive <- arrival{w: i, done: true}
		}()
	}
	// Every writer is either waiting at its gate or done; let one go.
	waiting := make([]bool, len(writers))
	done := make([]bool, len(writers))
	remaining := len(writers)
	collect := func() {
		for {
			// wait until no writer is running
			running := 0
			for i := range writers {
				if !waiting[i] && !done[i] {
					running++
				}
			}
			if running == 0 {
				return
			}
			a := <-arrive
			if a.done {
				done[a.w] = true
				remaining--
			} else {
				waiting[a.w] = true
			}
		}
	}
	step := 0
	for {
		collect()
		if remaining == 0 {
			break
		}
		next := -1
		if step < len(sched) && waiting[sched[step]] {
			next = sched[step]
		}
		step++
		if next < 0 {
			for i := range writers {
				if waiting[i] {
					next = i
					break
				}
			}
		}
		waiting[next] = false
		gos[next] <- struct{}{}
	}
	wg.Wait()
	return errs
}

// gated is a Store whose every operation first waits for the scheduler.
type gated struct {
	objstore.Store
	before func()
}

func (g *gated) Get(ctx context.Context, key string) (objstore.Object, error) {
	g.before()
	return g.Store.Get(ctx, key)
}
func (g *gated) Head(ctx context.Context, key string) (objstore.Info, error) {
	g.before()
	return g.Store.Head(ctx, key)
}
func (g *gated) Put(ctx context.Context, key string, body []byte, opt objstore.PutOptions) (objstore.Info, error) {
	g.before()
	return g.Store.Put(ctx, key, body, opt)
}
