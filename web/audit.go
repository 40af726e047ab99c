package web

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/tidemark/tidemark"
)

// Auditor records who made each write through the server (sqlstore's
// AuthStore). Sign-in and sign-out are audited by the Authenticator in the
// transaction that opens or ends the session; every other write goes
// through Server.Write.
type Auditor interface {
	// StartAudit records, before the write runs, that tok is about to do
	// action on target.
	StartAudit(ctx context.Context, tok tidemark.Token, action, target string) (tidemark.AuditEntry, error)
	// FinishAudit records how the write ended: "ok" or an error class.
	FinishAudit(ctx context.Context, id, outcome, detail string) error
	// AuditLog lists entries, newest first.
	AuditLog(ctx context.Context, f tidemark.AuditFilter) ([]tidemark.AuditEntry, error)
}

// Actor names who made a request, for the audit of the operations a write
// calls (an ingest action's actor, an intent's retirement): the name of
// the token it was signed with. It is "" outside a signed-in request.
func Actor(ctx context.Context) string {
	t, _ := Principal(ctx)
	return t.Name
}

// auditRecorder notes the status a write answered and the error it
// failed with (Server.fail stores it).
type auditRecorder struct {
	http.ResponseWriter
	status int
	err    error
}

func (a *auditRecorder) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *auditRecorder) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.ResponseWriter.Write(b)
}

// actionWildcard is a {wildcard} of a path in an audited action's name.
var actionWildcard = regexp.MustCompile(`\{[a-z]+\}`)

// Write wraps a write (a POST of the console or the API) so that it is
// audited with who made it: an entry naming the signed-in token, the
// action and the path is committed before h runs (a write that cannot be
// audited is refused, 503, and not made), and finished with its outcome
// after, "ok" or the class of the error h failed with. A write whose
// process dies in between stays on record as "started". Write must sit
// behind the token check (a private route), which names the token; a write
// in the table of routes gets it without asking (Server.audited).
func (s *Server) Write(action string, h http.HandlerFunc) http.Handler {
	return s.write(func(*http.Request) string { return action }, h)
}

// namedByPath is an action whose {wildcard}s are the request path's values:
// "outbox lane {action}" is audited as "outbox lane reconcile".
func namedByPath(action string) func(*http.Request) string {
	return func(r *http.Request) string {
		return actionWildcard.ReplaceAllStringFunc(action, func(m string) string { return r.PathValue(m[1 : len(m)-1]) })
	}
}

// write is Write with the action named per request.
func (s *Server) write(named func(*http.Request) string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		action := named(r)
		tok, ok := Principal(r.Context())
		if !ok || s.Auth == nil {
			s.fail(w, r, fmt.Errorf("write %s: %w", action, tidemark.ErrUnauthenticated))
			return
		}
		e, err := s.Auth.StartAudit(r.Context(), tok, action, r.URL.Path)
		if err != nil {
			s.logger().Error("audit", "action", action, "actor", tok.Name, "err", err)
			s.fail(w, r, fmt.Errorf("write %s refused: it could not be audited: %w", action, tidemark.ErrUnavailable))
			return
		}
		rec := &auditRecorder{ResponseWriter: w}
		h(rec, r)
		outcome, detail := tidemark.AuditOK, ""
		switch {
		case rec.err != nil:
			outcome, detail = tidemark.ExitClass(tidemark.ExitCode(rec.err)), tidemark.Text(rec.err)
		case rec.status >= 400:
			outcome, detail = statusClass(rec.status), http.StatusText(rec.status)
		}
		// The write is done: its outcome is recorded even if the client
		// has gone.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		if err := s.Auth.FinishAudit(ctx, e.ID, outcome, detail); err != nil {
			s.logger().Error("audit: the write ran but its outcome was not recorded", "entry", e.ID, "action", action,
				"actor", tok.Name, "outcome", outcome, "err", err)
		}
	})
}

// statusClass is the error class of a status a handler answered without
// an error value.
func statusClass(status int) string {
	switch status {
	case http.StatusNotFound:
		return tidemark.ExitClass(tidemark.ExitNotFound)
	case http.StatusConflict:
		return tidemark.ExitClass(tidemark.ExitConflict)
	case http.StatusServiceUnavailable:
		return tidemark.ExitClass(tidemark.ExitUnavailable)
	case http.StatusInternalServerError:
		return tidemark.ExitClass(tidemark.ExitInternal)
	default:
		return tidemark.ExitClass(tidemark.ExitInvalid)
	}
}

func (s *Server) apiAudit(w http.ResponseWriter, r *http.Request) {
	limit, cur, err := pageParams(r, "audit")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	es, err := s.Auth.AuditLog(r.Context(), tidemark.AuditFilter{Actor: r.URL.Query().Get("actor"), Limit: limit + 1,
		BeforeAt: time.UnixMilli(cur.At), BeforeID: cur.Key})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, paginate(es, limit, func(last tidemark.AuditEntry) pageCursor {
		return pageCursor{List: "audit", At: last.At.UnixMilli(), Key: last.ID}
	}))
}

// failed tells the audit of the write w answers that it failed with err
// (nil: nothing failed), whatever status the answer has: a console form
// that fails answers with a redirect.
func failed(w http.ResponseWriter, err error) {
	if rec, ok := w.(*auditRecorder); ok && err != nil {
		rec.err = err
	}
}
