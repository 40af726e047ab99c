package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// Limits on numeric flags: a value outside them is refused when the flag is
// parsed (exit 2), before anything is opened or claimed.
const (
	maxWorkers = 256
	maxLimit   = 100_000
	minLease   = time.Second // ingest.MinLeaseTTL; outbox lanes the same
	maxLease   = 24 * time.Hour
)

// intRange is an int flag that accepts only [min, max].
type intRange struct {
	p        *int
	min, max int
}

func (v *intRange) String() string { return strconv.Itoa(*v.p) }
func (v *intRange) Type() string   { return "int" }
func (v *intRange) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("not a whole number")
	}
	if n < v.min || n > v.max {
		return fmt.Errorf("must be from %d to %d", v.min, v.max)
	}
	*v.p = n
	return nil
}

// intFlag defines an int flag bounded to [min, max].
func intFlag(f *pflag.FlagSet, p *int, name string, def, min, max int, usage string) {
	*p = def
	f.Var(&intRange{p: p, min: min, max: max}, name, fmt.Sprintf("%s (%d to %d)", usage, min, max))
}

// limitFlag is the --limit of a listing.
func limitFlag(f *pflag.FlagSet, p *int, def int, usage string) {
	intFlag(f, p, "limit", def, 1, maxLimit, usage)
}

// durationRange is a duration flag that accepts only [min, max].
type durationRange struct {
	p        *time.Duration
	min, max time.Duration
}

func (v *durationRange) String() string { return v.p.String() }
func (v *durationRange) Type() string   { return "duration" }
func (v *durationRange) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration such as 90s or 2m")
	}
	if d < v.min || d > v.max {
		return fmt.Errorf("must be from %s to %s", v.min, v.max)
	}
	*v.p = d
	return nil
}

// durationFlag defines a duration flag bounded to [min, max].
func durationFlag(f *pflag.FlagSet, p *time.Duration, name string, def, min, max time.Duration, usage string) {
	*p = def
	f.Var(&durationRange{p: p, min: min, max: max}, name, fmt.Sprintf("%s (%s to %s)", usage, min, max))
}
