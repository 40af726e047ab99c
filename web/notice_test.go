package web

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
)

// noticeSet returns the text of the notice a redirect's answer to a
// request made with token (or no token: "") set, or "".
func noticeSet(h http.Header, token string) string {
	r := &http.Request{Header: http.Header{"Cookie": h.Values("Set-Cookie")}}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	n := (&Server{}).takeNotice(httptest.NewRecorder(), r)
	if n == nil {
		return ""
	}
	return n.Text
}

func TestNoticeTravelsInACookieForOnePageView(t *testing.T) {
	s := &Server{}
	for _, c := range []struct {
		msg   string
		err   error
		error bool
		text  string
	}{
		{msg: "saved version 2", text: "saved version 2"},
		{msg: "ünïcode | with a bar; and; semicolons", text: "ünïcode | with a bar; and; semicolons"},
		{err: tidemark.Invalidf("interval", "0s", "must be positive"), error: true, text: "must be positive"},
		{err: errors.New("disk on fire"), error: true, text: "internal error (logged on the server)"},
		{msg: strings.Repeat("€", 2000), text: strings.Repeat("€", noticeMax/3) + "…"},
	} {
		w := httptest.NewRecorder()
		s.redirect(w, httptest.NewRequest("POST", "/status/sources/x/set", nil), "/status/sources/x", c.msg, c.err)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/status/sources/x" {
			t.Fatalf("%q: %d to %q", c.text, w.Code, w.Header().Get("Location"))
		}
		set := w.Header().Get("Set-Cookie")
		if len(set) > 2000 || !strings.Contains(set, "HttpOnly") || strings.Contains(set, "disk on fire") {
			t.Fatalf("%q: cookie %q", c.text, set)
		}
		r := httptest.NewRequest("GET", "/status/sources/x", nil)
		r.Header.Set("Cookie", strings.Split(set, ";")[0])
		w = httptest.NewRecorder()
		n := s.takeNotice(w, r)
		if n == nil || n.Error != c.error || !strings.Contains(n.Text, c.text) {
			t.Fatalf("%q: took %+v", c.text, n)
		}
		if cleared := w.Header().Get("Set-Cookie"); !strings.Contains(cleared, "Max-Age=0") {
			t.Fatalf("%q: the notice is not cleared once shown: %q", c.text, cleared)
		}
	}
	// Nothing in a link, and no forged cookie, puts words on a page.
	r := httptest.NewRequest("GET", "/status?notice=send+your+token+to+evil", nil)
	if n := s.takeNotice(httptest.NewRecorder(), r); n != nil {
		t.Fatalf("a link made a notice: %+v", n)
	}
	r.Header.Set("Cookie", noticeCookie+"=not-base64!")
	if n := s.takeNotice(httptest.NewRecorder(), r); n != nil {
		t.Fatalf("a malformed cookie made a notice: %+v", n)
	}
}

// A notice can carry upstream text (a run's error after "Run now"): it is
// shown without control characters and terminal escapes, as the rest of
// the console shows upstream text.
func TestNoticeShowsUpstreamTextClean(t *testing.T) {
	w := httptest.NewRecorder()
	(&Server{}).redirect(w, httptest.NewRequest("POST", "/status/sources/x/run", nil), "/status/sources/x",
		"ran x: invalid: parse feed: \x1b[31mbad\x1b[0m token\x07", nil)
	if got, want := noticeSet(w.Header(), ""), "ran x: invalid: parse feed: bad token"; got != want {
		t.Fatalf("notice %q, want %q", got, want)
	}
}

// A notice is bound to the sign-in that caused it: a cookie anyone else
// could set (a sibling host sharing the cookie's domain) shows nothing,
// whether made up ("ok|…" as base64) or copied from another session.
func TestNoticeIsBoundToItsSignIn(t *testing.T) {
	s := &Server{}
	signedIn := func(session string) *http.Request {
		r := httptest.NewRequest("POST", "/status/sources/x/pause", nil)
		r.AddCookie(&http.Cookie{Name: SessionCookie, Value: session})
		return r
	}
	w := httptest.NewRecorder()
	s.redirect(w, signedIn("session-a"), "/status/sources/x", "paused x", nil)
	set := strings.Split(w.Header().Get("Set-Cookie"), ";")[0]
	take := func(session, cookie string) *notice {
		r := signedIn(session)
		r.Header.Set("Cookie", r.Header.Get("Cookie")+"; "+cookie)
		return s.takeNotice(httptest.NewRecorder(), r)
	}
	if n := take("session-a", set); n == nil || n.Text != "paused x" {
		t.Fatalf("the notice of its own sign-in: %+v", n)
	}
	if n := take("session-b", set); n != nil {
		t.Errorf("another sign-in was shown the notice: %+v", n)
	}
	forged := noticeCookie + "=" + base64.RawURLEncoding.EncodeToString([]byte("ok|your token expired: sign in at evil.example"))
	if n := take("session-a", forged); n != nil {
		t.Errorf("a made-up cookie made a notice: %+v", n)
	}
	bearer := httptest.NewRequest("POST", "/api/x", nil)
	bearer.Header.Set("Authorization", "Bearer token-1")
	w = httptest.NewRecorder()
	s.redirect(w, bearer, "/status", "done", nil)
	r := httptest.NewRequest("GET", "/status", nil)
	r.Header.Set("Authorization", "Bearer token-2")
	r.Header.Set("Cookie", strings.Split(w.Header().Get("Set-Cookie"), ";")[0])
	if n := s.takeNotice(httptest.NewRecorder(), r); n != nil {
		t.Errorf("another token was shown the notice: %+v", n)
	}
}
