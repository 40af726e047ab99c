package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/web"
)

func init() { register(newServeCmd) }

// storeHandler serves the wiki from the object store as it stands: a path
// is a key, "/" and directories are their index.html. Hidden keys (the
// directory store's sidecars) are never served.
// An object store's error is logged, never shown: it may name a file or a
// bucket.
func storeHandler(objs objstore.Store, log *slog.Logger) http.Handler {
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
			log.Error("serve: object store", "key", key, "err", err)
			http.Error(w, "the wiki's store did not answer", http.StatusBadGateway)
			return
		}
		if ct := mime.TypeByExtension(path.Ext(key)); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.Header().Set("ETag", o.ETag)
		http.ServeContent(w, r, key, time.Time{}, bytes.NewReader(o.Body))
	})
}

func newServeCmd(a *app) *cobra.Command {
	var (
		addr                         string
		hosts                        []string
		publicMetrics, secureCookies bool
		sessionTTL                   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the wiki, the status pages and the JSON API over HTTP (read-only, no JavaScript)",
		Long: `Serve the wiki, the status pages and the JSON API over HTTP.

The wiki and /healthz are public. The status pages, the API and /metrics need
an access token: create one with ` + "`tidemark token create NAME`" + ` (printed once),
send it as "Authorization: Bearer TOKEN", or sign in at /signin in a browser.

Requests are answered only for IP addresses, localhost and the names given
with --host, so a DNS-rebinding page cannot reach the server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			objs, err := a.objectStore()
			if err != nil {
				return err
			}
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			for _, h := range hosts {
				if h == "" || strings.ContainsAny(h, "/ ") {
					return tidemark.Invalidf("--host", h, "want a host name such as tidemark.example.org")
				}
			}
			// The wiki, and the operator's pages and the JSON API beside it.
			site := (&web.Server{Ingest: db.Ingest(), Outbox: db.Outbox(), Migrations: db.Content(), Logger: a.log,
				Wiki: storeHandler(objs, a.log), Auth: db.Auth(), Hosts: hosts, PublicMetrics: publicMetrics,
				SecureCookies: secureCookies, SessionTTL: sessionTTL}).Handler()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			if ok, err := db.Auth().HasTokens(cmd.Context()); err == nil && !ok {
				fmt.Fprintln(a.stderr, "tidemark: no access token exists yet, so only the wiki is open; create one with `tidemark token create NAME`")
			}
			srv := &http.Server{Handler: site, ReadHeaderTimeout: 10 * time.Second}
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
	f := cmd.Flags()
	f.StringVar(&addr, "addr", envOr("TIDEMARK_SERVE_ADDR", "127.0.0.1:8080"), "listen address (env TIDEMARK_SERVE_ADDR)")
	f.StringArrayVar(&hosts, "host", nil, "a host name the server answers for, besides IP addresses and localhost (repeatable)")
	f.BoolVar(&publicMetrics, "public-metrics", false, "serve /metrics without a token (for a scraper on a trusted network)")
	f.BoolVar(&secureCookies, "secure-cookies", false, "mark the session cookie Secure (TLS ends at a proxy in front)")
	f.DurationVar(&sessionTTL, "session-ttl", web.DefaultSessionTTL, "how long a browser sign-in lasts")
	return cmd
}
