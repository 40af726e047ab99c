package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/pipeline"
)

// testReport is `source test --json`: what one fetch would become.
type testReport struct {
	Kind     string            `json:"kind"`
	Name     string            `json:"name"`
	Location string            `json:"location"`
	Config   map[string]string `json:"config,omitempty"`
	// Outcome is what a first run of a new source would record: items
	// (Items would become events), empty, unreachable, invalid or error.
	Outcome           tidemark.Outcome `json:"outcome"`
	Error             string           `json:"error,omitempty"`
	RetryAfterSeconds float64          `json:"retry_after_seconds,omitempty"`
	NotBeforeSeconds  float64          `json:"not_before_seconds,omitempty"`
	Items             []testItem       `json:"items"`
	Cursor            string           `json:"cursor"`
}

type testItem struct {
	Key            string     `json:"key"`
	Title          string     `json:"title"`
	URL            string     `json:"url,omitempty"`
	OccurredAt     *time.Time `json:"occurred_at,omitempty"`
	EvidenceSHA256 string     `json:"evidence_sha256"`
	EvidenceBytes  int        `json:"evidence_bytes"`
	Evidence       string     `json:"evidence,omitempty"`
}

func newSourceTestCmd(a *app) *cobra.Command {
	var (
		kind, cursor     string
		config           []string
		asJSON, evidence bool
		private          bool
	)
	cmd := &cobra.Command{
		Use:   "test LOCATION",
		Short: "Fetch a location once, without storing anything, and show what would become events",
		Long: `Fetch a location once as a source of its kind (detected, or --kind) and show
the outcome a first run would record and the items that would become events.
Nothing is stored. The exit code is 0 for items and empty, 5 when the source
was unreachable, 2 when its answer was unusable.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !cmd.Flags().Changed("allow-private") {
				private = a.cfg.AllowPrivate
			}
			cfg, err := parseKeyValues("--config", config)
			if err != nil {
				return err
			}
			// Nothing is stored, so no database is opened.
			ks := pipeline.NewKinds(a.cfg)
			ns, err := ks.Resolve(ctx, ingest.NewSource{Kind: kind, Location: args[0], AllowPrivate: private, Config: cfg})
			if err != nil {
				return err
			}
			kind := ns.Kind
			src := tidemark.Source{Name: ns.Name, Kind: kind, Location: ns.Location, Config: ns.Config, State: tidemark.SourceActive,
				AllowPrivate: ns.AllowPrivate}
			rep := testReport{Kind: kind, Name: src.Name, Location: src.Location, Config: src.Config, Items: []testItem{}, Cursor: cursor}
			res, ferr := ks.Fetchers()[kind].Fetch(ctx, src, cursor)
			if ferr != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				var ra time.Duration
				rep.Outcome, rep.Error, ra = tidemark.Classify(ferr)
				rep.RetryAfterSeconds = ra.Seconds()
			} else {
				rep.Outcome = tidemark.OutcomeEmpty
				if len(res.Items) > 0 {
					rep.Outcome = tidemark.OutcomeItems
				}
				if res.Declared > len(res.Items) {
					rep.Outcome = tidemark.OutcomeInvalid
					rep.Error = fmt.Sprintf("upstream declared %d results, %d were admitted", res.Declared, len(res.Items))
				}
				rep.Cursor, rep.NotBeforeSeconds = res.Cursor, res.NotBefore.Seconds()
				for _, it := range res.Items {
					ti := testItem{Key: it.Key, Title: it.Title, URL: it.URL, EvidenceSHA256: it.EvidenceHash(), EvidenceBytes: len(it.Evidence)}
					if !it.OccurredAt.IsZero() {
						t := it.OccurredAt
						ti.OccurredAt = &t
					}
					if evidence {
						ti.Evidence = string(it.Evidence)
					}
					rep.Items = append(rep.Items, ti)
				}
			}
			if asJSON {
				if err := writeJSON(a.stdout, rep); err != nil {
					return err
				}
			} else {
				printTestReport(a, rep)
			}
			switch rep.Outcome {
			case tidemark.OutcomeItems, tidemark.OutcomeEmpty:
				return nil
			case tidemark.OutcomeUnreachable:
				return &outcomeError{outcome: rep.Outcome, kind: tidemark.ErrUnavailable}
			case tidemark.OutcomeInvalid:
				return &outcomeError{outcome: rep.Outcome, kind: tidemark.ErrInvalid}
			default:
				return errors.New(rep.Error)
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&kind, "kind", "", "the source kind (default: detected from the location)")
	f.StringArrayVar(&config, "config", nil, "kind-specific setting key=value (repeatable)")
	f.StringVar(&cursor, "cursor", "", "fetch as if the source's cursor were this (default: a new source)")
	f.BoolVar(&asJSON, "json", false, "print JSON (fields in docs/sources.md)")
	f.BoolVar(&evidence, "evidence", false, "include each item's evidence")
	f.BoolVar(&private, "allow-private", false, "allow private, loopback and link-local addresses (env "+AllowPrivateEnv+")")
	return cmd
}

// outcomeError is a test fetch that failed; the reason is already printed,
// the exit code follows the outcome.
type outcomeError struct {
	outcome tidemark.Outcome
	kind    error
}

func (e *outcomeError) Error() string        { return "source test: outcome " + string(e.outcome) }
func (e *outcomeError) Is(target error) bool { return target == e.kind }

func printTestReport(a *app, rep testReport) {
	w := a.stdout
	fmt.Fprintf(w, "kind:      %s\nlocation:  %s\n", rep.Kind, rep.Location)
	switch rep.Outcome {
	case tidemark.OutcomeItems:
		fmt.Fprintf(w, "outcome:   items — %d would become events (nothing was stored)\n", len(rep.Items))
	case tidemark.OutcomeEmpty:
		fmt.Fprintln(w, "outcome:   empty — reached, nothing new")
	default:
		fmt.Fprintf(w, "outcome:   %s — %s\n", rep.Outcome, strings.TrimPrefix(rep.Error, string(rep.Outcome)+": "))
		if rep.RetryAfterSeconds > 0 {
			fmt.Fprintf(w, "retry after: %s\n", time.Duration(rep.RetryAfterSeconds*float64(time.Second)))
		}
	}
	if rep.NotBeforeSeconds > 0 {
		fmt.Fprintf(w, "upstream asks not to be fetched again for %s\n", time.Duration(rep.NotBeforeSeconds*float64(time.Second)))
	}
	if len(rep.Items) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tTITLE\tEVIDENCE")
	for i, it := range rep.Items {
		if i == 50 {
			fmt.Fprintf(tw, "…\t%d more\t\n", len(rep.Items)-50)
			break
		}
		fmt.Fprintf(tw, "%s\t%s\t%d bytes, sha256 %s\n", short(it.Key, 60), short(it.Title, 60), it.EvidenceBytes, short(it.EvidenceSHA256, 12))
		if it.Evidence != "" {
			tw.Flush()
			fmt.Fprintf(w, "%s\n\n", strings.TrimRight(it.Evidence, "\n"))
		}
	}
	tw.Flush()
}
