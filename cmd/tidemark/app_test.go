package main

import (
	"context"

	"github.com/tidemark/tidemark/sqlstore"
)

// open opens the pipeline and returns its database, for a test to look
// at what a command stored.
func (a *app) open(ctx context.Context) (*sqlstore.DB, error) {
	p, err := a.pipe(ctx)
	if err != nil {
		return nil, err
	}
	return p.DB(), nil
}
