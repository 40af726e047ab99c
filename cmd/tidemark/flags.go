package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/tidemark/tidemark/pipeline"
)

// Numeric flags are bounded (pipeline's bounds): a value outside them is
// refused when the flag is parsed (exit 2), before anything is opened or
// claimed.

// intFlag defines an int flag bounded to [min, max].
func intFlag(f *pflag.FlagSet, p *int, name string, def, min, max int, usage string) {
	*p = def
	f.Var(&pipeline.IntRange{P: p, Min: min, Max: max}, name, fmt.Sprintf("%s (%d to %d)", usage, min, max))
}

// limitFlag is the --limit of a listing.
func limitFlag(f *pflag.FlagSet, p *int, def int, usage string) {
	intFlag(f, p, "limit", def, 1, pipeline.MaxLimit, usage)
}

// durationFlag defines a duration flag bounded to [min, max].
func durationFlag(f *pflag.FlagSet, p *time.Duration, name string, def, min, max time.Duration, usage string) {
	*p = def
	f.Var(&pipeline.DurationRange{P: p, Min: min, Max: max}, name, fmt.Sprintf("%s (%s to %s)", usage, min, max))
}
