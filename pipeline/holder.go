package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tidemark/tidemark"

	"github.com/tidemark/tidemark/ingest"
)

// A worker's identity (its holder) is what the stores fence claims and
// lane leases by, and a holder that presents its own claim re-enters it:
// that is how a restarted worker takes up its own runs (DESIGN §1.1). Two
// workers of one process that presented the same identity would take each
// other's claims for their own. So each operation that claims (Run,
// RunOnce, RunSource, Publish and the summarizing of RunOnce and Run,
// DeliverOnce, DeliverLoop, the migration operations)
// works under a slot of the holder of its own, for as long as it runs: the
// first in the process gets the holder itself (so a restarted worker
// re-enters its runs), any other working beside it, on this Pipeline or
// on another with the same holder, gets holder#n (ingest.HolderSlot).

// slots are the holder slots in use in this process, by holder.
var slots = struct {
	mu   sync.Mutex
	used map[string]map[int]bool
}{used: map[string]map[int]bool{}}

// takeSlot returns the lowest slot of base no one in this process uses,
// and the function that gives it back.
func takeSlot(base string) (holder string, release func()) {
	slots.mu.Lock()
	defer slots.mu.Unlock()
	used := slots.used[base]
	if used == nil {
		used = map[int]bool{}
		slots.used[base] = used
	}
	n := 1
	for used[n] {
		n++
	}
	used[n] = true
	var once sync.Once
	return ingest.HolderSlot(base, n), func() {
		once.Do(func() {
			slots.mu.Lock()
			defer slots.mu.Unlock()
			delete(used, n)
			if len(used) == 0 {
				delete(slots.used, base)
			}
		})
	}
}

type holderKey struct{}

// slot is the holder slot an operation works under: of base.
type slot struct{ base, holder string }

// ErrClosed: the Pipeline was closed; nothing more can run on it.
var ErrClosed = fmt.Errorf("pipeline: closed: %w", tidemark.ErrConflict)

// ops are the operations in flight on a Pipeline (see enter), so that
// Close can stop them and wait for them.
type ops struct {
	mu      sync.Mutex
	closed  bool
	next    int
	cancels map[int]context.CancelCauseFunc
	wg      sync.WaitGroup
}

// enter gives the operation under ctx a slot of the holder, and a context
// Close cancels, unless an operation it is part of (RunOnce's delivery)
// already has them; release when it ends. On a closed Pipeline it is
// ErrClosed.
func (p *Pipeline) enter(ctx context.Context) (context.Context, string, func(), error) {
	base := p.Holder()
	if s, ok := ctx.Value(holderKey{}).(slot); ok && s.base == base {
		return ctx, s.holder, func() {}, nil
	}
	p.ops.mu.Lock()
	defer p.ops.mu.Unlock()
	if p.ops.closed {
		return ctx, "", func() {}, ErrClosed
	}
	if p.ops.cancels == nil {
		p.ops.cancels = map[int]context.CancelCauseFunc{}
	}
	id := p.ops.next
	p.ops.next++
	ctx, cancel := context.WithCancelCause(ctx)
	p.ops.cancels[id] = cancel
	p.ops.wg.Add(1)
	h, giveBack := takeSlot(base)
	var once sync.Once
	return context.WithValue(ctx, holderKey{}, slot{base, h}), h, func() {
		once.Do(func() {
			giveBack()
			cancel(nil)
			p.ops.mu.Lock()
			delete(p.ops.cancels, id)
			p.ops.mu.Unlock()
			p.ops.wg.Done()
		})
	}, nil
}

// closeWait is how long Close waits for the operations it stopped.
const closeWait = time.Minute

// stop refuses new operations, cancels those in flight and waits for them
// to return, at most wait; it reports whether they all did.
func (o *ops) stop(wait time.Duration) bool {
	o.mu.Lock()
	o.closed = true
	for _, cancel := range o.cancels {
		cancel(ErrClosed)
	}
	o.mu.Unlock()
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// holderOf is the slot ctx's operation works under, or the holder itself
// outside one.
func (p *Pipeline) holderOf(ctx context.Context) string {
	base := p.Holder()
	if s, ok := ctx.Value(holderKey{}).(slot); ok && s.base == base {
		return s.holder
	}
	return base
}

// checkOpen is ErrClosed once the Pipeline is closed, for every method
// that reads or writes the database or the store: a closed Pipeline says
// so, rather than the database's own "closed" (or, for Objects, opening a
// store nobody would close). An operation Close is stopping (ctx carries
// its slot) finishes as it would have.
func (p *Pipeline) checkOpen(ctx context.Context) error {
	if s, ok := ctx.Value(holderKey{}).(slot); ok && s.base == p.Holder() {
		return nil
	}
	p.ops.mu.Lock()
	defer p.ops.mu.Unlock()
	if p.ops.closed {
		return ErrClosed
	}
	return nil
}
