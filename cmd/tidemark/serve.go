package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/pipeline/site"
	"github.com/tidemark/tidemark/redact"
	"github.com/tidemark/tidemark/web"
)

func newServeCmd(a *app) *cobra.Command {
	var (
		addr                         string
		hosts                        []string
		publicMetrics, secureCookies bool
		sessionTTL                   time.Duration
		localRoots                   []string
		allowPrivate                 bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the wiki, the operator console and the JSON API over HTTP (no JavaScript needed)",
		Long: `Serve the wiki, the status pages and the JSON API over HTTP.

The wiki and /healthz are public. The status pages, the API and /metrics need
an access token: create one with ` + "`tidemark token create NAME`" + ` (printed once),
send it as "Authorization: Bearer TOKEN", or sign in at /signin in a browser.

Requests are answered only for IP addresses, localhost and the names given
with --host, so a DNS-rebinding page cannot reach the server.

A token lets its holder add and test sources, and what a source reads is
published to the wiki. So the API and the console add no location on this
machine (a directory, a local git repository) unless it lies under a
--local-root, and no source that may reach private addresses unless the
server runs with --allow-private (or TIDEMARK_ALLOW_PRIVATE). The CLI, run
by the machine's operator, is not limited.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := a.pipe(cmd.Context())
			if err != nil {
				return err
			}
			roots, err := checkLocalRoots(localRoots)
			if err != nil {
				return err
			}
			srv, err := site.New(cmd.Context(), p, site.Options{Hosts: hosts, PublicMetrics: publicMetrics,
				SecureCookies: secureCookies, SessionTTL: sessionTTL, Logger: a.log,
				Admission: kinds.Admission{LocalRoots: roots, AllowPrivate: allowPrivate || a.cfg.AllowPrivate}})
			if err != nil {
				return err
			}
			ln, err := web.Listen("--addr", addr)
			if err != nil {
				return err
			}
			if ok, err := p.DB().Auth().HasTokens(cmd.Context()); err == nil && !ok {
				fmt.Fprintln(a.stderr, "tidemark: no access token exists yet, so only the wiki is open; create one with `tidemark token create NAME`")
			}
			fmt.Fprintf(a.stderr, "tidemark: serving the wiki (%s) on http://%s/ and status on http://%s/status ; Ctrl-C to stop\n", redact.URL(a.cfg.StoreLocation(), false), ln.Addr(), ln.Addr())
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
	f.StringArrayVar(&localRoots, "local-root", nil, "a directory under which the API and the console may add dir sources and local git repositories (repeatable; none by default)")
	f.BoolVar(&allowPrivate, "allow-private", false, "let the API and the console add sources that reach private, loopback and link-local addresses (default: env "+AllowPrivateEnv+")")
	return cmd
}

// checkLocalRoots returns each --local-root made absolute, refusing one
// that is not a directory: a typo would otherwise admit nothing, silently.
func checkLocalRoots(roots []string) ([]string, error) {
	var out []string
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(abs); err == nil && !fi.IsDir() {
				err = errors.New("not a directory")
			}
		}
		if err != nil {
			return nil, tidemark.Invalidf("local-root", r, "%v", err)
		}
		out = append(out, abs)
	}
	return out, nil
}
