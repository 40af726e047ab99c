package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// newTokenCmd manages the access tokens `serve` requires for everything but
// the wiki. A token's secret is printed once; only its SHA-256 is stored.
func newTokenCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create, list and revoke the access tokens the server requires"}
	var createJSON bool
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an access token and print it once",
		Long: `Create an access token named NAME (who or what uses it: a person, a scraper)
and print it once: only its SHA-256 is stored, so it cannot be shown again.
The API takes it as "Authorization: Bearer TOKEN"; a browser signs in with it
at /signin.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			secret, t, err := db.Auth().CreateToken(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if createJSON {
				return writeJSON(a.stdout, map[string]any{"name": t.Name, "id": t.ID, "created_at": t.CreatedAt, "token": secret})
			}
			fmt.Fprintln(a.stdout, secret)
			fmt.Fprintf(a.stderr, "tidemark: created token %q; it is shown this once, so keep it now (revoke with `tidemark token revoke %s`)\n", t.Name, t.Name)
			return nil
		},
	}
	create.Flags().BoolVar(&createJSON, "json", false, "print the token and its name as JSON")
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			ts, err := db.Auth().Tokens(cmd.Context())
			if err != nil {
				return err
			}
			if listJSON {
				return writeJSON(a.stdout, ts)
			}
			if len(ts) == 0 {
				fmt.Fprintln(a.stdout, "no tokens; create one with `tidemark token create NAME`")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCREATED\tLAST USED\tREVOKED")
			day := func(t *time.Time) string {
				if t == nil {
					return "-"
				}
				return t.Local().Format(time.DateTime)
			}
			for _, t := range ts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.CreatedAt.Local().Format(time.DateTime), day(t.LastUsedAt), day(t.RevokedAt))
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON (an array of tokens)")
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a token and end the browser sessions it opened",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			t, err := db.Auth().RevokeToken(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "revoked token %q\n", t.Name)
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}
