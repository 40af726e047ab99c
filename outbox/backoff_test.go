package outbox

import (
	"math"
	"testing"
	"time"
)

// failureBackoff: none after an intent's first failed attempt, then 2s
// doubling to MaxFailureBackoff, which it keeps however many attempts
// failed (no overflow to a short or negative wait).
func TestFailureBackoffDoublesToItsCap(t *testing.T) {
	for n, want := range map[int]time.Duration{
		math.MinInt: 0, -1: 0, 0: 0, 1: 0,
		2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 8: 128 * time.Second, 9: 256 * time.Second,
		10: MaxFailureBackoff, 11: MaxFailureBackoff, 33: MaxFailureBackoff, 34: MaxFailureBackoff,
		63: MaxFailureBackoff, 64: MaxFailureBackoff, 65: MaxFailureBackoff, 1 << 40: MaxFailureBackoff, math.MaxInt: MaxFailureBackoff,
	} {
		if got := failureBackoff(n); got != want {
			t.Errorf("failureBackoff(%d) = %v, want %v", n, got, want)
		}
	}
}
