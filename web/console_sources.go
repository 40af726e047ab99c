package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/publish"
)

// SourceOps are the source operations behind the console's forms and the
// API's writes (pipeline.Pipeline implements them). Each change is
// audited with the actor given (the signed-in token's name); a removal
// that would delete data is refused unless forced.
type SourceOps interface {
	AddSource(ctx context.Context, ns ingest.NewSource) (tidemark.Source, error)
	TestSource(ctx context.Context, req ingest.TestRequest) (ingest.TestReport, error)
	SetSource(ctx context.Context, ref string, ch ingest.Settings, actor string) (tidemark.Source, error)
	RenameSource(ctx context.Context, ref, name, actor string) (tidemark.Source, error)
	RemoveSource(ctx context.Context, ref, actor string, force bool) (ingest.Removal, error)
	PauseSource(ctx context.Context, ref, actor string) (tidemark.Source, error)
	ResumeSource(ctx context.Context, ref, actor string) (tidemark.Source, error)
	RetrySource(ctx context.Context, ref, actor, note string) (tidemark.Source, error)
	SkipSource(ctx context.Context, ref, to, actor, note string) (tidemark.Source, error)
	RunSource(ctx context.Context, ref string, maxPasses int, onReport func(ingest.Report, error)) ([]ingest.Report, error)
}

// How much the source routes show and do in one request.
const (
	pageSize = 50
	// consoleRunPasses bounds a console's or the API's "run now": one
	// request, a few runs while the source has a backlog.
	consoleRunPasses = 5
)

// sourceRoutes are the source console's pages, and its writes and the
// API's when s.Sources is set (each write is audited by Server.Write).
func (s *Server) sourceRoutes() []route {
	get := func(pattern string, h http.HandlerFunc) route {
		return route{Method: http.MethodGet, Pattern: pattern, Access: private, Handler: h}
	}
	write := privateRoute
	rs := []route{
		get("/status/runs", s.runsPage),
		get("/status/runs/{id}", s.runPage),
		get("/status/events", s.eventsPage),
		get("/status/events/{id}", s.eventPage),
		// every revision of every event, published or not: signed in only
		{Method: http.MethodGet, Pattern: "/status/events/{event}/evidence/{revision}", Access: private,
			Handler: EvidenceHandler(func(ctx context.Context, id string, rev int) ([]byte, string, error) {
				return s.Ingest.Evidence(ctx, id, rev)
			})},
		get("/api/runs/{run}", s.apiRun),
		get("/api/events/{event}", s.apiEvent),
	}
	if s.Sources == nil {
		return rs
	}
	rs = append(rs,
		write(http.MethodPost, "/status/sources", "source add", s.consoleAdd),
		write(http.MethodPost, "/status/sources/test", "source test", s.consoleTest),
		get("/status/sources/{name}/remove", s.removePage),
		write(http.MethodPost, "/status/sources/{name}/remove", "source remove", s.consoleOp),
		write(http.MethodPost, "/api/sources", "source add", s.apiAdd),
		write(http.MethodPost, "/api/sources/test", "source test", s.apiTest),
		write(http.MethodPatch, "/api/sources/{name}", "source set", s.apiPatch),
		write(http.MethodDelete, "/api/sources/{name}", "source remove", s.apiDelete),
	)
	// One route per operation, so the audit names each as the API's are
	// named (source pause, source run, …) and an operation that is not
	// one is a 404 before anything is audited.
	for _, op := range []string{"pause", "resume", "retry", "skip", "run", "rename", "set"} {
		rs = append(rs, write(http.MethodPost, "/status/sources/{name}/"+op, "source "+op, s.consoleOp))
	}
	for _, op := range []string{"pause", "resume", "retry", "skip", "run"} {
		rs = append(rs, write(http.MethodPost, "/api/sources/{name}/"+op, "source "+op, s.apiOp))
	}
	return rs
}

// sourcePath is a source's console page: its name, escaped, is the path
// segment, so every stored name reaches the page (the mux matches the
// escaped path and unescapes {name}). A name no path segment carries, a dot
// segment that browsers and the mux resolve away (only an older version
// could store one), is the source's ID instead when the caller has it:
// names and IDs both find a source.
func sourcePath(name string, id ...string) string {
	if (name == "" || name == "." || name == "..") && len(id) > 0 && id[0] != "" {
		name = id[0]
	}
	return "/status/sources/" + url.PathEscape(name)
}

// addForm is the console's form for a new source, as typed.
type addForm struct {
	Location, Name, Kind, Interval, RetryBudget, Config, Cursor string
	AllowPrivate                                                bool
}

func defaultAddForm() addForm {
	return addForm{Interval: ingest.DefaultInterval.String(), RetryBudget: strconv.Itoa(ingest.DefaultRetryBudget)}
}

func readAddForm(w http.ResponseWriter, r *http.Request) (addForm, error) {
	if err := r.ParseForm(); err != nil {
		return addForm{}, tidemark.Invalidf("form", "", "unreadable: %v", err)
	}
	v := r.PostForm
	return addForm{Location: strings.TrimSpace(v.Get("location")), Name: strings.TrimSpace(v.Get("name")), Kind: strings.TrimSpace(v.Get("kind")),
		Interval: strings.TrimSpace(v.Get("interval")), RetryBudget: strings.TrimSpace(v.Get("retry_budget")),
		Config: v.Get("config"), Cursor: v.Get("cursor"), AllowPrivate: v.Get("allow_private") != ""}, nil
}

// newSource reads the form as a new source; the kind-specific settings
// are one key=value a line.
func (f addForm) newSource() (ingest.NewSource, error) {
	ns := ingest.NewSource{Name: f.Name, Kind: f.Kind, Location: f.Location, AllowPrivate: f.AllowPrivate}
	if ns.Location == "" {
		return ns, tidemark.Invalidf("location", "", "must not be empty")
	}
	// A field left blank is its default, as an absent one is over the API.
	ns.Interval, ns.RetryBudget = ingest.DefaultInterval, ingest.DefaultRetryBudget
	var err error
	if f.Interval != "" {
		if ns.Interval, err = time.ParseDuration(f.Interval); err != nil {
			return ns, tidemark.Invalidf("interval", f.Interval, "want a duration such as 15m or 1h, or blank for %s", ingest.DefaultInterval)
		}
	}
	if f.RetryBudget != "" {
		if ns.RetryBudget, err = strconv.Atoi(f.RetryBudget); err != nil {
			return ns, tidemark.Invalidf("retry_budget", f.RetryBudget, "want a whole number, or blank for %d", ingest.DefaultRetryBudget)
		}
	}
	var lines []string
	for _, l := range strings.Split(f.Config, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	ns.Config, err = tidemark.ParseKeyValues("settings", lines)
	if err != nil {
		return ns, err
	}
	return ns, nil
}

func (s *Server) renderAdd(w http.ResponseWriter, r *http.Request, status int, f addForm, rep *ingest.TestReport, err error) {
	data := map[string]any{"Form": f, "Report": rep}
	if err != nil {
		data["Problem"] = s.problemText(r, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := pages.ExecuteTemplate(w, "source_add.html", data); err != nil {
		s.logger().Error("render", "page", "source_add.html", "err", err)
	}
}

// consoleTest fetches the form's location once and shows what it would
// produce, with the form to add it.
func (s *Server) consoleTest(w http.ResponseWriter, r *http.Request) {
	f, err := readAddForm(w, r)
	if err != nil {
		s.renderAdd(w, r, tidemark.HTTPStatus(err), f, nil, err)
		return
	}
	ns, err := f.newSource()
	if err != nil {
		s.renderAdd(w, r, tidemark.HTTPStatus(err), f, nil, err)
		return
	}
	rep, err := s.Sources.TestSource(r.Context(), ingest.TestRequest{Source: ns, Cursor: f.Cursor})
	if err != nil {
		s.renderAdd(w, r, tidemark.HTTPStatus(err), f, nil, err)
		return
	}
	if f.Name == "" {
		f.Name = rep.Name
	}
	if f.Kind == "" {
		f.Kind = rep.Kind
	}
	s.renderAdd(w, r, http.StatusOK, f, &rep, nil)
}

func (s *Server) consoleAdd(w http.ResponseWriter, r *http.Request) {
	f, err := readAddForm(w, r)
	if err == nil {
		var ns ingest.NewSource
		if ns, err = f.newSource(); err == nil {
			var src tidemark.Source
			if src, err = s.Sources.AddSource(r.Context(), ns); err == nil {
				s.redirect(w, r, sourcePath(src.Name, src.ID), ingest.AddedLine(src), nil)
				return
			}
		}
	}
	s.renderAdd(w, r, tidemark.HTTPStatus(err), f, nil, err)
}

// consoleOp performs one form's operation on a source and redirects back
// to it (to the list after a removal) with what happened.
func (s *Server) consoleOp(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := r.ParseForm(); err != nil {
		s.redirect(w, r, sourcePath(name), "", tidemark.Invalidf("form", "", "unreadable: %v", err))
		return
	}
	back, op := sourcePath(name), path.Base(r.URL.Path)
	msg, err := s.sourceOp(r, name, op, r.PostForm)
	switch {
	case errors.Is(err, tidemark.ErrNotFound) && op != "remove":
		http.NotFound(w, r)
	case err != nil:
		s.redirect(w, r, back, "", err)
	case op == "remove":
		s.redirect(w, r, "/status", msg, nil)
	case op == "rename":
		s.redirect(w, r, sourcePath(strings.TrimSpace(r.PostForm.Get("name"))), msg, nil)
	default:
		s.redirect(w, r, back, msg, nil)
	}
}

// sourceOp performs op on the named source with the form's values and
// says what it did.
func (s *Server) sourceOp(r *http.Request, name, op string, v url.Values) (string, error) {
	ctx, actor := r.Context(), actor(r)
	if src, ok, err := s.moveSource(ctx, op, name, actor, strings.TrimSpace(v.Get("to")), v.Get("note")); ok {
		switch op {
		case "retry":
			return ingest.RetriedLine(src), err
		case "skip":
			return ingest.SkippedLine(src), err
		}
		return ingest.StateLine(src), err
	}
	switch op {
	case "run":
		reports, err := s.Sources.RunSource(ctx, name, consoleRunPasses, nil)
		return describeRuns(name, reports), err
	case "rename":
		src, err := s.Sources.RenameSource(ctx, name, strings.TrimSpace(v.Get("name")), actor)
		return ingest.RenamedLine(name, src), err
	case "set":
		ch, before, err := s.formChange(ctx, name, v)
		if err != nil {
			return "", err
		}
		if ch.Empty() {
			return "nothing to change", nil
		}
		src, err := s.Sources.SetSource(ctx, name, ch, actor)
		return fmt.Sprintf("%s: %s", src.Name, ch.Note(before)), err
	case "remove":
		if v.Get("confirm") == "" {
			return "", tidemark.Invalidf("confirm", "", "confirm the removal on its page")
		}
		rm, err := s.Sources.RemoveSource(ctx, name, actor, v.Get("force") != "")
		if loses := rm.Loses(); err == nil && loses != "" {
			return fmt.Sprintf("removed %s and %s", rm.Source.Name, loses), nil
		}
		return "removed " + rm.Source.Name, err
	}
	return "", fmt.Errorf("no operation %q on sources: %w", op, tidemark.ErrNotFound)
}

// formChange reads the edit form: only what differs from the source as
// stored is changed (and audited).
func (s *Server) formChange(ctx context.Context, name string, v url.Values) (ch ingest.Settings, src tidemark.Source, err error) {
	if src, err = s.Ingest.Source(ctx, name); err != nil {
		return ch, src, err
	}
	if iv := strings.TrimSpace(v.Get("interval")); iv != "" {
		d, err := time.ParseDuration(iv)
		if err != nil {
			return ch, src, tidemark.Invalidf("interval", iv, "want a duration such as 15m or 1h")
		}
		if d != src.Interval.Std() {
			ch.Interval = &d
		}
	}
	if rb := strings.TrimSpace(v.Get("retry_budget")); rb != "" {
		n, err := strconv.Atoi(rb)
		if err != nil {
			return ch, src, tidemark.Invalidf("retry_budget", rb, "want a whole number")
		}
		if n != src.RetryBudget {
			ch.RetryBudget = &n
		}
	}
	if allow := v.Get("allow_private") != ""; allow != src.AllowPrivate {
		ch.AllowPrivate = &allow
	}
	return ch, src, nil
}

func describeRuns(name string, reports []ingest.Report) string {
	if len(reports) == 0 {
		return name + ": not run"
	}
	var parts []string
	for _, r := range reports {
		if r.Outcome.Advances() {
			parts = append(parts, fmt.Sprintf("%s, %d new, %d changed", r.Outcome, r.EventsNew, r.EventsChanged))
		} else {
			parts = append(parts, fmt.Sprintf("%s: %s", r.Outcome, r.Error))
		}
	}
	return fmt.Sprintf("ran %s: %s", name, strings.Join(parts, "; "))
}

func (s *Server) removePage(w http.ResponseWriter, r *http.Request) {
	rm, err := s.Ingest.RemovalOf(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "source_remove.html", map[string]any{"R": rm, "Loses": rm.Loses()})
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := ingest.ResolveRunFilter(r.Context(), s.Ingest, ingest.RunFilter{SourceID: q.Get("source"),
		Outcome: tidemark.Outcome(q.Get("outcome")), BeforeID: q.Get("after"), Limit: pageSize})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	runs, err := s.Ingest.Runs(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	next := ""
	if len(runs) == f.Limit {
		q := r.URL.Query()
		q.Set("after", runs[len(runs)-1].ID)
		next = "/status/runs?" + q.Encode()
	}
	s.render(w, r, "runs.html", map[string]any{"Runs": runs, "F": f, "Outcomes": tidemark.Outcomes, "Next": next})
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	run, err := s.Ingest.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	evs, err := s.Ingest.Events(r.Context(), ingest.EventFilter{SourceID: run.SourceID, RunID: run.ID, Limit: 200})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "run.html", map[string]any{"R": run, "Events": evs})
}

func (s *Server) eventsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := ingest.ResolveEventFilter(r.Context(), s.Ingest, ingest.EventFilter{SourceID: q.Get("source"), BeforeID: q.Get("after"), Limit: pageSize})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	evs, err := s.Ingest.Events(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	next := ""
	if len(evs) == f.Limit {
		q.Set("after", evs[len(evs)-1].ID)
		next = "/status/events?" + q.Encode()
	}
	s.render(w, r, "events.html", map[string]any{"Events": evs, "F": f, "Next": next})
}

func (s *Server) eventDetail(ctx context.Context, id string) (ingest.EventDetail, error) {
	ev, err := s.Ingest.Event(ctx, id)
	if err != nil {
		return ingest.EventDetail{}, err
	}
	revs, err := s.Ingest.Revisions(ctx, id)
	if err != nil {
		return ingest.EventDetail{}, err
	}
	d := ingest.EventDetail{Event: ev, Revisions: revs}
	if src, err := s.Ingest.Source(ctx, ev.SourceID); err == nil {
		d.SourceName = src.Name
	}
	return d, nil
}

func (s *Server) eventPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.eventDetail(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	data := map[string]any{"E": d, "CanEdit": s.Docs != nil}
	if s.Pages != nil && s.Wiki != nil {
		id, ok, err := s.Pages.PublishedPage(r.Context(), d.ID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		data["ShowWiki"] = true
		if ok {
			// The wiki is served from the site's root (Server.Wiki).
			data["WikiPage"] = "/" + publish.PageKey(id)
		}
	}
	s.render(w, r, "event.html", data)
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.Ingest.Run(r.Context(), r.PathValue("run"))
	s.answer(w, r, http.StatusOK, run, err)
}

func (s *Server) apiEvent(w http.ResponseWriter, r *http.Request) {
	d, err := s.eventDetail(r.Context(), r.PathValue("event"))
	s.answer(w, r, http.StatusOK, d, err)
}

// sourceRequest is the body of POST /api/sources and POST
// /api/sources/test.
type sourceRequest struct {
	Name         string             `json:"name"`
	Kind         string             `json:"kind"`
	Location     string             `json:"location"`
	Config       map[string]string  `json:"config"`
	Interval     *tidemark.Duration `json:"interval"`
	RetryBudget  *int               `json:"retry_budget"`
	AllowPrivate bool               `json:"allow_private"`
	// Cursor and Evidence are for a test only.
	Cursor   string `json:"cursor"`
	Evidence bool   `json:"evidence"`
}

func (q sourceRequest) newSource() ingest.NewSource {
	ns := ingest.NewSource{Name: q.Name, Kind: q.Kind, Location: q.Location, Config: q.Config, AllowPrivate: q.AllowPrivate,
		Interval: ingest.DefaultInterval, RetryBudget: ingest.DefaultRetryBudget}
	if q.Interval != nil {
		ns.Interval = q.Interval.Std()
	}
	if q.RetryBudget != nil {
		ns.RetryBudget = *q.RetryBudget
	}
	return ns
}

func (s *Server) apiAdd(w http.ResponseWriter, r *http.Request) {
	var q sourceRequest
	if err := decodeJSON(r, &q); err != nil {
		s.fail(w, r, err)
		return
	}
	src, err := s.Sources.AddSource(r.Context(), q.newSource())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/sources/"+url.PathEscape(src.Name))
	writeJSON(w, http.StatusCreated, src)
}

// apiTest answers what one fetch would produce. A fetch that failed is
// still a 200: the report says how (its outcome and error).
func (s *Server) apiTest(w http.ResponseWriter, r *http.Request) {
	var q sourceRequest
	if err := decodeJSON(r, &q); err != nil {
		s.fail(w, r, err)
		return
	}
	rep, err := s.Sources.TestSource(r.Context(), ingest.TestRequest{Source: q.newSource(), Cursor: q.Cursor, Evidence: q.Evidence})
	s.answer(w, r, http.StatusOK, rep, err)
}

// patchRequest is the body of PATCH /api/sources/{name}: a new name, and
// settings; absent fields are left as they are.
type patchRequest struct {
	Name         *string            `json:"name"`
	AllowPrivate *bool              `json:"allow_private"`
	Interval     *tidemark.Duration `json:"interval"`
	RetryBudget  *int               `json:"retry_budget"`
	// Config sets the config keys it names ("" unsets one); only those the
	// source's kind lets change (a git source's branch).
	Config map[string]string `json:"config"`
}

func (s *Server) apiPatch(w http.ResponseWriter, r *http.Request) {
	var q patchRequest
	if err := decodeJSON(r, &q); err != nil {
		s.fail(w, r, err)
		return
	}
	ch := ingest.Settings{AllowPrivate: q.AllowPrivate, RetryBudget: q.RetryBudget, Config: q.Config}
	if q.Interval != nil {
		d := q.Interval.Std()
		ch.Interval = &d
	}
	if ch.Empty() && q.Name == nil {
		s.fail(w, r, tidemark.Invalidf("request body", "", "name something to change: name, allow_private, interval, retry_budget or config"))
		return
	}
	if err := ch.Validate(); err != nil {
		s.fail(w, r, err) // before a rename, so a bad request changes nothing
		return
	}
	ref, actor := r.PathValue("name"), actor(r)
	var src tidemark.Source
	var err error
	if q.Name != nil {
		if src, err = s.Sources.RenameSource(r.Context(), ref, *q.Name, actor); err != nil {
			s.fail(w, r, err)
			return
		}
		ref = src.ID
	}
	if !ch.Empty() {
		if src, err = s.Sources.SetSource(r.Context(), ref, ch, actor); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, src)
}

func (s *Server) apiDelete(w http.ResponseWriter, r *http.Request) {
	if err := noFields(r); err != nil {
		s.fail(w, r, err)
		return
	}
	force, err := forceParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rm, err := s.Sources.RemoveSource(r.Context(), r.PathValue("name"), actor(r), force)
	s.answer(w, r, http.StatusOK, rm, err)
}

// opRequest is the optional body of POST /api/sources/{name}/retry|skip.
type opRequest struct {
	To   string `json:"to"`
	Note string `json:"note"`
}

func (s *Server) apiOp(w http.ResponseWriter, r *http.Request) {
	name, op := r.PathValue("name"), path.Base(r.URL.Path)
	var q opRequest
	if err := decodeJSON(r, &q); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	if src, ok, err := s.moveSource(ctx, op, name, actor(r), q.To, q.Note); ok {
		s.answer(w, r, http.StatusOK, src, err)
		return
	}
	if op != "run" {
		s.apiNotFound(w, r)
		return
	}
	reports, err := s.Sources.RunSource(ctx, name, consoleRunPasses, nil)
	if len(reports) == 0 && err != nil {
		s.fail(w, r, err)
		return
	}
	body := map[string]any{"reports": reports}
	status := http.StatusOK
	if err != nil {
		// The run happened and failed: the reports say how; the status,
		// the class and the exit code what kind of failure (a source that
		// failed is unavailable, 503), as an error's body would.
		e := errorBody(err)
		status, body["error"], body["class"], body["exit_code"] = tidemark.HTTPStatus(err), s.problemText(r, err), e.Class, e.ExitCode
	}
	writeJSON(w, status, body)
}

// moveSource runs op when it is one of the operations that move a
// source's state or its cursor (pause, resume, retry, skip), for the
// console and the API alike; ok is false for any other op.
func (s *Server) moveSource(ctx context.Context, op, name, actor, to, note string) (src tidemark.Source, ok bool, err error) {
	switch op {
	case "pause":
		src, err = s.Sources.PauseSource(ctx, name, actor)
	case "resume":
		src, err = s.Sources.ResumeSource(ctx, name, actor)
	case "retry":
		src, err = s.Sources.RetrySource(ctx, name, actor, note)
	case "skip":
		src, err = s.Sources.SkipSource(ctx, name, to, actor, note)
	default:
		return src, false, nil
	}
	return src, true, err
}
