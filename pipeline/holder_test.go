package pipeline

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

// blockingFeed, once hold is set, answers each request only when release
// is closed, and tells arrived of each request first.
func blockingFeed(t *testing.T) (url string, hold *atomic.Bool, arrived chan struct{}, release chan struct{}) {
	t.Helper()
	hold, arrived, release = &atomic.Bool{}, make(chan struct{}, 8), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold.Load() {
			arrived <- struct{}{}
			<-release
		}
		w.Header().Set("Content-Type", "application/rss+xml")
		w.Write([]byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><guid>a</guid><title>a</title></item></channel></rss>`))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return srv.URL + "/feed.xml", hold, arrived, release
}

// Two Pipelines of one process over one database are two workers: the
// second passes over a source the first is running instead of re-entering
// its claim as if it were the same worker restarting (and fetching it a
// second time, its settlement then refused as stale).
func TestTwoPipelinesOfOneProcessDoNotShareClaims(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	p1, p2 := open(t, home, nil), open(t, home, nil)
	url, hold, arrived, release := blockingFeed(t)
	ns := ingestSource("slow", url)
	ns.Kind, ns.AllowPrivate = "feed", true
	if _, err := p1.AddSource(ctx, ns); err != nil {
		t.Fatal(err)
	}
	hold.Store(true)
	first := make(chan error, 1)
	go func() {
		_, err := p1.RunSource(ctx, "slow", 1, nil)
		first <- err
	}()
	<-arrived // p1's run is fetching
	second := make(chan error, 1)
	go func() {
		_, err := p2.RunSource(ctx, "slow", 1, nil)
		second <- err
	}()
	// The source's answer is held back: a second Pipeline that re-entered
	// the claim would be fetching it now, and not return.
	select {
	case err := <-second:
		if !errors.Is(err, tidemark.ErrClaimHeld) {
			t.Errorf("second Pipeline: %v, want ErrClaimHeld", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the second Pipeline is fetching the source the first is running")
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first Pipeline: %v", err)
	}
}

// The first operation of a process works under the holder itself (so a
// restarted worker re-enters its own runs); each one beside it under a slot
// of its own; a slot given back is taken again.
func TestEachOperationBesideAnotherHasAHolderOfItsOwn(t *testing.T) {
	p := open(t, t.TempDir(), nil)
	base := p.Holder()
	ctx1, h1, release1, _ := p.enter(context.Background())
	_, h2, release2, _ := p.enter(context.Background())
	ctxIn, hIn, releaseIn, _ := p.enter(ctx1) // a step of the first operation
	releaseIn()
	if h1 != base || h2 != base+"#2" || hIn != h1 || p.holderOf(ctxIn) != h1 {
		t.Fatalf("holders %q, %q, nested %q: want %q, %q#2, %[4]q", h1, h2, hIn, base, base)
	}
	release1()
	release1() // harmless
	_, h3, release3, _ := p.enter(context.Background())
	if h3 != base {
		t.Errorf("after the first ended: %q, want %q", h3, base)
	}
	release2()
	release3()
	if p.holderOf(context.Background()) != base {
		t.Errorf("outside an operation: %q, want %q", p.holderOf(context.Background()), base)
	}
}

// Close while Run is fetching stops Run and waits for it: Run returns, and
// the run in flight is not left active for another worker to record lost.
func TestCloseStopsRunAndWaitsForIt(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	url, hold, arrived, _ := blockingFeed(t)
	ns := ingestSource("slow", url)
	ns.Kind, ns.AllowPrivate = "feed", true
	if _, err := p.AddSource(ctx, ns); err != nil {
		t.Fatal(err)
	}
	hold.Store(true)
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx, RunOptions{Workers: 1}) }()
	<-arrived // the run is fetching
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run after Close: %v", err)
		}
	default:
		t.Fatal("Close returned while Run was still running")
	}
	q := open(t, p.Config().Home, nil)
	runs, err := q.Runs(ctx, ingest.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Status == tidemark.RunActive {
			t.Errorf("run %s left active by Close", r.ID)
		}
	}
	if _, err := p.RunOnce(ctx, OnceOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("RunOnce after Close: %v, want ErrClosed", err)
	}
}
