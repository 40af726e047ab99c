package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
)

// drive carries a started, resumed or aborting run out in the background,
// so the request that asked for it returns at once and the run's page
// shows its progress. It outlives the request, not the process: a server
// that stops leaves the run where its last batch did, for `tidemark
// migrate resume` or the daemon to carry on once its lease expires.
func (s *Server) drive(ctx context.Context, id string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r, err := s.Docs.DriveMigration(context.WithoutCancel(ctx), id, nil)
		if err != nil {
			s.logger().Warn("migration stopped", "run", id, "status", r.Status, "err", err)
		}
	}()
	if s.driven != nil {
		s.driven(done)
	}
}

func (s *Server) migrationsPage(w http.ResponseWriter, r *http.Request) {
	runs, err := s.Docs.MigrationRuns(r.Context(), content.RunFilter{Collection: r.FormValue("collection"), Limit: 100})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cs, err := s.Docs.Collections(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	active := false
	for _, run := range runs {
		active = active || run.Status == content.RunRunning || run.Status == content.RunAborting
	}
	s.render(w, r, "migrations.html", map[string]any{"Runs": runs, "Collections": cs, "Types": content.FieldTypes,
		"Active": active, "Notice": s.takeNotice(w, r), "Batch": content.DefaultBatch, "MaxBatch": content.MaxBatch})
}

func (s *Server) migrationPage(w http.ResponseWriter, r *http.Request) {
	run, err := s.Docs.MigrationRun(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	acts, err := s.Docs.DocumentActions(r.Context(), content.ActionFilter{RunID: run.ID, Limit: 50})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	done, total, _ := run.Progress()
	pct := 0
	if total > 0 {
		pct = int(min(100, done*100/total))
	} else if !run.Status.Open() {
		pct = 100
	}
	// A run a live worker holds is being driven: resuming it would be
	// refused as held, so the page offers only the abort.
	driven := run.Held(s.now())
	s.render(w, r, "migration.html", map[string]any{"R": run, "Actions": acts, "Notice": s.takeNotice(w, r),
		"Active": run.Status == content.RunRunning || run.Status == content.RunAborting, "Driven": driven, "Percent": pct, "Done": done, "Total": total})
}

// startForm reads a migration's start from a form or a JSON body.
type startForm struct {
	Collection string `json:"collection"`
	Field      string `json:"field"`
	To         string `json:"to"`
	Batch      *int   `json:"batch"` // nil: content.DefaultBatch
}

// batch is the form's batch size, content.DefaultBatch when it gave none.
func (f startForm) batch() int {
	if f.Batch == nil {
		return content.DefaultBatch
	}
	return *f.Batch
}

func (s *Server) migrationStart(w http.ResponseWriter, r *http.Request) {
	f := startForm{Collection: r.PostFormValue("collection"), Field: r.PostFormValue("field"), To: r.PostFormValue("to")}
	if f.Collection == "" { // the form's one select names collection.field
		f.Collection, f.Field, _ = strings.Cut(f.Field, ".")
	}
	if b := r.PostFormValue("batch"); b != "" {
		n, err := strconv.Atoi(b)
		if err != nil {
			s.fail(w, r, tidemark.Invalidf("batch", b, "want a whole number of documents per transaction"))
			return
		}
		f.Batch = &n
	}
	run, err := s.Docs.StartMigration(r.Context(), actor(r), f.Collection, f.Field, f.To, f.batch())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.drive(r.Context(), run.ID)
	s.redirect(w, r, "/console/migrations/"+url.PathEscape(run.ID), fmt.Sprintf("started %s.%s %s→%s over %d documents", run.Collection, run.Field, run.From, run.To, run.Total), nil)
}

// act resumes or aborts a run, then drives it in the background.
func (s *Server) act(r *http.Request) (content.Run, error) {
	id := r.PathValue("id")
	switch r.PathValue("action") {
	case "resume":
		return s.Docs.ResumeMigration(r.Context(), actor(r), id)
	case "abort":
		return s.Docs.AbortMigration(r.Context(), actor(r), id)
	}
	return content.Run{}, fmt.Errorf("no migration action %q (want resume or abort): %w", r.PathValue("action"), tidemark.ErrNotFound)
}

func (s *Server) migrationAct(w http.ResponseWriter, r *http.Request) {
	run, err := s.act(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.drive(r.Context(), run.ID)
	done := map[string]string{"resume": "resumed", "abort": "aborting"}[r.PathValue("action")]
	s.redirect(w, r, "/console/migrations/"+url.PathEscape(run.ID), done+": "+run.Describe(), nil)
}

func (s *Server) apiMigrationStart(w http.ResponseWriter, r *http.Request) {
	var f startForm
	if err := decodeJSON(r, &f); err != nil {
		s.fail(w, r, err)
		return
	}
	run, err := s.Docs.StartMigration(r.Context(), actor(r), f.Collection, f.Field, f.To, f.batch())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.drive(r.Context(), run.ID)
	writeJSON(w, http.StatusAccepted, run)
}

func (s *Server) apiMigration(w http.ResponseWriter, r *http.Request) {
	run, err := s.Docs.MigrationRun(r.Context(), r.PathValue("id"))
	s.answer(w, r, http.StatusOK, run, err)
}

func (s *Server) apiMigrationAct(w http.ResponseWriter, r *http.Request) {
	if err := noFields(r); err != nil {
		s.fail(w, r, err)
		return
	}
	run, err := s.act(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.drive(r.Context(), run.ID)
	writeJSON(w, http.StatusAccepted, run)
}
