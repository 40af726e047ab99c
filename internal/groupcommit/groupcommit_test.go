package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// Every caller gets its own result, batches never exceed the limit, and
// callers that arrive while a batch is written are carried together.
func TestEachCallerGetsItsOwnResult(t *testing.T) {
	var g Group[int, string]
	var mu sync.Mutex
	var sizes []int
	gate := make(chan struct{})
	write := func(_ context.Context, ins []int) ([]string, []error) {
		mu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, len(ins))
		mu.Unlock()
		if first {
			<-gate // hold the first batch until the others queue
		}
		outs, errs := make([]string, len(ins)), make([]error, len(ins))
		for i, in := range ins {
			if in%7 == 0 {
				errs[i] = fmt.Errorf("refused %d", in)
				continue
			}
			outs[i] = fmt.Sprint("done ", in)
		}
		return outs, errs
	}
	const n, limit = 50, 8
	var wg sync.WaitGroup
	started := make(chan struct{}, n)
	results := make([]string, n)
	errs := make([]error, n)
	wg.Add(1)
	go func() { // the leader of the first batch
		defer wg.Done()
		results[1], errs[1] = g.Do(context.Background(), 1, limit, write)
	}()
	for { // until the first batch is being written
		mu.Lock()
		ok := len(sizes) == 1
		mu.Unlock()
		if ok {
			break
		}
		runtime.Gosched()
	}
	for i := 2; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			results[i], errs[i] = g.Do(context.Background(), i, limit, write)
		}()
	}
	for i := 2; i < n; i++ {
		<-started
	}
	for { // all queued behind the held batch
		g.mu.Lock()
		queued := len(g.pending)
		g.mu.Unlock()
		if queued == n-2 {
			break
		}
		runtime.Gosched()
	}
	close(gate)
	wg.Wait()
	for i := 1; i < n; i++ {
		switch {
		case i%7 == 0:
			if errs[i] == nil || errs[i].Error() != fmt.Sprint("refused ", i) || results[i] != "" {
				t.Errorf("request %d: %q, %v; want its own refusal", i, results[i], errs[i])
			}
		case errs[i] != nil || results[i] != fmt.Sprint("done ", i):
			t.Errorf("request %d: %q, %v; want its own result", i, results[i], errs[i])
		}
	}
	total := 0
	for _, s := range sizes {
		if s > limit {
			t.Errorf("a batch of %d, over the limit of %d", s, limit)
		}
		total += s
	}
	if total != n-1 {
		t.Errorf("batches carried %d requests, want %d", total, n-1)
	}
	// 1 alone, then the 48 queued in batches of 8.
	if want := 1 + (n-2+limit-1)/limit; len(sizes) != want {
		t.Errorf("%d batches (%v), want %d", len(sizes), sizes, want)
	}
	if g.leading || len(g.pending) != 0 {
		t.Errorf("after the last batch: leading %v, %d pending", g.leading, len(g.pending))
	}
}

// A caller alone writes its request at once, under its own context.
func TestAloneWritesAtOnce(t *testing.T) {
	var g Group[int, int]
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "mine")
	out, err := g.Do(ctx, 3, 0, func(ctx context.Context, ins []int) ([]int, []error) {
		if ctx.Value(key{}) != "mine" || len(ins) != 1 {
			return []int{0}, []error{errors.New("not the caller's context or not alone")}
		}
		return []int{ins[0] * 2}, []error{nil}
	})
	if err != nil || out != 6 {
		t.Fatalf("Do = %d, %v; want 6", out, err)
	}
}
