package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// The simulation drives the real ingest Service and SQL store with a
// seeded random schedule of fetches, failures, short reads, worker crashes,
// lease expiries mid-fetch, stale settlements and operator retries, and
// checks the invariants after every step. A failing seed is printed and
// replays exactly:
//
//	go test ./ingest -run TestSimulation -sim.seed=N
//
// FuzzSimulation explores seeds with Go's fuzzer, which keeps failing
// seeds under testdata/fuzz.

type sim struct {
	t        testing.TB
	rng      *rand.Rand
	env      sqltest.Env
	db       *sqlstore.DB
	st       ingest.Store
	svcs     []*ingest.Service
	upstream map[string][]string // source name → item keys, append-only
	versions map[string]int64    // last seen cursor version per source
	orphans  []tidemark.Claim    // claims whose worker "crashed"
	// interfere, when set, runs in the middle of the next fetch.
	interfere func()
	log       []string
}

const simLease = time.Minute

func newSim(t testing.TB, b sqltest.Backend, seed uint64) *sim {
	s := &sim{
		t:        t,
		rng:      rand.New(rand.NewPCG(seed, seed*31+7)),
		env:      sqltest.NewEnv(seed),
		upstream: map[string][]string{},
		versions: map[string]int64{},
	}
	s.db = sqltest.MustOpen(t, b, s.env)
	s.st = s.db.Ingest()
	for w := 0; w < 3; w++ {
		s.svcs = append(s.svcs, &ingest.Service{
			Store: s.st, Fetchers: ingest.Fetchers{"sim": fetchFunc(s.fetch)}, Clock: s.env.Clock, Rand: s.env.Rand,
			Holder: fmt.Sprintf("w%d", w), LeaseTTL: simLease, Retry: &ingest.RetryPolicy{Base: time.Second, CapFloor: time.Second, CapFactor: 10, CapMax: 10 * time.Second,
				Span: 2 * time.Minute, Short: ingest.Backoff{Base: time.Second, Max: 10 * time.Second}},
		})
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("src%d", i)
		if _, err := s.st.AddSource(context.Background(), ingest.NewSource{Name: name, Kind: "sim", Location: name, Interval: time.Second, RetryBudget: 3}); err != nil {
			t.Fatal(err)
		}
		s.upstream[name] = nil
	}
	return s
}

// fetch reads the simulated upstream ahead of the cursor, with seeded
// misbehaviour.
func (s *sim) fetch(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
	if f := s.interfere; f != nil {
		s.interfere = nil
		f()
	}
	pos := 0
	if cursor != "" {
		var err error
		if pos, err = strconv.Atoi(cursor); err != nil {
			return tidemark.FetchResult{}, tidemark.Unusable("bad cursor", err)
		}
	}
	switch s.rng.IntN(10) {
	case 0:
		return tidemark.FetchResult{}, tidemark.Unreachable("simulated outage", 0, nil)
	case 1:
		return tidemark.FetchResult{}, tidemark.Unusable("simulated garbage", nil)
	}
	keys := s.upstream[src.Name]
	end := min(len(keys), pos+1+s.rng.IntN(4))
	var items []tidemark.Item
	for _, k := range keys[pos:end] {
		items = append(items, tidemark.Item{Key: k, Title: k, Evidence: []byte("evidence " + k)})
	}
	res := tidemark.FetchResult{Items: items, Cursor: strconv.Itoa(end), Declared: len(items)}
	if len(items) > 0 && s.rng.IntN(8) == 0 {
		// The page said there was more than arrived.
		res.Items = items[:len(items)-1]
	}
	return res, nil
}

func (s *sim) step(i int) {
	ctx := context.Background()
	srcName := fmt.Sprintf("src%d", s.rng.IntN(3))
	w := s.svcs[s.rng.IntN(len(s.svcs))]
	switch op := s.rng.IntN(100); {
	case op < 35:
		if s.rng.IntN(5) == 0 {
			// Mid-fetch, the lease runs out and another worker takes over:
			// this run's settlement must change nothing.
			s.interfere = func() {
				s.env.Clock.Advance(simLease + time.Second)
				other := s.svcs[(indexOf(s.svcs, w)+1)%len(s.svcs)]
				if c, err := s.st.Claim(ctx, srcName, other.Holder, simLease); err == nil {
					s.orphans = append(s.orphans, c)
				}
			}
		}
		s.logf("%d: %s runs %s", i, w.Holder, srcName)
		before, serr := s.st.Source(ctx, srcName)
		if serr != nil {
			s.t.Fatal(serr)
		}
		rep, err := w.RunSource(ctx, srcName)
		if before.ClaimHolder == "" || before.ClaimHolder == w.Holder {
			// Claimed or re-entered by w: it was not refused, and its run
			// ended (settled, failed, or went stale when another took over);
			// it left no claim of its own behind.
			if errors.Is(err, tidemark.ErrClaimHeld) {
				s.t.Fatalf("step %d: %s was refused %s, which nobody else held: %v", i, w.Holder, srcName, err)
			}
			after, serr := s.st.Source(ctx, srcName)
			if serr != nil {
				s.t.Fatal(serr)
			}
			if after.ClaimHolder == w.Holder {
				s.t.Fatalf("step %d: %s's run on %s ended but left its claim (run %s)", i, w.Holder, srcName, after.ClaimRunID)
			}
		}
		if err != nil && !ingest.IsRunFailed(err) && !errors.Is(err, tidemark.ErrClaimHeld) &&
			!errors.Is(err, tidemark.ErrNotClaimable) && !errors.Is(err, tidemark.ErrStaleClaim) {
			s.t.Fatalf("step %d: run %s: unexpected error %v (report %+v)", i, srcName, err, rep)
		}
		s.interfere = nil
	case op < 45:
		s.logf("%d: %s claims %s and crashes", i, w.Holder, srcName)
		c, err := s.st.Claim(ctx, srcName, w.Holder, simLease)
		if err == nil && !c.Reentered {
			s.orphans = append(s.orphans, c)
		}
	case op < 55 && len(s.orphans) > 0:
		// A worker presumed dead comes back and tries to settle.
		c := s.orphans[s.rng.IntN(len(s.orphans))]
		cur, err := s.st.Source(ctx, c.SourceID)
		if err != nil {
			s.t.Fatal(err)
		}
		current := cur.ClaimRunID == c.RunID && cur.CursorVersion == c.CursorVersion
		s.logf("%d: orphan run %s settles (current=%v)", i, c.RunID, current)
		_, err = s.st.Settle(ctx, c, ingest.Settlement{Cursor: c.Cursor, NextDueAt: s.env.Clock.Now()})
		if current && err != nil {
			s.t.Fatalf("step %d: the current holder could not settle: %v", i, err)
		}
		if !current && !errors.Is(err, tidemark.ErrStaleClaim) {
			s.t.Fatalf("step %d: a stale claim settled: %v", i, err)
		}
	case op < 70:
		d := time.Duration(s.rng.IntN(90)) * time.Second
		s.logf("%d: clock +%s", i, d)
		s.env.Clock.Advance(d)
	case op < 90:
		n := 1 + s.rng.IntN(5)
		for j := 0; j < n; j++ {
			s.upstream[srcName] = append(s.upstream[srcName], fmt.Sprintf("%s-%d", srcName, len(s.upstream[srcName])))
		}
		s.logf("%d: upstream %s +%d", i, srcName, n)
	default:
		src, err := s.st.Source(ctx, srcName)
		if err != nil {
			s.t.Fatal(err)
		}
		if src.Window == tidemark.WindowTerminal {
			s.logf("%d: operator retries %s", i, srcName)
			if _, err := s.st.Retry(ctx, srcName, "sim", ""); err != nil {
				s.t.Fatalf("step %d: retry: %v", i, err)
			}
		}
	}
	s.check(i)
}

func indexOf(svcs []*ingest.Service, w *ingest.Service) int {
	for i, x := range svcs {
		if x == w {
			return i
		}
	}
	return -1
}

func (s *sim) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
	if len(s.log) > 30 {
		s.log = s.log[1:]
	}
}

// check asserts the invariants.
func (s *sim) check(i int) {
	ctx := context.Background()
	fail := func(format string, args ...any) {
		s.t.Fatalf("step %d: %s\nlast steps:\n  %s", i, fmt.Sprintf(format, args...), joinLines(s.log))
	}
	q := func(query string, args ...any) int {
		var n int
		if err := s.db.SQL().QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
			s.t.Fatal(err)
		}
		return n
	}
	for name, keys := range s.upstream {
		src, err := s.st.Source(ctx, name)
		if err != nil {
			s.t.Fatal(err)
		}
		if src.CursorVersion < s.versions[name] {
			fail("%s: cursor version went back from %d to %d", name, s.versions[name], src.CursorVersion)
		}
		s.versions[name] = src.CursorVersion
		pos := 0
		if src.Cursor != "" {
			pos, _ = strconv.Atoi(src.Cursor)
		}
		if pos > len(keys) {
			fail("%s: cursor %d is past the upstream's %d items", name, pos, len(keys))
		}
		// Nothing behind the cursor went unread.
		for _, k := range keys[:pos] {
			if q(`SELECT COUNT(*) FROM events WHERE source_id = $1 AND item_key = $2`, src.ID, k) != 1 {
				fail("%s: cursor at %d but item %s has no event", name, pos, k)
			}
		}
		if n := q(`SELECT COUNT(*) FROM ingest_runs WHERE source_id = $1 AND status = 'active'`, src.ID); n > 1 {
			fail("%s: %d active runs", name, n)
		}
		if (src.ClaimHolder != "") != (q(`SELECT COUNT(*) FROM ingest_runs WHERE source_id = $1 AND status = 'active'`, src.ID) == 1) {
			fail("%s: claim holder %q disagrees with its active runs", name, src.ClaimHolder)
		}
	}
	if n := q(`SELECT COUNT(*) FROM ingest_runs r WHERE r.status <> 'active' AND NOT EXISTS (SELECT 1 FROM ingest_audit a WHERE a.run_id = r.id)`); n != 0 {
		fail("%d finished runs without an audit row", n)
	}
	if n := q(`SELECT COUNT(*) FROM ingest_audit a JOIN ingest_runs r ON r.id = a.run_id WHERE r.status = 'active'`); n != 0 {
		fail("%d active runs with an audit row", n)
	}
	if n := q(`SELECT COUNT(*) FROM ingest_runs WHERE status = 'failed' AND outcome IN ('items', 'empty')`); n != 0 {
		fail("%d failed runs with a success outcome", n)
	}
	if n := q(`SELECT COUNT(*) FROM ingest_audit WHERE outcome NOT IN ('items', 'empty') AND (cursor_before <> cursor_after OR cursor_version_before <> cursor_version_after)`); n != 0 {
		fail("%d failed runs moved a cursor", n)
	}
}

func joinLines(lines []string) string {
	out := ""
	for i, l := range lines {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}

func runSim(t testing.TB, b sqltest.Backend, seed uint64, steps int) {
	s := newSim(t, b, seed)
	for i := 0; i < steps; i++ {
		s.step(i)
	}
}

func TestSimulation(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	if *simSeed != 0 {
		seeds = []uint64{*simSeed}
	}
	steps := 250
	if testing.Short() {
		steps = 60
	}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runSim(t, b, seed, steps) })
		}
	})
}

func FuzzSimulation(f *testing.F) {
	for _, s := range []uint64{1, 42, 1234} {
		f.Add(s)
	}
	b := sqltest.Backends()[0]
	f.Fuzz(func(t *testing.T, seed uint64) { runSim(t, b, seed, 80) })
}
