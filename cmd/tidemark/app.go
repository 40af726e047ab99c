package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/tidemark/tidemark/pipeline"
)

// app is what every subcommand shares: the configuration (the environment
// and the global flags) and the pipeline, opened on first use.
type app struct {
	stdout, stderr io.Writer
	log            *slog.Logger

	cfg pipeline.Config
	// cfgErr is a setting that cannot be used; every command that runs
	// refuses it before it starts.
	cfgErr error
	p      *pipeline.Pipeline
}

func (a *app) close() {
	if a.p != nil {
		a.p.Close()
	}
}

// pipe opens the pipeline.
func (a *app) pipe(ctx context.Context) (*pipeline.Pipeline, error) {
	if a.p != nil {
		return a.p, nil
	}
	cfg := a.cfg
	cfg.Logger = a.log
	cfg.Warn = func(msg string) { fmt.Fprintf(a.stderr, "tidemark: %s\n", msg) }
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a.p = p
	return p, nil
}
