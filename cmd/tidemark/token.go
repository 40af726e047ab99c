package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/pipeline"
)

// newTokenCmd manages the access tokens `serve` requires for everything but
// the wiki. A token's secret is printed once; only its SHA-256 is stored.
// Tokens are made here only: the console cannot make one.
func newTokenCmd(a *app) *cobra.Command {
	create := opCmd(a, "create NAME", "Create an access token and print it once", cobra.ExactArgs(1), func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
		t, err := p.CreateToken(cmd.Context(), args[0])
		return shownAs(t, said{t, func(w io.Writer) {
			_ = t.WriteText(w)
			fmt.Fprintf(a.stderr, "tidemark: created token %q; it is shown this once, so keep it now (revoke with `tidemark token revoke %s`)\n", t.Name, t.Name)
		}}, err)
	})
	create.Long = `Create an access token named NAME (who or what uses it: a person, a scraper)
and print it once: only its SHA-256 is stored, so it cannot be shown again.
The API takes it as "Authorization: Bearer TOKEN"; a browser signs in with it
at /signin.`
	list := opCmd(a, "list", "List tokens (never their secrets)", cobra.NoArgs, func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
		return shown(p.Tokens(cmd.Context()))
	})
	revoke := opCmd(a, "revoke NAME", "Revoke a token and end the browser sessions it opened", cobra.ExactArgs(1), func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
		t, now, err := p.RevokeToken(cmd.Context(), args[0])
		if err == nil && !now {
			return sayShown(t, err, "token %q was revoked already, at %s; nothing changed", t.Name, fieldtext.Day(*t.RevokedAt))
		}
		return sayShown(t, err, "revoked token %q", t.Name)
	})
	cmd := &cobra.Command{Use: "token", Short: "Create, list and revoke the access tokens the server requires"}
	cmd.AddCommand(create, list, revoke)
	return cmd
}
