package ingest

import (
	"context"
	"sync"

	"github.com/tidemark/tidemark"
)

// maxGroup bounds the settlements one transaction carries.
const maxGroup = 256

// group settles runs that finish together in one transaction (group
// commit): the first to arrive leads and settles everything pending at
// that moment, while later arrivals queue for the next batch; when a batch
// is written the leader hands the lead to the oldest waiter and returns.
// No goroutine outlives a call, and each caller returns only once its own
// settlement has committed or failed.
type group struct {
	mu      sync.Mutex
	leading bool
	pending []*groupReq
}

type groupReq struct {
	c    tidemark.Claim
	st   Settlement
	rep  SettleReport
	err  error
	done chan struct{}
	lead chan struct{}
}

func (g *group) settle(ctx context.Context, bs BatchSettler, c tidemark.Claim, st Settlement) (SettleReport, error) {
	req := &groupReq{c: c, st: st, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, req)
	if !g.leading {
		g.leading = true
		req.lead <- struct{}{}
	}
	g.mu.Unlock()
	for {
		select {
		case <-req.done:
			return req.rep, req.err
		case <-req.lead:
			g.runBatch(ctx, bs)
		}
	}
}

func (g *group) runBatch(ctx context.Context, bs BatchSettler) {
	g.mu.Lock()
	batch := g.pending[:min(len(g.pending), maxGroup)]
	g.pending = append([]*groupReq(nil), g.pending[len(batch):]...)
	g.mu.Unlock()
	cs, sts := make([]tidemark.Claim, len(batch)), make([]Settlement, len(batch))
	for i, r := range batch {
		cs[i], sts[i] = r.c, r.st
	}
	reps, errs := bs.SettleMany(ctx, cs, sts)
	for i, r := range batch {
		r.rep, r.err = reps[i], errs[i]
		close(r.done)
	}
	g.mu.Lock()
	if len(g.pending) > 0 {
		g.pending[0].lead <- struct{}{}
	} else {
		g.leading = false
	}
	g.mu.Unlock()
}
