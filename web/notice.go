package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/summarize/readable"
)

// A notice is what a console page says after a form's write redirected to
// it: what was done, or the problem that stopped it. Every console form
// posts, then redirects (303) with its notice in a cookie that lives for
// one page view, signed for the sign-in that made the write (noticeMAC).
// It never travels in the URL, and a cookie set by anyone else shows
// nothing, so neither a link nor a neighbour can make the console say
// something it did not.
type notice struct {
	Error bool
	Text  string
}

const (
	noticeCookie = "tidemark_notice"
	// noticeMax bounds the text a notice carries, in bytes, so that the
	// cookie stays well within what every browser keeps (4 KiB).
	noticeMax = 1000
)

// redirect sends the browser to the page to, which then says msg, or err
// when it is not nil. An internal error is logged and shown only as such.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, to, msg string, err error) {
	n := notice{Text: msg}
	if err != nil {
		n = notice{Error: true, Text: s.problemText(r, err)}
	}
	s.redirectNotice(w, r, to, n, err)
}

// redirectNotice sends the browser to the page to, which then says n. err,
// when not nil, is what failed: the audit of the write records it, as it
// records an error fail answers.
func (s *Server) redirectNotice(w http.ResponseWriter, r *http.Request, to string, n notice, err error) {
	failed(w, err)
	kind := "ok"
	if n.Error {
		kind = "error"
	}
	payload := []byte(kind + "|" + shorten(n.Text, noticeMax))
	v := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(noticeMAC(r, payload))
	http.SetCookie(w, s.noticeCookie(r, v, 60))
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// takeNotice returns the notice a redirect left, and clears it.
func (s *Server) takeNotice(w http.ResponseWriter, r *http.Request) *notice {
	c, err := r.Cookie(noticeCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, s.noticeCookie(r, "", -1))
	v, sum, _ := strings.Cut(c.Value, ".")
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || !utf8.Valid(b) {
		return nil
	}
	if mac, err := base64.RawURLEncoding.DecodeString(sum); err != nil || !hmac.Equal(mac, noticeMAC(r, b)) {
		return nil // not made by this sign-in's own write
	}
	kind, text, ok := strings.Cut(string(b), "|")
	if !ok || (kind != "ok" && kind != "error") {
		return nil
	}
	// A notice may carry upstream text (a run's error): shown as the
	// console's templates show it (their text function).
	return &notice{Error: kind == "error", Text: readable.Clean(text)}
}

// noticeMAC binds a notice to the credential of the request that set it,
// the session cookie or the bearer token, which the same browser sends
// with the page the notice is shown on. Whoever can set a cookie for the
// host (a sibling subdomain) cannot read that credential (the session
// cookie is HttpOnly and host-only), so cannot make the console say
// something it did not.
func noticeMAC(r *http.Request, payload []byte) []byte {
	credential, ok := bearer(r)
	if !ok {
		if c, err := r.Cookie(SessionCookie); err == nil {
			credential = c.Value
		}
	}
	m := hmac.New(sha256.New, []byte("tidemark notice\x00"+credential))
	m.Write(payload)
	return m.Sum(nil)[:16]
}

func (s *Server) noticeCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: noticeCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil || s.SecureCookies}
}

// problemText is what the console says of err: its message, unless it is
// internal, which is logged instead.
func (s *Server) problemText(r *http.Request, err error) string {
	if tidemark.HTTPStatus(err) == http.StatusInternalServerError {
		s.logger().Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		return "internal error (logged on the server)"
	}
	return tidemark.Text(err)
}
