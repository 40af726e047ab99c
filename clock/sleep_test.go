package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidemark/tidemark/clock"
)

// Sleep ends with its context, saying so, however long it was asked to
// wait; a wait of nothing returns at once, even under an ended context.
func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := clock.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep under an ended context: %v, want context.Canceled", err)
	}
	if err := clock.Sleep(ctx, 0); err != nil {
		t.Fatalf("Sleep of nothing: %v", err)
	}
	if err := clock.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep of a millisecond: %v", err)
	}
}
