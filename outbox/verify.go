package outbox

import "fmt"

// CountVerdict is what the difference of a provider's counter says about
// one write.
type CountVerdict string

const (
	// CountNotLanded: the counter did not move.
	CountNotLanded CountVerdict = "not_landed"
	// CountLandedOnce: it moved by exactly one.
	CountLandedOnce CountVerdict = "landed_once"
	// CountDuplicate: it moved by more than one: duplicates to go and find.
	CountDuplicate CountVerdict = "duplicate"
	// CountUnknown: it went down (something was deleted meanwhile), so the
	// difference proves nothing.
	CountUnknown CountVerdict = "unknown"
)

// VerifyCount verifies a write by subtraction of the counter read before
// and after it: 0 not landed, 1 landed once, more than 1 duplicates. With
// one write in flight per lane nothing else of ours moves the counter.
func VerifyCount(before, after int64) (CountVerdict, error) {
	switch d := after - before; {
	case d == 0:
		return CountNotLanded, nil
	case d == 1:
		return CountLandedOnce, nil
	case d > 1:
		return CountDuplicate, fmt.Errorf("outbox: counter moved by %d for one write: duplicate alert", d)
	default:
		return CountUnknown, nil
	}
}
