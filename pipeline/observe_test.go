package pipeline

import (
	"context"
	"testing"
)

// Every publishing round and sweep this process runs is told to its
// observers, whoever asked for it: the daemon's loop, and the console's or
// the API's Publish now and Sweep now (Publish, Sweep), so `serve` counts
// what it publishes as the daemon does. An observer added after Open is
// told too.
func TestPublishAndSweepAreObservedWhoeverRunsThem(t *testing.T) {
	ctx := context.Background()
	first, later := &observer{}, &observer{}
	p := open(t, t.TempDir(), nil, first)
	p.AddObserver(later)
	if _, _, err := p.TrackRepo(ctx, gitRepo(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunSource(ctx, "", 5, nil); err == nil {
		t.Fatal("running no source worked")
	}
	srcs, err := p.DB().Ingest().Sources(ctx)
	if err != nil || len(srcs) != 1 {
		t.Fatalf("sources %v %v", srcs, err)
	}
	if _, err := p.RunSource(ctx, srcs[0].Name, 5, nil); err != nil {
		t.Fatal(err)
	}
	r, err := p.Publish(ctx, "", 100)
	if err != nil || r.Published.Published != 2 {
		t.Fatalf("publish: %+v %v", r.Published, err)
	}
	if _, err := p.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]*observer{"the configured observer": first, "the added observer": later} {
		if o.rounds != 1 || o.sweeps != 1 || o.published != 2 {
			t.Errorf("%s saw %d rounds (%d published) and %d sweeps; want 1 (2) and 1", name, o.rounds, o.published, o.sweeps)
		}
	}
}
