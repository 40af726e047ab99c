package httpx_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/fetch/httpx"
)

// A credential goes only to the origin (scheme, host, port) it was given
// for: a redirect to another port of the same host name (which Go's client
// takes for the same host) loses Authorization, Proxy-Authorization and
// Cookie; a redirect within the origin keeps them, and the client's own
// policy still runs.
func TestCredentialsStayOnOrigin(t *testing.T) {
	var mu sync.Mutex
	heard := map[string]string{} // path → Authorization
	record := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		heard[r.URL.Path] = r.Header.Get("Authorization") + "|" + r.Header.Get("Cookie") + "|" + r.Header.Get("Proxy-Authorization")
		mu.Unlock()
	}
	other := httptest.NewServer(http.HandlerFunc(record))
	defer other.Close()
	// Same host name (127.0.0.1), another port.
	otherURL := other.URL
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(w, r)
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, otherURL+"/caught", http.StatusTemporaryRedirect)
		case "/within":
			http.Redirect(w, r, "/landed", http.StatusFound)
		}
	}))
	defer srv.Close()
	if !strings.HasPrefix(otherURL, "http://127.0.0.1:") || !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("want two ports of one host: %s %s", srv.URL, otherURL)
	}
	policyRan := 0
	hc := &http.Client{CheckRedirect: httpx.CredentialsStayOnOrigin(func(*http.Request, []*http.Request) error { policyRan++; return nil })}
	for _, path := range []string{"/away", "/within"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer SEKRET-ghr-61")
		req.Header.Set("Proxy-Authorization", "Basic SEKRET-proxy")
		req.Header.Set("Cookie", "session=SEKRET-cookie")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if got := heard["/caught"]; strings.Contains(got, "SEKRET") {
		t.Errorf("the other port was sent credentials: %q", got)
	}
	if got := heard["/landed"]; !strings.Contains(got, "Bearer SEKRET-ghr-61") {
		t.Errorf("a redirect within the origin lost its Authorization: %q", got)
	}
	if policyRan != 2 {
		t.Errorf("the client's own redirect policy ran %d times, want 2", policyRan)
	}
}

// A redirect never carries the URL it came from in Referer (which Go's
// client adds, query included, where tokens travel), to another origin or
// within one.
func TestRedirectsCarryNoReferer(t *testing.T) {
	var mu sync.Mutex
	heard := map[string]string{} // path → Referer
	record := func(r *http.Request) {
		mu.Lock()
		heard[r.URL.Path] = r.Header.Get("Referer")
		mu.Unlock()
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { record(r) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/caught", http.StatusFound)
		case "/within":
			http.Redirect(w, r, "/landed", http.StatusFound)
		}
	}))
	defer srv.Close()
	hc := &http.Client{CheckRedirect: httpx.CredentialsStayOnOrigin(nil)}
	for _, path := range []string{"/away?key=SEKRET-ref-1", "/within?token=SEKRET-ref-2"} {
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, path := range []string{"/caught", "/landed"} {
		if got, ok := heard[path]; !ok || got != "" {
			t.Errorf("%s: heard %v, Referer %q", path, ok, got)
		}
	}
}
