package ingest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A listing's filter that names a source, a run or an event that does not
// exist is not found, naming what was not found, whichever filter it is: an
// empty page would say "nothing here" about something that is not there.
func TestListFiltersNamingNothingAreNotFound(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(1)
		db := sqltest.MustOpen(t, b, env)
		st := db.Ingest()
		evs := sqltest.MustIngest(t, db, env, "blog", "a", "b")

		runs := []struct {
			name string
			f    ingest.RunFilter
			want string
		}{
			{"source", ingest.RunFilter{SourceID: "nope"}, `source "nope"`},
			{"after", ingest.RunFilter{BeforeID: "nope"}, "run nope"},
		}
		for _, c := range runs {
			_, err := ingest.ResolveRunFilter(ctx, st, c.f)
			if !errors.Is(err, tidemark.ErrNotFound) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("runs by an unknown %s: %v, want not found naming %s", c.name, err, c.want)
			}
		}
		events := []struct {
			name string
			f    ingest.EventFilter
			want string
		}{
			{"source", ingest.EventFilter{SourceID: "nope"}, `source "nope"`},
			{"run", ingest.EventFilter{RunID: "nope"}, "run nope"},
			{"after", ingest.EventFilter{BeforeID: "nope"}, "event nope"},
		}
		for _, c := range events {
			_, err := ingest.ResolveEventFilter(ctx, st, c.f)
			if !errors.Is(err, tidemark.ErrNotFound) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("events by an unknown %s: %v, want not found naming %s", c.name, err, c.want)
			}
		}

		// Filters naming what exists pass, by name or by ID.
		if _, err := ingest.ResolveRunFilter(ctx, st, ingest.RunFilter{SourceID: "blog"}); err != nil {
			t.Errorf("runs of a source by name: %v", err)
		}
		f, err := ingest.ResolveEventFilter(ctx, st, ingest.EventFilter{SourceID: evs[0].SourceID, RunID: evs[0].RunID, BeforeID: evs[0].ID})
		if err != nil || !f.BeforeOccurredAt.Equal(evs[0].OccurredAt) {
			t.Errorf("events of a run after an event: %v %+v", err, f)
		}
	})
}
