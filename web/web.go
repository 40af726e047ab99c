// Package web serves tidemark's JSON API and the operator's status pages:
// sources with their health, and the run history. Pages are plain HTML,
// readable without JavaScript; every error kind maps to an HTTP status in
// one place (tidemark.HTTPStatus), and an unexpected error is logged in full
// and shown as an internal error.
package web

import (
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
)

//go:embed templates/*.html
var templateFS embed.FS

var funcs = template.FuncMap{
	"ago": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return "never"
		}
		return t.Local().Format(time.DateTime)
	},
	"when":  func(t time.Time) string { return t.Local().Format(time.DateTime) },
	"short": func(s string) string { return shorten(s, 12) },
	"clip":  func(s string) string { return shorten(s, 160) },
	"count": func(m map[outbox.State]int, st outbox.State) int { return m[st] },
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

var pages = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))

// Server serves the wiki, the API and the status pages. Ingest is
// required; the outbox and migration views are shown when set.
type Server struct {
	Ingest     ingest.Store
	Outbox     OutboxView
	Migrations MigrationView
	Logger     *slog.Logger
	// Wiki serves everything no other route claims: the public wiki.
	// Nil answers 404.
	Wiki http.Handler
	// Search, when set, serves /search and /api/search (SearchHandler):
	// public, because it reads only the published pages the wiki shows to
	// anyone.
	Search Searcher
	// Auth checks tokens and sessions. Nil serves nothing but the wiki,
	// /healthz and (when PublicMetrics) /metrics.
	Auth Authenticator
	// Hosts are the names the server answers for besides IP literals and
	// localhost (see HostCheck).
	Hosts []string
	// PublicMetrics serves /metrics without a token.
	PublicMetrics bool
	// SecureCookies marks the session cookie Secure even when the request
	// did not come over TLS here (TLS ends at a proxy in front).
	SecureCookies bool
	// SessionTTL is how long a console sign-in lasts (DefaultSessionTTL).
	SessionTTL time.Duration
	// Docs, when set, serves the documents' and field migrations' console
	// pages and API (see docRoutes).
	Docs DocOps

	// driven, in tests, is told of each background migration drive.
	driven func(done <-chan struct{})
}

// Handler returns the whole site. Public:
//
//	GET  /                       the wiki, as the object store holds it
//	GET  /search, /api/search    search over the published pages (when Search is set)
//	GET  /healthz                200 when the database answers
//	GET  /signin, POST /signin   trade a token for a console session
//	POST /signout
//
// Behind a token (Authorization: Bearer) or a console session:
//
//	GET /status                 sources and their health, recent runs (HTML)
//	GET /status/sources/{name}  one source: claim, window, runs, actions (HTML)
//	GET /status/lanes/{name}    one outbox lane: gaps and intents (HTML)
//	GET /api/sources            []source
//	GET /api/sources/{name}     source with runs and actions
//	GET /api/runs               []run  (?source=&outcome=&limit=)
//	GET /api/events             []event (?source=&limit=)
//	GET /api/outbox/lanes       []lane with its intent counts and gaps
//	GET /api/outbox/intents     []intent (?lane=&state=&limit=)
//	GET /api/migrations         []migration run (?limit=)
//	/console/docs…, /console/migrations…, /api/docs…, POST /api/migrations…
//	                            documents and field migrations (when Docs is
//	                            set; see docRoutes)
//	GET /metrics                Prometheus metrics, read from the database
//	                            (public with PublicMetrics)
//
// Every response carries the security headers (SecurityHeaders); a Host
// the server does not answer for is refused (HostCheck); unsafe methods
// from another origin are refused (http.CrossOriginProtection); every
// /api error, an unknown path or a wrong method included, is JSON.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	public := func(pattern string, h http.Handler) { mux.Handle(pattern, h) }
	private := func(pattern string, h http.Handler) { mux.Handle(pattern, s.requireAuth(h)) }
	get := func(h http.HandlerFunc) http.Handler { return s.methods(h, http.MethodGet) }

	public("/healthz", get(s.healthz))
	public("/signin", s.methods(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			s.signin(w, r)
			return
		}
		s.signinPage(w, r)
	}, http.MethodGet, http.MethodPost))
	public("/signout", s.methods(s.signout, http.MethodPost))
	if s.Wiki != nil {
		public("/", s.Wiki)
	}
	if s.Search != nil {
		search := SearchHandler(s.Search, s.Logger)
		public("GET /search", search)
		public("GET /api/search", search)
	}

	private("/status", get(s.status))
	private("/status/sources/{name}", get(s.sourcePage))
	private("/status/lanes/{name}", get(s.lanePage))
	private("/api/", http.HandlerFunc(s.apiNotFound))
	private("/api/sources", get(s.apiSources))
	private("/api/sources/{name}", get(s.apiSource))
	private("/api/runs", get(s.apiRuns))
	private("/api/events", get(s.apiEvents))
	private("/api/outbox/lanes", get(s.apiLanes))
	private("/api/outbox/intents", get(s.apiIntents))
	private("/api/migrations", get(s.apiMigrations))
	s.docRoutes(private)
	if s.PublicMetrics {
		public("/metrics", s.methods(s.metricsHandler().ServeHTTP, http.MethodGet))
	} else {
		private("/metrics", s.methods(s.metricsHandler().ServeHTTP, http.MethodGet))
	}
	var h http.Handler = mux
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg := "cross-origin " + r.Method + " refused"
		if isAPI(r) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": msg})
			return
		}
		http.Error(w, msg, http.StatusForbidden)
	}))
	h = cop.Handler(h)
	h = HostCheck(s.Hosts, h)
	return SecurityHeaders(h)
}

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// fail writes err with the status its kind maps to. Internal errors are
// logged in full and shown without detail.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := tidemark.HTTPStatus(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		s.logger().Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error"
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func limitParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, tidemark.Invalidf("limit", v, "want a whole number from 1 to 1000")
	}
	return n, nil
}

func (s *Server) apiSources(w http.ResponseWriter, r *http.Request) {
	srcs, err := s.Ingest.Sources(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, srcs)
}

func (s *Server) apiSource(w http.ResponseWriter, r *http.Request) {
	d, err := ingest.SourceDetail(r.Context(), s.Ingest, r.PathValue("name"), 50)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	outcome := tidemark.Outcome(r.URL.Query().Get("outcome"))
	if outcome != "" && !outcome.Valid() {
		s.fail(w, r, tidemark.Invalidf("outcome", string(outcome), "want items, empty, unreachable, invalid, error or lost"))
		return
	}
	runs, err := s.Ingest.Runs(r.Context(), ingest.RunFilter{SourceID: r.URL.Query().Get("source"), Outcome: outcome, Limit: limit})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, runs)
}

func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	evs, err := s.Ingest.Events(r.Context(), ingest.EventFilter{SourceID: r.URL.Query().Get("source"), Limit: limit})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, evs)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if _, _, err := s.Ingest.NextDue(r.Context()); err != nil {
		// /healthz is public: the cause goes to the log only.
		s.logger().Error("healthz", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": "the database does not answer"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// health is a source's one-word state for people.
func health(src tidemark.Source) string {
	switch {
	case src.State == tidemark.SourcePaused:
		return "paused"
	case src.Window == tidemark.WindowTerminal:
		return "terminal"
	case src.LastOutcome == "":
		return "new"
	case src.LastOutcome.Advances():
		return "ok"
	default:
		return "failing"
	}
}

type sourceRow struct {
	tidemark.Source
	Health string
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	srcs, err := s.Ingest.Sources(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	runs, err := s.Ingest.Runs(r.Context(), ingest.RunFilter{Limit: 50})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows := make([]sourceRow, len(srcs))
	counts := map[string]int{}
	for i, src := range srcs {
		rows[i] = sourceRow{src, health(src)}
		counts[rows[i].Health]++
	}
	lanes, err := s.lanes(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	migrations, err := s.migrations(r.Context(), 20)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "status.html", map[string]any{"Sources": rows, "Runs": runs, "Counts": counts,
		"Lanes": lanes, "ShowOutbox": s.Outbox != nil, "States": intentStates,
		"Migrations": migrations, "ShowMigrations": s.Migrations != nil})
}

func (s *Server) sourcePage(w http.ResponseWriter, r *http.Request) {
	d, err := ingest.SourceDetail(r.Context(), s.Ingest, r.PathValue("name"), 50)
	if err != nil {
		if errors.Is(err, tidemark.ErrNotFound) {
			http.NotFound(w, r)
			return
		}
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "source.html", map[string]any{"S": d, "Health": health(d.Source)})
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		s.logger().Error("render", "page", name, "err", err)
	}
}
