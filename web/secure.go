package web

import (
	"net"

	"net/http"
	"strings"

	"github.com/tidemark/tidemark"
)

// ContentSecurityPolicy is sent with every response. The wiki and the
// status pages are plain HTML without JavaScript: nothing may run, styles
// come from the page itself, forms post only back to us, and no other site
// may frame us.
const ContentSecurityPolicy = "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// SecurityHeaders sets the headers every response carries, whatever
// handler answers it.
func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// HostCheck answers 421 Misdirected Request to a request whose Host header
// names none of hosts, so a DNS-rebinding page (a name the attacker
// controls, resolving to this server) cannot reach it. An IP literal and
// "localhost" are always accepted: a browser sends them only when the user
// typed them, never for an attacker's name. Names compare without the port
// and without case.
func HostCheck(hosts []string, next http.Handler) http.Handler {
	allowed := map[string]bool{"localhost": true}
	for _, h := range hosts {
		allowed[normalHost(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := normalHost(r.Host)
		if allowed[h] || net.ParseIP(h) != nil {
			next.ServeHTTP(w, r)
			return
		}
		msg := "this server does not answer for host " + r.Host + " (start serve with --host NAME to allow it)"
		if isAPI(r) {
			failStatus(w, http.StatusMisdirectedRequest, tidemark.Invalidf("host", r.Host, "%s", msg))
			return
		}
		http.Error(w, msg, http.StatusMisdirectedRequest)
	})
}

// normalHost returns a Host header's name without port, brackets or a
// trailing dot, in lower case.
func normalHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

func isAPI(r *http.Request) bool {
	return r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/")
}

// answersJSON says whether r is answered in JSON (the API and /metrics),
// not with a page.
func answersJSON(r *http.Request) bool { return isAPI(r) || r.URL.Path == "/metrics" }
