// Package ids injects identity and chance: ULIDs whose time part comes from
// an injected clock and whose entropy comes from an injected, seedable
// source, and a locked random source for jitter. Under a fake clock and a
// fixed seed every ID and every jitter is reproducible.
package ids

import (
	"io"
	"math/rand/v2"
	"sync"

	"github.com/oklog/ulid/v2"

	"github.com/tidemark/tidemark/clock"
)

// Source mints unique, lexically time-ordered identifiers.
type Source interface {
	New() string
}

// ULIDs mints monotonic ULIDs. It is safe for concurrent use.
type ULIDs struct {
	mu      sync.Mutex
	clock   clock.Clock
	entropy *ulid.MonotonicEntropy
}

// NewULIDs returns a ULID source over clk, with entropy from r (use a
// seeded reader in tests, crypto/rand.Reader in production).
func NewULIDs(clk clock.Clock, r io.Reader) *ULIDs {
	return &ULIDs{clock: clk, entropy: ulid.Monotonic(r, 0)}
}

// New returns the next ULID as a 26-character string.
func (u *ULIDs) New() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	id, err := ulid.New(ulid.Timestamp(u.clock.Now()), u.entropy)
	if err != nil {
		// Monotonic entropy overflows only after 2^80 IDs in one
		// millisecond; reaching it means the entropy source is broken.
		panic("ids: ulid: " + err.Error())
	}
	return id.String()
}

// Rand is a random source for jitter. It is safe for concurrent use.
type Rand struct {
	mu sync.Mutex
	r  *rand.Rand
}

// NewRand returns a Rand seeded with seed.
func NewRand(seed uint64) *Rand {
	return &Rand{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Float64 returns a number in [0, 1).
func (r *Rand) Float64() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Float64()
}

// Read fills p with pseudo-random bytes, so a seeded Rand can be the
// entropy of a ULIDs source in tests.
func (r *Rand) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range p {
		p[i] = byte(r.r.Uint32())
	}
	return len(p), nil
}
