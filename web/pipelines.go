package web

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/outbox"
)

// OutboxView is what the status pages and /metrics read of the outbox.
type OutboxView interface {
	OutboxStats
	Lanes(ctx context.Context) ([]outbox.Lane, error)
	Lane(ctx context.Context, name string) (outbox.Lane, error)
	Gaps(ctx context.Context, lane string) ([]outbox.GapReport, error)
	ListIntents(ctx context.Context, f outbox.IntentFilter) ([]outbox.Intent, error)
}

// MigrationView is what the status pages and /metrics read of field
// migrations.
type MigrationView interface {
	MigrationStats
	Runs(ctx context.Context, f content.RunFilter) ([]content.Run, error)
}

// intentStates are the outbox states in the order the pages show them.
var intentStates = []outbox.State{outbox.StatePending, outbox.StateSending, outbox.StateLanded,
	outbox.StateUnresolved, outbox.StateUnexecutable, outbox.StateRetired, outbox.StateCollision}

// lanes are the lanes with their gaps; with OutboxOps, with their
// guarantee and health too.
func (s *Server) lanes(ctx context.Context) (outbox.LaneViews, error) {
	if s.OutboxOps != nil {
		return s.OutboxOps.Lanes(ctx)
	}
	if s.Outbox == nil {
		return outbox.LaneViews{}, nil
	}
	lanes, err := s.Outbox.Lanes(ctx)
	if err != nil {
		return nil, err
	}
	gaps, err := s.Outbox.Gaps(ctx, "")
	if err != nil {
		return nil, err
	}
	rows := make(outbox.LaneViews, len(lanes))
	for i, l := range lanes {
		rows[i] = outbox.LaneView{Lane: l}
		for j := range gaps {
			if gaps[j].Lane == l.Name {
				rows[i].Gaps = &gaps[j]
			}
		}
	}
	return rows, nil
}

func (s *Server) migrations(ctx context.Context, limit int) ([]content.Run, error) {
	if s.Migrations == nil {
		return []content.Run{}, nil
	}
	return s.Migrations.Runs(ctx, content.RunFilter{Limit: limit})
}

func (s *Server) apiLanes(w http.ResponseWriter, r *http.Request) {
	limit, cur, err := pageParams(r, "lanes")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows, err := s.lanes(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageAfter(rows, limit, cur, "lanes", func(l outbox.LaneView) string { return l.Name }))
}

func (s *Server) apiIntents(w http.ResponseWriter, r *http.Request) {
	limit, cur, err := pageParams(r, "intents")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	f := outbox.IntentFilter{Lane: q.Get("lane"), State: outbox.State(q.Get("state")), Limit: limit + 1, AfterLane: cur.Key, AfterRank: cur.N}
	var lanes outbox.LaneReader = noLanes{}
	if s.Outbox != nil {
		lanes = s.Outbox
	}
	if err := outbox.CheckIntentFilter(r.Context(), lanes, f); err != nil {
		s.fail(w, r, err)
		return
	}
	if s.Outbox == nil {
		writeJSON(w, http.StatusOK, Page[outbox.Intent]{Items: []outbox.Intent{}})
		return
	}
	ins, err := s.Outbox.ListIntents(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, paginate(ins, limit, func(last outbox.Intent) pageCursor {
		return pageCursor{List: "intents", Key: last.Lane, N: last.Rank}
	}))
}

// noLanes are the lanes of a server without the outbox: none.
type noLanes struct{}

func (noLanes) Lane(_ context.Context, name string) (outbox.Lane, error) {
	return outbox.Lane{}, fmt.Errorf("lane %q: %w", name, tidemark.ErrNotFound)
}

func (s *Server) apiMigrations(w http.ResponseWriter, r *http.Request) {
	limit, cur, err := pageParams(r, "migrations")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.Migrations == nil {
		writeJSON(w, http.StatusOK, Page[content.Run]{Items: []content.Run{}})
		return
	}
	runs, err := s.Migrations.Runs(r.Context(), content.RunFilter{Limit: limit + 1, BeforeCreatedAt: time.UnixMilli(cur.At), BeforeID: cur.Key})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, paginate(runs, limit, func(last content.Run) pageCursor {
		return pageCursor{List: "migrations", At: last.CreatedAt.UnixMilli(), Key: last.ID}
	}))
}

func (s *Server) lanePage(w http.ResponseWriter, r *http.Request) {
	if s.OutboxOps != nil {
		s.laneConsole(w, r)
		return
	}
	if s.Outbox == nil {
		http.NotFound(w, r)
		return
	}
	rows, err := s.lanes(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var lane *outbox.LaneView
	for i := range rows {
		if rows[i].Name == r.PathValue("name") {
			lane = &rows[i]
		}
	}
	if lane == nil {
		http.NotFound(w, r)
		return
	}
	ins, err := s.Outbox.ListIntents(r.Context(), outbox.IntentFilter{Lane: lane.Name, Limit: 200})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "lane.html", map[string]any{"L": lane, "Intents": ins, "States": intentStates})
}
