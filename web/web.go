// Package web serves tidemark's JSON API and the operator's status pages:
// sources with their health, and the run history. Pages are plain HTML,
// readable without JavaScript; every error kind maps to an HTTP status in
// one place (tidemark.HTTPStatus), and an unexpected error is logged in full
// and shown as an internal error.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/summarize/readable"
)

//go:embed templates/*.html
var templateFS embed.FS

var funcs = template.FuncMap{
	"ago": func(t *time.Time) template.HTML {
		if t == nil || t.IsZero() {
			return "never"
		}
		return stamp(*t)
	},
	"when": stamp,
	"many": many,
	"ms":   durationMS,
	// text is upstream text (a title, an item's key, an upstream error)
	// as the wiki shows it: without control characters and terminal
	// escape sequences. short and clip shorten text.
	"text":  readable.Clean,
	"short": func(s string) string { return shorten(readable.Clean(s), 12) },
	"cursor": func(s string) string {
		if c := fieldtext.Cursor(s); len(c) > 12 {
			return c // a list of hashes, each cut (a git cursor inside a merge)
		}
		return shorten(readable.Clean(s), 12)
	},
	"clip": func(s string) string { return shorten(readable.Clean(s), 160) },
	// claimwords says why a claim that no longer stands runs nothing.
	"claimwords": ingest.ClaimWords,
	// writerwords says why a lane's writer whose lease no longer stands
	// sends nothing.
	"writerwords": outbox.WriterWords,
	// listed is a title in a list: cleaned, and shortened as the wiki's
	// lists shorten it (the event's page shows it whole).
	"listed":      func(s string) string { return publish.ListTitle(readable.Clean(s)) },
	"count":       func(m map[outbox.State]int, st outbox.State) int { return m[st] },
	"hclass":      func(health string) string { return "l-" + strings.ReplaceAll(health, " ", "-") },
	"window":      ingest.WindowWords,
	"windowBrief": ingest.WindowBrief,
	"notDue":      ingest.NotDue,
	"nextTry":     nextTry,
	"ops":         intentOps,
	// sourcepath NAME ID is the link to a source's console page.
	"sourcepath": func(name, id string) string { return sourcePath(name, id) },
}

// nextTryView is when a source is next tried, as the CLI says it
// (ingest.NextTryWords): NotDue's words, or the time, why then (a line
// each) and a word or two for a table cell.
type nextTryView struct {
	NotDue string
	At     time.Time
	Why    []string
	Brief  string
}

func nextTry(src tidemark.Source) nextTryView {
	at, _, ok := src.NextTry()
	if !ok {
		return nextTryView{NotDue: ingest.NotDue(src)}
	}
	_, why, brief := ingest.NextTryWords(src)
	v := nextTryView{At: at, Brief: brief}
	if why != "" {
		v.Why = strings.Split(why, "\n")
	}
	return v
}

// stamp shows a time to people: in UTC, and saying so, as the wiki and the
// API show times (never the server's zone, which the viewer cannot see),
// in a <time> element that carries it in RFC 3339.
func stamp(t time.Time) template.HTML {
	return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339) + `">` + stampText(t) + `</time>`)
}

// stampText is a time as stamp shows it, as plain text.
func stampText(t time.Time) string { return t.UTC().Format(time.DateTime) + " UTC" }

// many is a count and its thing: the singular for one ("1 attempt"),
// else the plural made with an s ("2 attempts", "0 runs").
// durationMS is a length in milliseconds as people read one: 1.001s,
// 17m36.11s.
func durationMS(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

func many(n any, word string) string {
	s := fmt.Sprint(n)
	if s != "1" {
		word += "s"
	}
	return s + " " + word
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // never cut a character in two
	}
	return s[:n] + "…"
}

var pages = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))

// Server serves the wiki, the API and the status pages. Ingest is
// required; the outbox and migration views are shown when set.
type Server struct {
	Ingest ingest.Store
	Outbox OutboxView
	// OutboxOps, when set, serves the outbox console and its API (lanes,
	// channels and intents to change), and the lanes' health.
	OutboxOps OutboxOps
	// PublishOps, when set, serves publishing's console and API: publish
	// and sweep now, list and reject summaries (see publishRoutes).
	PublishOps PublishOps
	Migrations MigrationView
	// Publish, when set, adds publication's metrics read from the
	// database (sqlstore's PublishStore).
	Publish PublishStats
	// Pipeline, when set, adds the process-local counters of the
	// pipelines this process runs (NewPipelineMetrics).
	Pipeline *PipelineMetrics
	// Sources, when set, lets the console and the API add, test, change,
	// pause, resume, retry, skip, run and remove sources.
	Sources SourceOps
	Logger  *slog.Logger
	// Clock is the pipeline's time, which a page compares leases with
	// (nil: the system's).
	Clock clock.Clock
	// Wiki serves everything no other route claims: the public wiki.
	// Nil answers 404.
	Wiki http.Handler
	// Objects, when set, is the object store Wiki serves from: /healthz
	// says whether it answers.
	Objects objstore.Store
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
	// Pages, when set with Wiki, links an event's console page to the
	// wiki page it is published on.
	Pages PageFinder
	// Admission is what the API and the console may add beyond web and
	// remote locations (kinds.Admission): the zero value admits no
	// location on the server's machine and no source that may reach
	// private addresses. Every request's context carries it.
	Admission kinds.Admission

	// driven, in tests, is told of each background migration drive.
	driven func(done <-chan struct{})

	// healthMu guards the last /healthz check, which answers the requests
	// of the next healthCacheFor.
	healthMu   sync.Mutex
	healthAt   time.Time
	healthLast healthCheck
}

// PageFinder finds the wiki page an event is published on (sqlstore's
// PublishStore).
type PageFinder interface {
	PublishedPage(ctx context.Context, eventID string) (pageID string, ok bool, err error)
}

// Handler returns the whole site. Public:
//
//	GET  /                       the wiki, as the object store holds it
//	GET  /search, /api/search    search over the published pages (when Search is set)
//	GET  /healthz                200 when the database and the object store answer, else 503 naming which does not (checked at most every 2 s)
//	GET  /signin, POST /signin   trade a token for a console session (audited)
//	POST /signout                (audited)
//	GET  /api/openapi.json       the OpenAPI 3.1 document of the API
//
// Behind a token (Authorization: Bearer) or a console session:
//
//	GET /status                 sources and their health, recent runs (HTML)
//	GET /status/sources/{name}  one source: claim, window, runs, events, actions (HTML)
//	GET /status/runs, /status/runs/{id}      runs by source and outcome, one run (HTML)
//	GET /status/events, /status/events/{id}  events, one event with its revisions (HTML)
//	POST /status/sources[/test], /status/sources/{name}/pause|resume|retry|skip|run|rename|set|remove  the console's forms
//	GET /api/runs/{run}, /api/events/{event} one run; one event with its revisions
//	GET /status/lanes/{name}    one outbox lane: gaps and intents (HTML)
//	GET /api/sources            Page[source] (?limit=&cursor=)
//	GET /api/sources/{name}     source with runs and actions
//	POST /api/sources, POST /api/sources/test, PATCH|DELETE /api/sources/{name},
//	POST /api/sources/{name}/pause|resume|retry|skip|run  (when Sources is set)
//	GET /api/runs               Page[run] (?source=&outcome=&limit=&cursor=)
//	GET /api/events             Page[event] (?source=&limit=&cursor=)
//	GET /api/outbox/lanes       Page[lane] with intent counts and gaps
//	GET /api/outbox/intents     Page[intent] (?lane=&state=&limit=&cursor=)
//	GET /api/migrations         Page[migration run] (?limit=&cursor=)
//	GET /api/audit              Page[audit entry] (?actor=&limit=&cursor=)
//	/console/docs…, /console/migrations…, /api/docs…, POST /api/migrations…
//	                            documents and field migrations (when Docs is
//	                            set; see docRoutes)
//	with OutboxOps: the outbox console (/status/outbox) and its writes
//	(POST/PATCH/DELETE under /api/outbox), see outboxRoutes
//	with PublishOps: publishing's console (/console/publish), POST
//	/api/publish[/sweep], GET /api/summaries, POST
//	/api/summaries/{id}/reject, /api/summaries/{id}/unreject, see publishRoutes
//	GET /metrics                Prometheus metrics, read from the database
//	                            (public with PublicMetrics)
//
// The table of routes is Server.routes: a write added to it is wrapped in
// Server.Write (audited with its token) by construction, and an /api route
// must be in openapi.json, which the tests check against the table and the
// router.
//
// Every response carries the security headers (SecurityHeaders); a Host
// the server does not answer for is refused (HostCheck); unsafe methods
// from another origin are refused (http.CrossOriginProtection); every
// /api error, an unknown path or a wrong method included, is JSON.
func (s *Server) Handler() http.Handler {
	mux := s.mux()
	var h http.Handler = mux
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg := "cross-origin " + r.Method + " refused"
		if isAPI(r) {
			failStatus(w, http.StatusForbidden, tidemark.Invalidf("origin", r.Header.Get("Origin"), "%s", msg))
			return
		}
		http.Error(w, msg, http.StatusForbidden)
	}))
	h = cop.Handler(h)
	h = HostCheck(s.Hosts, h)
	h = admitting(s.Admission, h)
	return SecurityHeaders(h)
}

// admitting hands h requests whose context carries a: a token's holder
// adds sources under the server's admission, never as its operator.
func admitting(a kinds.Admission, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(kinds.WithAdmission(r.Context(), a)))
	})
}

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// apiError is the body of every JSON error: the message, and the kind of
// error as the CLI's exit code and its class (tidemark.ExitCode,
// tidemark.ExitClass), so a client branches on Class, never on the text.
type apiError struct {
	Error    string `json:"error"`
	Class    string `json:"class"`
	ExitCode int    `json:"exit_code"`
}

// errorBody makes the JSON error of err.
func errorBody(err error) apiError {
	code := tidemark.ExitCode(err)
	return apiError{Error: tidemark.Text(err), Class: tidemark.ExitClass(code), ExitCode: code}
}

// fail answers err with the status its kind maps to: a JSON error under
// /api (and /metrics), a page that says what went wrong on the console.
// Internal errors are logged in full and shown without detail.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	failed(w, err)
	if !answersJSON(r) {
		s.problem(w, r, err) // a console page: a page that says what went wrong
		return
	}
	status := httpStatus(err)
	body := errorBody(err)
	if status == http.StatusInternalServerError {
		s.logger().Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		body.Error = "internal error"
	}
	writeJSON(w, status, body)
}

// failStatus writes a JSON error whose status is not an error kind's (401,
// 403, 405, 421): the body still carries the kind of err.
func failStatus(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, errorBody(err))
}

// decodeJSON reads a request's JSON object into v, refusing unknown fields
// (and more than the route's body limit, see limitBody). An empty body is
// the empty object. A body of another type (a form: what curl -d sends
// unless told otherwise) is refused rather than read as the empty object,
// which would run the write with none of the fields its client sent.
func decodeJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		sent := r.ContentLength != 0 || len(r.PostForm) > 0
		if sent && (err != nil || mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return tidemark.Invalidf("Content-Type", ct, "the API reads JSON: send the body as application/json")
		}
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return bodyTooLarge(r, mbe.Limit, -1)
	}
	if errors.Is(err, io.EOF) {
		return nil // no body: the empty object
	}
	if err != nil {
		return tidemark.Invalidf("body", "", "want a JSON object of the documented fields: %v", err)
	}
	// One object, and only white space after it.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return tidemark.Invalidf("body", "", "want one JSON object, with nothing after it")
	}
	return nil
}

// noFields reads the body of a write that takes no fields: none, or the
// empty object. A field in it is refused as decodeJSON refuses an unknown
// one, so a client that sent an option learns it was not read, instead of
// a write that ran without it.
func noFields(r *http.Request) error {
	return decodeJSON(r, &struct{}{})
}

// answer writes v with status, or err.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, status, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *Server) apiSources(w http.ResponseWriter, r *http.Request) {
	limit, cur, err := pageParams(r, "sources")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	srcs, err := ingest.ListSources(r.Context(), s.Ingest, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageAfter(srcs, limit, cur, "sources", func(s tidemark.Source) string { return s.Name }))
}

func (s *Server) apiSource(w http.ResponseWriter, r *http.Request) {
	d, err := ingest.SourceDetail(r.Context(), s.Ingest, r.PathValue("name"), 50, s.now())
	s.answer(w, r, http.StatusOK, d, err)
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	limit, cur, err := pageParams(r, "runs")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, err := ingest.ResolveRunFilter(r.Context(), s.Ingest, ingest.RunFilter{SourceID: r.URL.Query().Get("source"),
		Outcome: tidemark.Outcome(r.URL.Query().Get("outcome")), Limit: limit + 1, BeforeStartedAt: time.UnixMilli(cur.At), BeforeID: cur.Key})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	runs, err := s.Ingest.Runs(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, paginate(runs, limit, func(last tidemark.Run) pageCursor {
		return pageCursor{List: "runs", At: last.StartedAt.UnixMilli(), Key: last.ID}
	}))
}

func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	limit, cur, err := pageParams(r, "events")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, err := ingest.ResolveEventFilter(r.Context(), s.Ingest, ingest.EventFilter{SourceID: r.URL.Query().Get("source"),
		Limit: limit + 1, BeforeOccurredAt: time.UnixMilli(cur.At), BeforeID: cur.Key})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	evs, err := s.Ingest.Events(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, paginate(evs, limit, func(last tidemark.Event) pageCursor {
		return pageCursor{List: "events", At: last.OccurredAt.UnixMilli(), Key: last.ID}
	}))
}

// healthTimeout bounds each of /healthz's checks: a store or a database
// that takes longer does not answer, as far as a load balancer is
// concerned.
const healthTimeout = 5 * time.Second

// health is /healthz's answer: "ok" or "unavailable" for the whole, and
// for each part the server needs (the store only when Objects is set).
type health struct {
	Status   string `json:"status"`
	Database string `json:"database"`
	Store    string `json:"store,omitempty"`
	Error    string `json:"error,omitempty"`
}

// healthCacheFor is how long one /healthz check answers for. The
// endpoint is public, so a load balancer polling each second, or anyone
// polling faster, costs the database and the store one read each per
// interval, not one per request.
const healthCacheFor = 2 * time.Second

// healthCheck is one check's outcome: nil when the part answered.
type healthCheck struct{ db, store error }

// healthz checks, at once, that the database answers a query and that the
// object store the wiki is served from answers a read (of the store's
// small marker object; its absence is an answer too). Either failing is a
// 503 naming it: a server whose wiki answers 502, or whose console and API
// answer 503, should get no traffic. It is public: causes go to the log.
// One check answers the requests of the next healthCacheFor; requests
// that arrive while it runs wait for it.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	c := s.checkHealth(r.Context())
	h := health{Status: "ok", Database: "ok"}
	if s.Objects != nil {
		h.Store = "ok"
	}
	var down []string
	if c.db != nil {
		h.Database, down = "unavailable", append(down, "the database")
	}
	if c.store != nil {
		h.Store, down = "unavailable", append(down, "the object store")
	}
	if len(down) > 0 {
		h.Status, h.Error = "unavailable", strings.Join(down, " and ")+" does not answer"
		if len(down) > 1 {
			h.Error = strings.Join(down, " and ") + " do not answer"
		}
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// checkHealth returns the last check when it is younger than
// healthCacheFor, else checks the database and the store again. A check
// is bounded by healthTimeout, not by the request that started it: the
// requests waiting on it get its answer.
func (s *Server) checkHealth(ctx context.Context) healthCheck {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	now := s.now()
	if !s.healthAt.IsZero() && now.Sub(s.healthAt) < healthCacheFor && !now.Before(s.healthAt) {
		return s.healthLast
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healthTimeout)
	defer cancel()
	var c healthCheck
	var wg sync.WaitGroup
	wg.Go(func() { _, _, c.db = s.Ingest.NextDue(ctx, "") })
	if s.Objects != nil {
		wg.Go(func() {
			if _, err := s.Objects.Get(ctx, publish.StoreMarkerKey); err != nil && !errors.Is(err, objstore.ErrNotFound) {
				c.store = err
			}
		})
	}
	wg.Wait()
	if c.db != nil {
		s.logger().Error("healthz: the database does not answer", "err", c.db)
	}
	if c.store != nil {
		s.logger().Error("healthz: the object store does not answer", "err", c.store)
	}
	s.healthAt, s.healthLast = now, c
	return c
}

type sourceRow struct {
	tidemark.Source
	Health string
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	srcs, err := ingest.ListSources(r.Context(), s.Ingest, s.now())
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
		rows[i] = sourceRow{src, src.Health()}
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
	removals, err := s.Ingest.Removals(r.Context(), 10)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "status.html", map[string]any{"Sources": rows, "Runs": runs, "Counts": counts,
		"Lanes": lanes, "ShowOutbox": s.Outbox != nil || s.OutboxOps != nil, "Console": s.OutboxOps != nil, "States": intentStates,
		"Migrations": migrations, "ShowMigrations": s.Migrations != nil,
		"Notice": s.takeNotice(w, r), "CanWrite": s.Sources != nil, "Form": defaultAddForm(), "Removals": removals})
}

func (s *Server) sourcePage(w http.ResponseWriter, r *http.Request) {
	d, err := ingest.SourceDetail(r.Context(), s.Ingest, r.PathValue("name"), 50, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	evs, err := s.Ingest.Events(r.Context(), ingest.EventFilter{SourceID: d.ID, Limit: 20})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "source.html", map[string]any{"S": d, "Health": d.Source.Health(), "Events": evs,
		"Notice": s.takeNotice(w, r), "CanWrite": s.Sources != nil})
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		s.logger().Error("render", "page", name, "err", err)
	}
}

// now is the pipeline's time.
func (s *Server) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}
