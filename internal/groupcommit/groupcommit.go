// Package groupcommit writes requests that arrive together in one
// transaction (group commit).
package groupcommit

import (
	"context"
	"sync"
)

// Group batches the requests of concurrent callers: the first to arrive
// leads and writes everything pending at that moment (up to a limit), while
// later arrivals queue for the next batch; when a batch is written the
// leader hands the lead to the oldest waiter and returns. No goroutine
// outlives a call, and each caller returns only once its own request has
// committed or failed. The zero Group is ready to use.
type Group[In, Out any] struct {
	mu      sync.Mutex
	leading bool
	pending []*request[In, Out]
}

type request[In, Out any] struct {
	in   In
	out  Out
	err  error
	done chan struct{}
	lead chan struct{}
}

// Write is a batch's writer: it writes ins in one transaction and returns
// one result and one error per request, in their order. A request fails
// alone by its error; the others are written.
type Write[In, Out any] func(ctx context.Context, ins []In) ([]Out, []error)

// Do queues in and returns its result once the batch that carries it is
// written by write. A batch carries at most limit requests (at least one)
// and runs under the context of the caller that leads it.
func (g *Group[In, Out]) Do(ctx context.Context, in In, limit int, write Write[In, Out]) (Out, error) {
	req := &request[In, Out]{in: in, done: make(chan struct{}), lead: make(chan struct{}, 1)}
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
			return req.out, req.err
		case <-req.lead:
			g.runBatch(ctx, max(limit, 1), write)
		}
	}
}

func (g *Group[In, Out]) runBatch(ctx context.Context, limit int, write Write[In, Out]) {
	g.mu.Lock()
	batch := g.pending[:min(len(g.pending), limit)]
	g.pending = append([]*request[In, Out](nil), g.pending[len(batch):]...)
	g.mu.Unlock()
	ins := make([]In, len(batch))
	for i, r := range batch {
		ins[i] = r.in
	}
	outs, errs := write(ctx, ins)
	for i, r := range batch {
		r.out, r.err = outs[i], errs[i]
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
