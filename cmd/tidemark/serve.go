package main

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/web"
)

func init() { register(newServeCmd) }

// storeHandler serves the wiki from the object store as it stands: a path
// is a key, "/" and directories are their index.html. Hidden keys (the
// directory store's sidecars) are never served.
func storeHandler(objs objstore.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		key := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if key == "" || strings.HasSuffix(r.URL.Path, "/") {
			key = strings.TrimPrefix(key+"/index.html", "/")
		}
		if objstore.CheckKey(key) != nil {
			http.NotFound(w, r)
			return
		}
		o, err := objs.Get(r.Context(), key)
		if errors.Is(err, objstore.ErrNotFound) {
			http.NotFound(w, r)
			return
		}
		if err != nil {
			http.Error(w, "object store: "+err.Error(), http.StatusBadGateway)
			return
		}
		if ct := mime.TypeByExtension(path.Ext(key)); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.Header().Set("ETag", o.ETag)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'")
		http.ServeContent(w, r, key, time.Time{}, bytes.NewReader(o.Body))
	})
}

func newServeCmd(a *app) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the wiki, the status pages and the JSON API over HTTP (read-only, no JavaScript)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			objs, err := a.objectStore()
			if err != nil {
				return err
			}
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			// The operator's pages and the JSON API beside the wiki.
			api := (&web.Server{Ingest: db.Ingest(), Outbox: db.Outbox(), Migrations: db.Content(), Logger: a.log}).Handler()
			mux := http.NewServeMux()
			for _, p := range []string{"/status", "/status/", "/api/", "/healthz", "/metrics"} {
				mux.Handle(p, api)
			}
			mux.Handle("/", storeHandler(objs))
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(a.stderr, "tidemark: serving the wiki (%s) on http://%s/ and status on http://%s/status ; Ctrl-C to stop\n", a.storeLocation(), ln.Addr(), ln.Addr())
			go func() {
				<-cmd.Context().Done()
				_ = srv.Close()
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return cmd.Context().Err()
		},
	}
	cmd.Flags().StringVar(&addr, "addr", envOr("TIDEMARK_SERVE_ADDR", "127.0.0.1:8080"), "listen address (env TIDEMARK_SERVE_ADDR)")
	return cmd
}
