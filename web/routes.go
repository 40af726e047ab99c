package web

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/tidemark/tidemark"
)

// access says who may use a route.
type access int

const (
	public  access = iota // anyone
	private               // a bearer token or a console session
)

// How a write route is audited.
const (
	// auditStore: the store writes the entry in the write's own
	// transaction (sign-in, sign-out).
	auditStore = "store"
	// auditWrite (the default for a write): the site wraps the route in
	// Server.Write, which records the entry before the write runs and its
	// outcome after.
	auditWrite = "write"
)

// route is one method on one path of the site. The site is built from the
// table of routes (Server.routes), and the tests walk the same table: every
// write is audited, and every API route is in the OpenAPI document.
type route struct {
	Method  string // "" answers every method (the wiki, the /api/ fallback)
	Pattern string // a net/http pattern without its method
	Access  access
	Audit   string // for a write: auditStore, or auditWrite (also when empty)
	// Action names a write in the audit; empty, it is "METHOD PATTERN". A
	// {wildcard} of Pattern in it is the request's value of it.
	Action string
	// MaxBody bounds a write's body in bytes; 0 is maxWriteBody.
	MaxBody int64
	Handler http.Handler
	// Unchecked, for a private route, answers a request whose token or
	// session cannot be checked because the database is unavailable (nil:
	// the outage is the answer, 503). It must show nothing a token is
	// needed for.
	Unchecked http.Handler
}

// The most a write's body may carry: a form or a JSON object of settings;
// a document, which holds a page's text.
const (
	maxWriteBody    = 64 << 10
	maxDocumentBody = 2 << 20
)

// bodyLimit is the most the route's body may carry.
func (rt route) bodyLimit() int64 {
	if rt.MaxBody > 0 {
		return rt.MaxBody
	}
	return maxWriteBody
}

// privateRoute is a route that needs a token; action names its writes in
// the audit ("" for a read).
func privateRoute(method, pattern, action string, h http.HandlerFunc) route {
	return route{Method: method, Pattern: pattern, Access: private, Action: action, Handler: h}
}

func (rt route) write() bool {
	return rt.Method != "" && rt.Method != http.MethodGet && rt.Method != http.MethodHead
}

// api reports whether the route belongs in the OpenAPI document: a JSON
// endpoint under /api/ (not the fallback that answers unknown paths).
func (rt route) api() bool {
	return strings.HasPrefix(rt.Pattern, "/api/") && rt.Pattern != "/api/"
}

// routes is the site, one row per method and path.
func (s *Server) routes() []route {
	get := func(pattern string, a access, h http.HandlerFunc) route {
		return route{Method: http.MethodGet, Pattern: pattern, Access: a, Handler: h}
	}
	rs := []route{
		get("/healthz", public, s.healthz),
		get("/signin", public, s.signinPage),
		{Method: http.MethodPost, Pattern: "/signin", Access: public, Audit: auditStore, MaxBody: 4 << 10, Handler: http.HandlerFunc(s.signin)},
		{Method: http.MethodPost, Pattern: "/signout", Access: public, Audit: auditStore, MaxBody: 4 << 10, Handler: http.HandlerFunc(s.signout)},
		get("/api/openapi.json", public, s.openAPI),

		get("/status", private, s.status),
		get("/status/sources/{name}", private, s.sourcePage),
		get("/status/lanes/{name}", private, s.lanePage),
		{Pattern: "/api/", Access: private, Handler: http.HandlerFunc(s.apiNotFound)},
		get("/api/sources", private, s.apiSources),
		get("/api/sources/{name}", private, s.apiSource),
		get("/api/runs", private, s.apiRuns),
		get("/api/events", private, s.apiEvents),
		get("/api/outbox/lanes", private, s.apiLanes),
		get("/api/outbox/intents", private, s.apiIntents),
		get("/api/migrations", private, s.apiMigrations),
		get("/api/audit", private, s.apiAudit),
	}
	rs = append(rs, s.sourceRoutes()...)
	metrics := private
	if s.PublicMetrics {
		metrics = public
	}
	rs = append(rs, route{Method: http.MethodGet, Pattern: "/metrics", Access: metrics, Handler: s.MetricsHandler(),
		Unchecked: s.databaseDownMetrics()})
	rs = append(rs, s.docRoutes()...)
	rs = append(rs, s.outboxRoutes()...)
	rs = append(rs, s.publishRoutes()...)
	if s.Search != nil {
		search := SearchHandler(s.Search, s.Logger)
		rs = append(rs, route{Method: http.MethodGet, Pattern: "/search", Access: public, Handler: search},
			route{Method: http.MethodGet, Pattern: "/api/search", Access: public, Handler: search})
	}
	if s.Wiki != nil {
		rs = append(rs, route{Pattern: "/", Access: public, Handler: s.Wiki})
	}
	return rs
}

// audited returns a route's handler, wrapped in Server.Write when it is a
// write the store does not audit itself: a write added to the table is
// audited without anyone remembering to. A public write has nobody to
// name, so only the store-audited sign-in and sign-out may be public.
func (s *Server) audited(rt route) http.Handler {
	if rt.Audit != "" && rt.Audit != auditStore && rt.Audit != auditWrite {
		panic("web: " + rt.Method + " " + rt.Pattern + ": no audit " + rt.Audit)
	}
	if !rt.write() || rt.Audit == auditStore {
		return rt.Handler
	}
	if rt.Access != private {
		panic("web: " + rt.Method + " " + rt.Pattern + " is a public write: it could not be audited with who made it")
	}
	if rt.Action == "" {
		return s.Write(rt.Method+" "+rt.Pattern, rt.Handler.ServeHTTP)
	}
	return s.write(namedByPath(rt.Action), rt.Handler.ServeHTTP)
}

// mux serves the routes. Each is registered with its method, so that
// net/http's precedence decides between a fixed path and a wildcard one by
// method too: POST /api/sources/test is the source test, and GET, PATCH
// and DELETE /api/sources/test reach the source named "test". A path whose
// routes do not take the request's method is a 405 (JSON under /api) that
// names the methods they take.
func (s *Server) mux() *router {
	rt := &router{s: s, mux: http.NewServeMux(), fallbacks: map[string]bool{}, roots: map[string]bool{}}
	for _, route := range s.routes() {
		if route.write() {
			route.Handler = s.limitBody(route.bodyLimit(), route.Handler)
		}
		h := s.audited(route)
		if route.Access == private {
			h = noStore(s.requireAuthOr(h, route.Unchecked))
		}
		pattern := route.Pattern
		if route.Method == "" {
			rt.fallbacks[pattern] = true
			h = rt.orNotAllowed(h)
		} else {
			root := firstSegment(pattern)
			if strings.HasPrefix(root, "{") {
				panic("web: route " + pattern + " starts with a wildcard; allowed could not tell a wiki page from it")
			}
			rt.roots[root] = true
			pattern = route.Method + " " + pattern
		}
		rt.mux.Handle(pattern, h)
	}
	return rt
}

// noStore marks what h answers (and its refusals) as kept by no cache:
// what a token shows must not outlive its sign-out in a proxy or a shared
// browser.
func noStore(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// limitBody refuses a body over limit bytes with 413 (inside the audit of
// a write the site audits, so the refusal is recorded) before h reads it:
// one that says its length at once, one that does not when it runs past
// limit. A form is read here, so a handler never runs with the fields a
// cut-off form lost; a JSON body is read by decodeJSON, which says the
// same.
func (s *Server) limitBody(limit int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			s.fail(w, r, bodyTooLarge(r, limit, r.ContentLength))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/x-www-form-urlencoded" {
			if err := r.ParseForm(); err != nil {
				if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
					s.fail(w, r, bodyTooLarge(r, limit, -1))
				} else {
					s.fail(w, r, tidemark.Invalidf("form", "", "unreadable: %v", err))
				}
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// tooLarge is a body over its route's limit: invalid input, answered 413.
type tooLarge struct{ error }

func (e tooLarge) Unwrap() error { return e.error }

// bodyTooLarge says that r's body (size bytes, or -1 when it did not say)
// is more than limit.
func bodyTooLarge(r *http.Request, limit, size int64) error {
	what := "the body is"
	if size >= 0 {
		what = fmt.Sprintf("%d bytes is", size)
	}
	return tooLarge{tidemark.Invalidf("body", "", "%s more than %s %s takes (%d bytes at most)", what, r.Method, r.URL.Path, limit)}
}

// httpStatus is the status an error is answered with: its kind's, or 413
// for a body over its limit.
func httpStatus(err error) int {
	if _, ok := errors.AsType[tooLarge](err); ok {
		return http.StatusRequestEntityTooLarge
	}
	return tidemark.HTTPStatus(err)
}

// router is the site's routes on a ServeMux, with JSON 405s.
type router struct {
	s   *Server
	mux *http.ServeMux
	// fallbacks are the patterns that answer every method (the wiki, the
	// /api/ fallback): a path they answer may still be another route's.
	fallbacks map[string]bool
	// roots are the first path segments of the routes that take a method,
	// so a wiki page (whose path starts with none of them) is served
	// without looking for the methods other routes of its path take.
	roots map[string]bool
}

// firstSegment is the first segment of a pattern's or a request's path:
// "api" for /api/sources/{name}.
func firstSegment(path string) string {
	seg, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return seg
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) { rt.mux.ServeHTTP(w, r) }

// orNotAllowed is a fallback's handler: a request it catches only because
// no route of the path takes its method is a 405 that names the methods
// they take. Only requests no route answers, under a path where routes
// are, pay for the look.
func (rt *router) orNotAllowed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if allowed := rt.allowed(r); len(allowed) > 0 {
			rt.s.methodNotAllowed(w, r, allowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// allowed are the methods a route of its own takes on r's path.
func (rt *router) allowed(r *http.Request) []string {
	if !rt.roots[firstSegment(r.URL.Path)] {
		return nil
	}
	var allowed []string
	probe := *r // the mux reads the method, the host and the path
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe.Method = m
		if _, p := rt.mux.Handler(&probe); p != "" && !rt.fallbacks[p] {
			allowed = append(allowed, m)
		}
	}
	return allowed
}
