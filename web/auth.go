package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
)

// Authenticator checks access tokens and the console's sessions. Secrets
// are compared as hashes by the store; web never keeps one.
type Authenticator interface {
	// HasTokens reports whether any token exists: without one, nobody can
	// sign in and the pages say how to make one.
	HasTokens(ctx context.Context) (bool, error)
	// Authenticate returns the token whose secret is secret.
	Authenticate(ctx context.Context, secret string) (tidemark.Token, error)
	// CreateSession signs in with a token's secret and returns the
	// session's secret, for the cookie; the sign-in is audited with the
	// session. EndSession audits the sign-out the same way.
	CreateSession(ctx context.Context, secret string, ttl time.Duration) (string, tidemark.Token, error)
	// Session returns the token behind a session.
	Session(ctx context.Context, session string) (tidemark.Token, error)
	// EndSession signs a session out.
	EndSession(ctx context.Context, session string) error
	// Auditor records who made each write.
	Auditor
}

// SessionCookie is the name of the console's session cookie.
const SessionCookie = "tidemark_session"

// DefaultSessionTTL is how long a console sign-in lasts.
const DefaultSessionTTL = 12 * time.Hour

type principalKey struct{}

// Principal returns the token a request was authenticated with: who did
// it, for the audit of writes.
func Principal(ctx context.Context) (tidemark.Token, bool) {
	t, ok := ctx.Value(principalKey{}).(tidemark.Token)
	return t, ok
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// requireAuth lets a request through only with a valid bearer token or a
// console session. The API and /metrics answer 401 with a JSON error; a
// page sends the browser to sign in. A token or session that cannot be
// checked because the database is unavailable is answered as the outage
// it is (503, class unavailable).
func (s *Server) requireAuth(next http.Handler) http.Handler { return s.requireAuthOr(next, nil) }

// requireAuthOr is requireAuth, but a token or session that cannot be
// checked because the database is unavailable is answered by unchecked
// when set (/metrics: the database's state only).
func (s *Server) requireAuthOr(next, unchecked http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Auth == nil {
			s.unauthorized(w, r, "this server has no token store; nothing but the wiki is served")
			return
		}
		var (
			tok tidemark.Token
			err error
		)
		if secret, ok := bearer(r); ok {
			tok, err = s.Auth.Authenticate(r.Context(), secret)
		} else if c, cerr := r.Cookie(SessionCookie); cerr == nil {
			tok, err = s.Auth.Session(r.Context(), c.Value)
		} else {
			err = tidemark.ErrUnauthenticated
		}
		if errors.Is(err, tidemark.ErrUnauthenticated) {
			s.unauthorized(w, r, "")
			return
		}
		if err != nil && unchecked != nil && errors.Is(err, tidemark.ErrUnavailable) {
			s.logger().Warn("a token could not be checked: the database is unavailable", "path", r.URL.Path, "err", err)
			unchecked.ServeHTTP(w, r)
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, tok)))
	})
}

func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, msg string) {
	if msg == "" {
		msg = "sign in: send Authorization: Bearer TOKEN (create one with `tidemark token create NAME`)"
		if ok, err := s.Auth.HasTokens(r.Context()); err == nil && !ok {
			msg = "no access token exists yet: create one with `tidemark token create NAME`, then send Authorization: Bearer TOKEN"
		}
	}
	if answersJSON(r) || r.Method != http.MethodGet {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tidemark"`)
		failStatus(w, http.StatusUnauthorized, fmt.Errorf("%s: %w", msg, tidemark.ErrUnauthenticated))
		return
	}
	http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
}

// safeNext keeps a sign-in's return path on this site: an absolute path
// that no browser reads as another origin, or else "/status". Browsers drop
// tabs and newlines anywhere in a URL and read a backslash as a slash, so
// "/\t/evil.example" and "/\\evil.example" both mean "//evil.example";
// refusing every control character and every backslash leaves "//" as the
// only way left to name a host, and url.Parse checks what remains.
func safeNext(next string) string {
	const home = "/status"
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return home
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return home
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return home
	}
	return next
}

func (s *Server) signinPage(w http.ResponseWriter, r *http.Request) {
	s.renderSignin(w, r, http.StatusOK, "")
}

func (s *Server) renderSignin(w http.ResponseWriter, r *http.Request, status int, problem string) {
	data := map[string]any{"Next": safeNext(r.FormValue("next")), "Problem": problem, "NoTokens": false}
	if s.Auth != nil {
		if ok, err := s.Auth.HasTokens(r.Context()); err == nil && !ok {
			data["NoTokens"] = true
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := pages.ExecuteTemplate(w, "signin.html", data); err != nil {
		s.logger().Error("render", "page", "signin.html", "err", err)
	}
}

// signin trades a token for a session cookie: HttpOnly (no script reads
// it), SameSite=Strict (no other site's form or link carries it), Secure
// when the request came over TLS or the server says it is behind TLS.
func (s *Server) signin(w http.ResponseWriter, r *http.Request) {
	if s.Auth == nil {
		s.renderSignin(w, r, http.StatusUnauthorized, "this server has no token store")
		return
	}
	secret := strings.TrimSpace(r.PostFormValue("token"))
	ttl := s.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	sess, tok, err := s.Auth.CreateSession(r.Context(), secret, ttl)
	if errors.Is(err, tidemark.ErrUnauthenticated) {
		s.renderSignin(w, r, http.StatusUnauthorized, "That token is not valid (unknown or revoked).")
		return
	}
	if err != nil {
		s.logger().Error("sign in", "err", err)
		s.renderSignin(w, r, http.StatusInternalServerError, "Signing in failed; see the server's log.")
		return
	}
	s.logger().Info("signed in", "token", tok.Name, "remote", r.RemoteAddr)
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: sess, Path: "/", MaxAge: int(ttl.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || s.SecureCookies})
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

func (s *Server) signout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil && s.Auth != nil {
		if err := s.Auth.EndSession(r.Context(), c.Value); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || s.SecureCookies})
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// methodNotAllowed answers a 405 that names the methods the path takes,
// in JSON under /api, so the API's errors are JSON whatever went wrong.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request, allowed []string) {
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	if answersJSON(r) {
		failStatus(w, http.StatusMethodNotAllowed, tidemark.Invalidf("method", r.Method, "allowed: %s", strings.Join(allowed, ", ")))
		return
	}
	http.Error(w, "method "+r.Method+" not allowed (allowed: "+strings.Join(allowed, ", ")+")", http.StatusMethodNotAllowed)
}

// apiNotFound answers every unknown /api path with a JSON 404.
func (s *Server) apiNotFound(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, fmt.Errorf("no API endpoint %s: %w", r.URL.Path, tidemark.ErrNotFound))
}
