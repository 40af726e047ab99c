package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/objstore/s3"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/summarize"
	"github.com/tidemark/tidemark/summarize/extractive"
	"github.com/tidemark/tidemark/summarize/openai"
)

func init() {
	register(newPublishCmd)
	afterRunOnce[stepPublish] = append(afterRunOnce[stepPublish], publishAfterRunOnce)
	daemonLoops = append(daemonLoops, publishLoop)
}

// publishHooks are registered by other pipelines (the outbox) to run inside
// the mark-published transaction.
var publishHooks []func(a *app) publish.Hook

// pageOverrides, when set by another pipeline (documents), supplies page
// title and notes overrides.
var pageOverrides func(a *app) publish.PageOverrides

// objectStore opens --store: a directory, or s3://bucket/prefix.
func (a *app) objectStore() (objstore.Store, error) {
	loc := a.storeLocation()
	if rest, ok := strings.CutPrefix(loc, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, tidemark.Invalidf("--store", loc, "want s3://BUCKET[/PREFIX]")
		}
		endpoint := os.Getenv("TIDEMARK_S3_ENDPOINT")
		pathStyle := endpoint != ""
		if v := os.Getenv("TIDEMARK_S3_PATH_STYLE"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, tidemark.Invalidf("TIDEMARK_S3_PATH_STYLE", v, "want true or false")
			}
			pathStyle = b
		}
		return s3.New(s3.Config{
			Bucket: bucket, Prefix: prefix, Endpoint: endpoint, PathStyle: pathStyle,
			Region:    envOr("TIDEMARK_S3_REGION", envOr("AWS_REGION", "us-east-1")),
			AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		})
	}
	if strings.Contains(loc, "://") {
		return nil, tidemark.Invalidf("--store", loc, "want a directory or s3://BUCKET[/PREFIX]")
	}
	if a.storeURL == "" {
		if err := a.checkHome(); err != nil {
			return nil, err
		}
	}
	return dir.Open(loc)
}

// canonicalStore is --store in the form recorded with the store's identity:
// s3://bucket/prefix without redundant slashes, or an absolute directory
// with its symbolic links resolved.
func (a *app) canonicalStore() string {
	loc := a.storeLocation()
	if rest, ok := strings.CutPrefix(loc, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if prefix = strings.Trim(path.Clean("/"+prefix), "/"); prefix != "" {
			return "s3://" + bucket + "/" + prefix
		}
		return "s3://" + bucket
	}
	if abs, err := filepath.Abs(loc); err == nil {
		loc = abs
	}
	if real, err := filepath.EvalSymlinks(loc); err == nil {
		loc = real
	}
	return loc
}

// bindStore opens the publish pipeline and checks, before anything starts,
// that --store is the store this database's wiki lives in (binding it if
// the wiki lives in none yet).
func (a *app) bindStore(ctx context.Context) (*publish.Service, error) {
	svc, err := a.publishService(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := svc.BindStore(ctx); err != nil {
		return nil, err
	}
	return svc, nil
}

// indexLocation is where a user finds the wiki's index.
func (a *app) indexLocation() string {
	loc := a.storeLocation()
	if strings.HasPrefix(loc, "s3://") {
		return strings.TrimRight(loc, "/") + "/" + publish.IndexKey
	}
	if abs, err := filepath.Abs(loc); err == nil {
		loc = abs
	}
	return filepath.Join(loc, publish.IndexKey)
}

func (a *app) publishService(ctx context.Context) (*publish.Service, error) {
	db, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	objs, err := a.objectStore()
	if err != nil {
		return nil, err
	}
	svc := &publish.Service{Store: db.Publish(), Objects: objs, Logger: a.log, BaseURL: os.Getenv("TIDEMARK_WIKI_URL"),
		StoreLocation: a.canonicalStore()}
	for _, h := range publishHooks {
		svc.Hooks = append(svc.Hooks, h(a))
	}
	if pageOverrides != nil {
		svc.Overrides = pageOverrides(a)
	}
	return svc, nil
}

// summarizer builds the configured summarizer: --summarizer or
// TIDEMARK_SUMMARIZER (extractive by default, or openai).
func (a *app) summarizer(name string) (summarize.Summarizer, error) {
	if name == "" {
		name = envOr("TIDEMARK_SUMMARIZER", "extractive")
	}
	switch name {
	case "extractive":
		return extractive.Summarizer{}, nil
	case "openai":
		key := os.Getenv("TIDEMARK_OPENAI_API_KEY")
		if key == "" {
			key = os.Getenv("OPENAI_API_KEY")
		}
		cfg := openai.Config{
			BaseURL:       envOr("TIDEMARK_OPENAI_BASE_URL", "https://api.openai.com/v1"),
			APIKey:        key,
			Model:         os.Getenv("TIDEMARK_OPENAI_MODEL"),
			PromptVersion: os.Getenv("TIDEMARK_OPENAI_PROMPT_VERSION"),
		}
		if path := os.Getenv("TIDEMARK_OPENAI_PROMPT_FILE"); path != "" {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, tidemark.Invalidf("TIDEMARK_OPENAI_PROMPT_FILE", path, "%v", err)
			}
			cfg.Prompt = string(b)
		}
		return openai.New(cfg)
	default:
		return nil, tidemark.Invalidf("--summarizer", name, "want extractive or openai")
	}
}

// publishRound summarizes what is new, publishes what is pending and
// refreshes the listings.
type publishRound struct {
	Summarized publish.SummarizeReport `json:"summarized"`
	Published  publish.PublishReport   `json:"published"`
	Index      string                  `json:"index"`
}

func (a *app) publishRound(ctx context.Context, svc *publish.Service, summarizer string, limit int) (publishRound, error) {
	var r publishRound
	sum, err := a.summarizer(summarizer)
	if err != nil {
		return r, err
	}
	// An unavailable summarizer stops summarizing at its first refusal;
	// what it accepted before, and what was pending already, is still
	// published, and the round then reports the outage (exit 5).
	var serr error
	r.Summarized, serr = svc.Summarize(ctx, sum, limit)
	if errors.Is(serr, context.Canceled) {
		return r, fmt.Errorf("publish interrupted: %d summaries accepted and kept, no page published in this round: %w", r.Summarized.Accepted, serr)
	}
	if serr != nil && !errors.Is(serr, tidemark.ErrUnavailable) {
		return r, serr
	}
	if r.Published, err = svc.PublishPending(ctx, limit); err != nil {
		if errors.Is(err, context.Canceled) {
			return r, fmt.Errorf("publish interrupted: %d summaries accepted, %d pages published, all kept: %w",
				r.Summarized.Accepted, r.Published.Published, err)
		}
		return r, errors.Join(serr, err)
	}
	r.Index = a.indexLocation()
	if serr != nil {
		serr = fmt.Errorf("%w\n(%d pages published now; the events not summarized wait for the next `tidemark publish` or `run` once the summarizer answers)",
			serr, r.Published.Published)
	}
	return r, serr
}

func printRound(a *app, r publishRound) {
	s, p := r.Summarized, r.Published
	fmt.Fprintf(a.stdout, "summaries: %d accepted, %d unchanged, %d failed\n", s.Accepted, s.Unchanged, s.Failed)
	fmt.Fprintf(a.stdout, "pages:     %d published now, %d failed, %d in all\n", p.Published, p.Failed, p.Pages)
	for _, e := range append(s.Errors, p.Errors...) {
		fmt.Fprintf(a.stdout, "  %s\n", e)
	}
	fmt.Fprintf(a.stdout, "wiki:      %s\n", r.Index)
}

func publishAfterRunOnce(a *app, cmd *cobra.Command) error {
	svc, err := a.publishService(cmd.Context())
	if err != nil {
		return err
	}
	asJSON, _ := cmd.Flags().GetBool("json")
	t, err := a.publishAll(cmd.Context(), svc, asJSON)
	if t.Index == "" {
		return err // nothing was published
	}
	if errors.Is(err, tidemark.ErrUnavailable) {
		// What was published may have drafted intents: deliver them, and
		// report the outage at the end of the pass.
		a.leftUndone("summarizer unavailable: events wait to be summarized (%d pages published now)", t.Published)
		err = nil
	} else if n := t.SummariesFailed; n > 0 {
		a.leftUndone("%d events not summarized", n)
	}
	if n := t.PagesFailed; n > 0 {
		a.leftUndone("%d pages not published", n)
	}
	if t.More {
		a.leftUndone("more pages are pending after %d publishing rounds", publishRoundsLimit)
	}
	if asJSON {
		fmt.Fprintf(a.stderr, "tidemark: %d pages published now, %d in all; wiki: %s\n", t.Published, t.Pages, t.Index)
		return err
	}
	fmt.Fprintln(a.stdout)
	fmt.Fprintf(a.stdout, "summaries: %d accepted, %d unchanged, %d failed\n", t.Accepted, t.Unchanged, t.SummariesFailed)
	fmt.Fprintf(a.stdout, "pages:     %d published now, %d failed, %d in all\n", t.Published, t.PagesFailed, t.Pages)
	for _, e := range t.Errors {
		fmt.Fprintf(a.stdout, "  %s\n", e)
	}
	fmt.Fprintf(a.stdout, "wiki:      %s\n", t.Index)
	return err
}

// publishLoop summarizes, publishes and sweeps periodically inside
// `tidemark run` (every TIDEMARK_SWEEP_INTERVAL, default 1m; `run` refuses
// a bad value before it starts anything). A failed round is logged and
// tried again after a growing pause, capped at the larger of the interval
// and backoffMax.
func publishLoop(ctx context.Context, a *app, cmd *cobra.Command) error {
	every, err := sweepInterval()
	if err != nil {
		return err
	}
	// One service for every round: the object store's client (and its
	// connections) lives as long as the loop.
	svc, err := retryStart(ctx, a, "publish loop: open", func() (*publish.Service, error) { return a.publishService(ctx) })
	if err != nil {
		return err
	}
	b := &backoff{Min: backoffMin, Max: max(every, backoffMax)}
	for {
		pause := every
		if err := a.publishAndSweep(ctx, svc); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if fatalLoopError(err) {
				return err // another store than the wiki's: waiting will not fix it
			}
			pause = b.Fail()
			a.log.Error("publish round failed; retrying", "err", err, "retry_in", pause)
		} else {
			b.Reset()
		}
		if err := daemonSleep(ctx, pause); err != nil {
			return err
		}
	}
}

// publishAndSweep is one round of the publish loop.
func (a *app) publishAndSweep(ctx context.Context, svc *publish.Service) error {
	r, err := a.publishRound(ctx, svc, "", 1000)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	rep, err := svc.Sweep(ctx)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	a.log.Info("publish round", "accepted", r.Summarized.Accepted, "published", r.Published.Published,
		"republished", rep.Republished, "withdrawn", rep.Withdrawn, "failed", r.Published.Failed+rep.Failed)
	return nil
}

func newPublishCmd(a *app) *cobra.Command {
	var (
		summarizer string
		limit      int
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "publish [SUMMARY_ID]",
		Short: "Summarize new events and publish their wiki pages (or publish one summary)",
		Long: `Without an argument: summarize every event that has no summary of its current
evidence under the configured summarizer, publish every current summary whose
page does not show it yet, and refresh the index and source cards.

With SUMMARY_ID: publish that summary alone (refused unless it is the event's
current, unrejected summary of its current evidence).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			svc, err := a.bindStore(ctx)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				res, err := svc.Publish(ctx, args[0])
				if err != nil {
					return err
				}
				if _, err := svc.RefreshListings(ctx); err != nil {
					return err
				}
				if asJSON {
					return writeJSON(a.stdout, res)
				}
				fmt.Fprintf(a.stdout, "published summary %s on page %s (%s, generation %d)\n", res.SummaryID, res.PageID, res.Key, res.Generation)
				return nil
			}
			r, err := a.publishRound(ctx, svc, summarizer, limit)
			if r.Index == "" {
				return err // nothing was published
			}
			if asJSON {
				if jerr := writeJSON(a.stdout, r); jerr != nil {
					return jerr
				}
			} else {
				printRound(a, r)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&summarizer, "summarizer", "", "extractive or openai (env TIDEMARK_SUMMARIZER; default extractive)")
	limitFlag(f, &limit, 1000, "events to summarize and summaries to publish, at most")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.AddCommand(newSweepCmd(a), newSummariesCmd(a), newRejectCmd(a), newRebindCmd(a))
	return cmd
}

func newSweepCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Converge every page to its current published summary; collect orphans",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := a.bindStore(cmd.Context())
			if err != nil {
				return err
			}
			rep, err := svc.Sweep(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, rep)
			}
			fmt.Fprintf(a.stdout, "pages %d: %d republished, %d withdrawn, %d orphan objects deleted, %d awaiting a new summary, %d overtaken, %d failed\n",
				rep.Pages, rep.Republished, rep.Withdrawn, rep.Orphans, rep.Awaiting, rep.Superseded, rep.Failed)
			fmt.Fprintf(a.stdout, "listings: %d written, %d unchanged, %d source cards collected\n",
				rep.Listings.Written, rep.Listings.Unchanged, rep.Listings.Collected)
			for _, e := range rep.Errors {
				fmt.Fprintf(a.stdout, "  %s\n", e)
			}
			if rep.Failed > 0 {
				return fmt.Errorf("sweep: %d pages failed to converge: %w", rep.Failed, tidemark.ErrUnconfirmed)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func newSummariesCmd(a *app) *cobra.Command {
	var (
		event  string
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "summaries",
		Short: "List summaries, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			sums, err := db.Publish().Summaries(cmd.Context(), publish.SummaryFilter{EventID: event, Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, sums)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tEVENT\tMODEL\tPROMPT\tSTATE\tTEXT")
			for _, s := range sums {
				state := "retired"
				switch {
				case s.Rejected():
					state = "rejected"
				case s.Current && s.PublishedAt != nil:
					state = "published"
				case s.Current:
					state = "current"
				}
				text, _, _ := strings.Cut(s.Text, "\n")
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.EventID, s.Model, s.PromptVersion, state, short(text, 60))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&event, "event", "", "only this event's summaries")
	limitFlag(f, &limit, 50, "at most this many")
	f.BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newRejectCmd(a *app) *cobra.Command {
	var (
		reason string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "reject SUMMARY_ID --reason TEXT",
		Short: "Reject a summary: it is never published; its page is withdrawn by the next sweep",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			s, err := db.Publish().Reject(cmd.Context(), args[0], reason)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, s)
			}
			fmt.Fprintf(a.stdout, "rejected summary %s of event %s: %s\n", s.ID, s.EventID, s.RejectedReason)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

func newRebindCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rebind",
		Short: "Bind the wiki to --store after moving or emptying it on purpose",
		Long: `The database records the object store its wiki lives in (a marker object in
the store and the store's location) at the first publication, and every worker
whose --store differs refuses to publish or sweep. After moving the wiki (or
emptying it) on purpose, rebind binds it to --store; the next sweep
republishes every page the store does not show. Every other worker must then
use the same --store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := a.publishService(cmd.Context())
			if err != nil {
				return err
			}
			id, err := svc.Rebind(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, id)
			}
			fmt.Fprintf(a.stdout, "the wiki now lives in %s (marker %s); run `tidemark publish sweep` to republish its pages there\n", id.Location, id.ID)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the store's identity as JSON")
	return cmd
}
