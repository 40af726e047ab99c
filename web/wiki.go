package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
)

// StoreHandler serves the wiki from the object store as it stands: a path
// is a key, "/" and directories are their index.html. Hidden keys (the
// directory store's sidecars) and the store's marker are never served.
// An object store's error is logged, never shown: it may name a file or a
// bucket.
func StoreHandler(objs objstore.Store, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method "+r.Method+" not allowed (allowed: GET, HEAD)", http.StatusMethodNotAllowed)
			return
		}
		// The path as decoded, never cleaned: a dot or empty segment (an
		// encoded "..", "/./", "//") names no page, and CheckKey refuses it.
		key := strings.TrimPrefix(r.URL.Path, "/")
		if key == "" || strings.HasSuffix(key, "/") {
			key += "index.html"
		}
		if objstore.CheckKey(key) != nil || strings.HasPrefix(key, "_tidemark/") {
			http.NotFound(w, r)
			return
		}
		o, err := objs.Get(r.Context(), key)
		if errors.Is(err, objstore.ErrNotFound) && key == "index.html" {
			// A fresh install: say so in a page, not a bare 404.
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(emptyWiki))
			return
		}
		if errors.Is(err, objstore.ErrNotFound) {
			http.NotFound(w, r)
			return
		}
		if err != nil {
			log.Error("serve: object store", "key", key, "err", err)
			http.Error(w, "the wiki's store did not answer", http.StatusBadGateway)
			return
		}
		if path.Ext(key) == ".atom" { // the wiki's feeds; not in every mime table
			w.Header().Set("Content-Type", "application/atom+xml; charset=utf-8")
		} else if ct := mime.TypeByExtension(path.Ext(key)); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.Header().Set("ETag", o.ETag)
		http.ServeContent(w, r, key, time.Time{}, bytes.NewReader(o.Body))
	})
}

// emptyWiki is the wiki's front page until its index is published.
const emptyWiki = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Nothing is published yet</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1f2328}code{font-size:.9em}</style>
</head><body>
<h1>Nothing is published yet</h1>
<p>This wiki shows one page per change of the sources tidemark tracks. It has no page yet: add a source and
publish (<code>tidemark run --once</code>, or <code>tidemark source add</code> then <code>tidemark publish</code>),
or sign in to the console at <a href="/status">/status</a> to add one and press <b>Publish now</b>.</p>
</body></html>
`

// EvidenceFunc reads an event's frozen evidence at a revision: the bytes
// that were hashed, and their hash; tidemark.ErrNotFound when there is none
// to serve.
type EvidenceFunc func(ctx context.Context, eventID string, revision int) ([]byte, string, error)

// PublishedEvidence reads the evidence a published page shows, and nothing
// else (sqlstore.PublishStore).
type PublishedEvidence interface {
	PublishedEvidence(ctx context.Context, eventID string, revision int) ([]byte, string, error)
}

// EvidenceHandler serves an event's frozen evidence at a revision, as the
// bytes that were hashed (the path's {event} and {revision}). The wiki's
// GET /evidence/{event}/{revision} serves with it the download every
// change page links to; the console, any revision of any event.
func EvidenceHandler(ev EvidenceFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("event")
		rev, err := strconv.Atoi(r.PathValue("revision"))
		if err != nil || rev < 1 {
			http.Error(w, "revision must be a positive number", http.StatusBadRequest)
			return
		}
		b, hash, err := ev(r.Context(), id, rev)
		if errors.Is(err, tidemark.ErrNotFound) {
			http.NotFound(w, r)
			return
		}
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="evidence-%s-r%d.txt"`, sanitizeName(id), rev))
		w.Header().Set("X-Evidence-SHA256", hash)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("ETag", `"`+hash+`"`)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
	})
}

// WikiHandler is the public wiki: the store as it stands, and the frozen
// evidence the published pages show (and no other: an event that is not,
// or no longer, published has no public evidence, whatever its ID).
func WikiHandler(objs objstore.Store, ev PublishedEvidence, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /evidence/{event}/{revision}", EvidenceHandler(ev.PublishedEvidence))
	mux.Handle("/", StoreHandler(objs, log))
	return mux
}

func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
