package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/pipeline/site"
	"github.com/tidemark/tidemark/web"
)

func newServeCmd(a *app) *cobra.Command {
	var (
		addr                         string
		hosts                        []string
		publicMetrics, secureCookies bool
		sessionTTL                   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the wiki, the operator console and the JSON API over HTTP (no JavaScript needed)",
		Long: `Serve the wiki, the status pages and the JSON API over HTTP.

The wiki and /healthz are public. The status pages, the API and /metrics need
an access token: create one with ` + "`tidemark token create NAME`" + ` (printed once),
send it as "Authorization: Bearer TOKEN", or sign in at /signin in a browser.

Requests are answered only for IP addresses, localhost and the names given
with --host, so a DNS-rebinding page cannot reach the server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := a.pipe(cmd.Context())
			if err != nil {
				return err
			}
			srv, err := site.New(cmd.Context(), p, site.Options{Hosts: hosts, PublicMetrics: publicMetrics,
				SecureCookies: secureCookies, SessionTTL: sessionTTL, Logger: a.log})
			if err != nil {
				return err
			}
			ln, err := web.Listen(addr)
			if err != nil {
				return err
			}
			if ok, err := p.DB().Auth().HasTokens(cmd.Context()); err == nil && !ok {
				fmt.Fprintln(a.stderr, "tidemark: no access token exists yet, so only the wiki is open; create one with `tidemark token create NAME`")
			}
			fmt.Fprintf(a.stderr, "tidemark: serving the wiki (%s) on http://%s/ and status on http://%s/status ; Ctrl-C to stop\n", a.cfg.StoreLocation(), ln.Addr(), ln.Addr())
			if err := site.Serve(cmd.Context(), ln, srv.Handler()); err != nil {
				return err
			}
			// A signal is how a server is stopped: a clean stop, exit 0, like
			// the daemon's.
			fmt.Fprintln(a.stderr, "tidemark: stopped serving; nothing to keep, the wiki and the database are as they were")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", a.cfg.ServeAddr, "listen address (env TIDEMARK_SERVE_ADDR)")
	f.StringArrayVar(&hosts, "host", nil, "a host name the server answers for, besides IP addresses and localhost (repeatable)")
	f.BoolVar(&publicMetrics, "public-metrics", false, "serve /metrics without a token (for a scraper on a trusted network)")
	f.BoolVar(&secureCookies, "secure-cookies", false, "mark the session cookie Secure (TLS ends at a proxy in front)")
	f.DurationVar(&sessionTTL, "session-ttl", web.DefaultSessionTTL, "how long a browser sign-in lasts")
	return cmd
}
