package pipeline

import (
	"context"
	"sync"

	"github.com/tidemark/tidemark/ingest"
)

// A worker's identity (its holder) is what the stores fence claims and
// lane leases by, and a holder that presents its own claim re-enters it:
// that is how a restarted worker takes up its own runs (DESIGN §1.1). Two
// workers of one process that presented the same identity would take each
// other's claims for their own. So each operation that claims (Run,
// RunOnce, RunSource, DeliverOnce, DeliverLoop, the migration operations)
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

// enter gives the operation under ctx a slot of the holder, unless an
// operation it is part of (RunOnce's delivery) already has one; release
// when it ends.
func (p *Pipeline) enter(ctx context.Context) (context.Context, string, func()) {
	base := p.Holder()
	if s, ok := ctx.Value(holderKey{}).(slot); ok && s.base == base {
		return ctx, s.holder, func() {}
	}
	h, release := takeSlot(base)
	return context.WithValue(ctx, holderKey{}, slot{base, h}), h, release
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
