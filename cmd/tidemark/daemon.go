package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
)

// The daemon's loops (delivery, publish and sweep, field migrations) never
// die silently: an error is logged and the loop goes on after a capped,
// growing pause, or, when retrying cannot help (bad configuration), the
// loop returns it and runDaemon stops the whole process with it.

// daemonSleep is how a daemon loop waits; tests replace it so that no test
// sleeps.
var daemonSleep = outbox.Sleep

// Pauses after consecutive failures of a daemon loop.
const (
	backoffMin = time.Second
	backoffMax = 5 * time.Minute
)

// backoff is a pause that doubles with each consecutive failure, from Min
// up to Max, and starts over after a success.
type backoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

func newBackoff() *backoff { return &backoff{Min: backoffMin, Max: backoffMax} }

// Fail returns the pause after one more failure.
func (b *backoff) Fail() time.Duration {
	if b.cur == 0 {
		b.cur = b.Min
	} else {
		b.cur = min(2*b.cur, b.Max)
	}
	return b.cur
}

// Reset starts over after a success.
func (b *backoff) Reset() { b.cur = 0 }

// fatalLoopError reports whether a loop's error stops the daemon: the
// configuration is wrong, and waiting will not fix it. Anything else (a
// database or an object store that is away, a provider that fails) is
// retried.
func fatalLoopError(err error) bool { return errors.Is(err, tidemark.ErrInvalid) }

// runDaemon runs main (the ingest scheduler) and every loop until ctx ends
// or one of them fails. A loop that returns an error other than ctx's end
// cancels the rest and its error is returned, so the process exits
// non-zero at once instead of running on without it.
func runDaemon(ctx context.Context, a *app, main func(context.Context) error, loops []func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type ended struct {
		loop bool
		err  error
	}
	done := make(chan ended, len(loops)+1)
	for _, loop := range loops {
		go func() { done <- ended{true, loop(ctx)} }()
	}
	go func() { done <- ended{false, main(ctx)} }()
	var failed []error
	for range len(loops) + 1 {
		e := <-done
		if e.err == nil || (ctx.Err() != nil && errors.Is(e.err, ctx.Err())) {
			continue
		}
		if e.loop {
			a.log.Error("daemon loop stopped; stopping the daemon", "err", e.err)
		}
		failed = append(failed, e.err)
		cancel(e.err)
	}
	return errors.Join(failed...)
}

// sweepInterval reads TIDEMARK_SWEEP_INTERVAL (default 1m), refusing
// anything but a positive duration.
func sweepInterval() (time.Duration, error) {
	v := os.Getenv("TIDEMARK_SWEEP_INTERVAL")
	if v == "" {
		return time.Minute, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, tidemark.Invalidf("TIDEMARK_SWEEP_INTERVAL", v, "want a positive duration such as 1m")
	}
	return d, nil
}

// retryStart calls start until it succeeds, ctx ends, or it fails in a way
// retrying cannot fix; each other failure is logged and waited out.
func retryStart[T any](ctx context.Context, a *app, what string, start func() (T, error)) (T, error) {
	b := newBackoff()
	for {
		v, err := start()
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return v, ctx.Err()
		}
		if fatalLoopError(err) {
			return v, fmt.Errorf("%s: %w", what, err)
		}
		pause := b.Fail()
		a.log.Error(what+" failed; retrying", "err", err, "retry_in", pause)
		if err := daemonSleep(ctx, pause); err != nil {
			return v, err
		}
	}
}
