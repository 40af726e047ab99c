// Package testctx holds contexts for tests: a caller's context whose
// deadline passes when the test says so, not on a clock.
package testctx

import (
	"context"
	"sync"
	"time"
)

// Deadline is a context with a deadline (its Deadline method says when),
// which passes only when Pass is called: then Done is closed and Err is
// context.DeadlineExceeded, as for a deadline that passed. A test decides
// the moment, so nothing waits on a clock or races one.
type Deadline struct {
	context.Context
	at   time.Time
	done chan struct{}
	once sync.Once
}

// WithDeadline returns a Deadline under parent that says it ends at at.
func WithDeadline(parent context.Context, at time.Time) *Deadline {
	return &Deadline{Context: parent, at: at, done: make(chan struct{})}
}

// Pass makes the deadline pass; calling it again does nothing.
func (c *Deadline) Pass() { c.once.Do(func() { close(c.done) }) }

func (c *Deadline) Deadline() (time.Time, bool) { return c.at, true }
func (c *Deadline) Done() <-chan struct{}       { return c.done }
func (c *Deadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
