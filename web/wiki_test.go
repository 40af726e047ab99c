package web

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/objstore/mem"
)

// failingStore answers every read with an error that names a file, as a
// directory store's would.
type failingStore struct{ objstore.Store }

func (failingStore) Get(context.Context, string) (objstore.Object, error) {
	return objstore.Object{}, &os.PathError{Op: "open", Path: "/srv/secret-home/wiki/index.html", Err: os.ErrPermission}
}

// A bad wiki path (traversal, encoded traversal, an absolute path, a
// hidden key, a missing page) is a plain 404, and a store's failure is a
// 502 that names no file: no answer ever shows a filesystem path.
func TestServeWikiNeverShowsAPath(t *testing.T) {
	home := t.TempDir()
	wiki := filepath.Join(home, "wiki")
	objs, err := dir.Open(wiki)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := objs.Put(context.Background(), "index.html", []byte("<p>home</p>"), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "tidemark.db"), []byte("secret database"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	for name, h := range map[string]http.Handler{"dir": StoreHandler(objs, log), "failing": StoreHandler(failingStore{objs}, log)} {
		srv := httptest.NewServer(h)
		for _, p := range []string{"/", "/index.html", "/../tidemark.db", "/%2e%2e/tidemark.db", "/..%2ftidemark.db", "/%2e%2e%2ftidemark.db",
			"/" + home + "/tidemark.db", "//" + home + "/tidemark.db", "/%2F" + strings.TrimPrefix(home, "/") + "%2Ftidemark.db",
			"/.index.html.meta", "/changes/nope.html", "/..\\tidemark.db", "/a/../../tidemark.db"} {
			resp := rawGet(t, srv, p)
			for _, leak := range []string{home, "/srv/secret-home", "secret database", "tidemark.db\n"} {
				if strings.Contains(resp, leak) {
					t.Errorf("%s GET %s shows %q:\n%s", name, p, leak, resp)
				}
			}
			ok := strings.HasPrefix(resp, "HTTP/1.1 200") && (p == "/" || p == "/index.html") && name == "dir"
			bad := strings.HasPrefix(resp, "HTTP/1.1 404") || strings.HasPrefix(resp, "HTTP/1.1 400") ||
				strings.HasPrefix(resp, "HTTP/1.1 301") || (name == "failing" && strings.HasPrefix(resp, "HTTP/1.1 502"))
			if !ok && !bad {
				t.Errorf("%s GET %s: %s", name, p, strings.SplitN(resp, "\r\n", 2)[0])
			}
		}
		srv.Close()
	}
}

// The wiki is read-only: any other method is a 405 that says, in its
// Allow header, which methods the wiki takes.
func TestTheWikiAllowsReadsOnly(t *testing.T) {
	h := StoreHandler(mem.New(), nil)
	for _, method := range []string{http.MethodPut, http.MethodPost, http.MethodDelete} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, "/", nil))
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /: %d, Allow %q; want 405 with Allow: GET, HEAD", method, w.Code, w.Header().Get("Allow"))
		}
	}
}

// A path that names no page is a plain 404 on every store, never a store
// error (a 502 and an error in the log, which any visitor could fill) nor
// a page served under a wrong base: a path below a page, a NUL or another
// control character, an encoded dot segment.
func TestAPathThatIsNoPageIsA404(t *testing.T) {
	objs, err := dir.Open(filepath.Join(t.TempDir(), "wiki"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"index.html", "changes/a.html"} {
		if _, err := objs.Put(context.Background(), k, []byte("<p>page</p>"), objstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var logged strings.Builder
	srv := httptest.NewServer(StoreHandler(objs, slog.New(slog.NewTextHandler(&logged, nil))))
	defer srv.Close()
	for _, p := range []string{"/index.html/", "/index.html/x", "/changes/a.html/index.html", "/index.html%00", "/index.html%0a",
		"/changes/%2e%2e/index.html", "/changes/./a.html", "/changes//a.html", "/changes/%2e/a.html"} {
		if status := strings.SplitN(rawGet(t, srv, p), "\r\n", 2)[0]; status != "HTTP/1.1 404 Not Found" {
			t.Errorf("GET %s: %s, want 404", p, status)
		}
	}
	if logged.Len() > 0 {
		t.Errorf("paths that are no page logged store errors:\n%s", logged.String())
	}
}

// rawGet sends GET path as a raw request line, so no client cleans the
// path first, and returns the whole answer.
func rawGet(t *testing.T, srv *httptest.Server, path string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	raw, _ := io.ReadAll(conn)
	return string(raw)
}

// Before anything is published the wiki's front page says so, in a page a
// browser shows, with what to do; it is still a 404 (there is no index),
// and any other missing page stays a plain 404.
func TestAnEmptyWikiSaysNothingIsPublishedYet(t *testing.T) {
	h := StoreHandler(mem.New(), nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if w.Code != http.StatusNotFound || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") ||
		!strings.Contains(w.Body.String(), "Nothing is published yet") || !strings.Contains(w.Body.String(), `href="/status"`) {
		t.Errorf("GET / of an empty wiki: %d %s\n%s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/changes/nope.html", nil))
	if w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "Nothing is published yet") {
		t.Errorf("GET a missing page: %d\n%s", w.Code, w.Body)
	}
}
