package web

import (
	"net/http"
	"slices"
	"strings"
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
	// Action names a write in the audit; empty, it is "METHOD PATTERN".
	Action  string
	Handler http.Handler
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
		{Method: http.MethodPost, Pattern: "/signin", Access: public, Audit: auditStore, Handler: http.HandlerFunc(s.signin)},
		{Method: http.MethodPost, Pattern: "/signout", Access: public, Audit: auditStore, Handler: http.HandlerFunc(s.signout)},
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
	rs = append(rs, route{Method: http.MethodGet, Pattern: "/metrics", Access: metrics, Handler: s.MetricsHandler()})
	rs = append(rs, s.docRoutes()...)
	rs = append(rs, s.outboxRoutes()...)
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
	if !rt.write() || rt.Audit == auditStore {
		return rt.Handler
	}
	if rt.Access != private {
		panic("web: " + rt.Method + " " + rt.Pattern + " is a public write: it could not be audited with who made it")
	}
	action := rt.Action
	if action == "" {
		action = rt.Method + " " + rt.Pattern
	}
	return s.Write(action, rt.Handler.ServeHTTP)
}

// mux serves the routes: one pattern per path, its methods dispatched
// inside so a wrong method is a 405 in JSON under /api.
func (s *Server) mux() *http.ServeMux {
	mux := http.NewServeMux()
	type entry struct {
		access  access
		methods []string
		byMeth  map[string]http.Handler
		any     http.Handler
	}
	var order []string
	byPattern := map[string]*entry{}
	for _, rt := range s.routes() {
		e := byPattern[rt.Pattern]
		if e == nil {
			e = &entry{access: rt.Access, byMeth: map[string]http.Handler{}}
			byPattern[rt.Pattern] = e
			order = append(order, rt.Pattern)
		}
		if e.access != rt.Access {
			panic("web: " + rt.Pattern + " mixes public and private methods")
		}
		if rt.Method == "" {
			e.any = rt.Handler
			continue
		}
		e.methods = append(e.methods, rt.Method)
		e.byMeth[rt.Method] = s.audited(rt)
	}
	for _, p := range order {
		e := byPattern[p]
		var h http.Handler = e.any
		if h == nil {
			h = s.methods(func(w http.ResponseWriter, r *http.Request) {
				m := r.Method
				if m == http.MethodHead && !slices.Contains(e.methods, m) {
					m = http.MethodGet
				}
				e.byMeth[m].ServeHTTP(w, r)
			}, e.methods...)
		}
		if e.access == private {
			h = s.requireAuth(h)
		}
		mux.Handle(p, h)
	}
	return mux
}
