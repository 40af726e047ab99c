package ingest_test

import "flag"

var simSeed = flag.Uint64("sim.seed", 0, "replay one simulation seed")
