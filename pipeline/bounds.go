package pipeline

import (
	"fmt"
	"strconv"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

// Bounds on the numbers an operation is given: how many workers, how long
// a listing, how long a lease. A command line refuses a value outside them
// when it is parsed, before anything is opened or claimed.
const (
	MaxWorkers = 256
	MaxLimit   = 100_000
	MinLease   = ingest.MinLeaseTTL // outbox lanes the same
	MaxLease   = 24 * time.Hour
)

// DefaultLaneLease is a lane's lease while it is delivered when none is
// given (a ttl of 0).
const DefaultLaneLease = time.Minute

// checkLaneLease refuses a lane lease that RunOnce would refuse as a
// claim's: under MinLease, save 0 (the default).
func checkLaneLease(ttl time.Duration) error {
	if ttl != 0 && ttl < MinLease {
		return tidemark.Invalidf("ttl", ttl.String(), "must be at least %s (0 means %s)", MinLease, DefaultLaneLease)
	}
	return nil
}

// IntRange is an int that accepts only [Min, Max] when set from text (a
// flag's value: it has the methods of flag.Value and pflag.Value).
type IntRange struct {
	P        *int
	Min, Max int
}

func (v *IntRange) String() string { return strconv.Itoa(*v.P) }
func (v *IntRange) Type() string   { return "int" }
func (v *IntRange) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("not a whole number")
	}
	if n < v.Min || n > v.Max {
		return fmt.Errorf("must be from %d to %d", v.Min, v.Max)
	}
	*v.P = n
	return nil
}

// DurationRange is a duration that accepts only [Min, Max] when set from
// text (a flag's value).
type DurationRange struct {
	P        *time.Duration
	Min, Max time.Duration
}

func (v *DurationRange) String() string { return v.P.String() }
func (v *DurationRange) Type() string   { return "duration" }
func (v *DurationRange) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration such as 90s or 2m")
	}
	if d < v.Min || d > v.Max {
		return fmt.Errorf("must be from %s to %s", v.Min, v.Max)
	}
	*v.P = d
	return nil
}
