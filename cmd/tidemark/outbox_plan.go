package main

import (
	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/outbox"
)

func newOutboxPlanCmd(a *app) *cobra.Command {
	var (
		intents, own, unexec string
		asJSON               bool
	)
	cmd := &cobra.Command{
		Use:   "plan --intents INTENTS.jsonl --own-writes OWN.jsonl [--unexecutable IDS.txt]",
		Short: "Plan a recovery from exported intents and own writes (no database)",
		Long: `Plan a recovery offline, from exported data, with no database.

INTENTS.jsonl: one object a line: id, rank (default: the line order), target,
optional parent, optional body or body_sha256.
OWN.jsonl: our own writes as the provider listed them: remote_id, created_at
(RFC 3339), target, optional parent, optional body or body_sha256.
IDS.txt: intent ids, one a line, whose targets cannot accept a write.

The join uses the strongest identity both files carry (target+parent+body_sha256,
else target+parent, else target); a join key that is not unique among the
intents is refused. The mark is the highest-ranked landed intent. Exits 0 only
when the plan's accounting balances.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := outbox.PlanFiles(intents, own, unexec)
			if p == nil {
				return err
			}
			if asJSON {
				if jerr := writeJSON(a.stdout, p); jerr != nil {
					return jerr
				}
			} else if terr := p.WriteText(a.stdout); terr != nil {
				return terr
			}
			if err == nil && !p.Accounting.Balanced {
				// MakePlan never returns an unbalanced plan without
				// ErrUnbalanced; should it, the exit code still says so.
				err = outbox.ErrUnbalanced
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&intents, "intents", "", "the intents, JSON lines (required)")
	f.StringVar(&own, "own-writes", "", "our own writes as the provider listed them, JSON lines (required)")
	f.StringVar(&unexec, "unexecutable", "", "ids of intents whose targets cannot accept a write, one a line")
	f.BoolVar(&asJSON, "json", false, "print the plan as JSON (the documented contract)")
	_ = cmd.MarkFlagRequired("intents")
	_ = cmd.MarkFlagRequired("own-writes")
	return cmd
}
