package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/redact"
)

// A new source's schedule unless the user sets one.
const (
	DefaultInterval    = ingest.DefaultInterval
	DefaultRetryBudget = ingest.DefaultRetryBudget
)

// NewKinds returns every source kind as cfg configures them (git mirrors
// under Home), for work that needs no database (`source test`).
func NewKinds(cfg Config) *kinds.Set {
	p := &Pipeline{cfg: cfg}
	return p.newKinds()
}

// ResolveSource completes a new source (see kinds.Set.Resolve) and checks
// its schedule: what `source add` stores and `source test` fetches.
func (p *Pipeline) ResolveSource(ctx context.Context, ns ingest.NewSource) (ingest.NewSource, error) {
	if err := p.checkOpen(ctx); err != nil {
		return ingest.NewSource{}, err
	}
	if strings.TrimSpace(ns.Location) == "" {
		// Never the working directory: a location is named, or nothing is
		// added (over the API, a body whose fields were lost).
		return ns, tidemark.Invalidf("location", ns.Location, "is required: a URL or a local path")
	}
	ns, err := p.kinds.Resolve(ctx, ns)
	if err != nil {
		return ns, err
	}
	return ns, ValidateSource(ns)
}

// ValidateSource checks what every new source needs, whatever its kind.
func ValidateSource(ns ingest.NewSource) error {
	if err := kinds.CheckLocationCredentials(ns.Location); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(ns.Name) == "":
		return tidemark.Invalidf("name", ns.Name, "must not be empty")
	case ns.Interval < time.Second:
		return tidemark.Invalidf("interval", ns.Interval.String(), "must be at least 1s")
	case ns.RetryBudget < 1 || ns.RetryBudget > 1000:
		return tidemark.Invalidf("retry_budget", fmt.Sprint(ns.RetryBudget), "must be between 1 and 1000")
	}
	// The store refuses the same names (NewSource.Validate); checking here
	// too says so in an OPML import's dry run as well.
	return ingest.CheckName(ns.Name)
}

// NewSource is a new source named name (empty: derived from the location)
// at location, with this worker's defaults: DefaultInterval,
// DefaultRetryBudget, and Config.AllowPrivate (TIDEMARK_ALLOW_PRIVATE) as
// its allow_private, as `tidemark source add` gives one. Change what you
// like, then AddSource.
func (p *Pipeline) NewSource(name, location string) ingest.NewSource {
	return ingest.NewSource{Name: name, Location: location, Interval: DefaultInterval,
		RetryBudget: DefaultRetryBudget, AllowPrivate: p.cfg.AllowPrivate}
}

// AddSource resolves, checks and stores a new source, exactly as ns says:
// a zero Interval or RetryBudget is refused, and a false AllowPrivate is
// the source's own setting whatever Config.AllowPrivate says (start from
// NewSource to have the configured defaults). A remote that cannot be
// reached now is added as given, with a warning (Config.Warn); a ctx that
// ends while the location is asked returns ctx's error
// (errors.Is(err, context.DeadlineExceeded) or context.Canceled).
func (p *Pipeline) AddSource(ctx context.Context, ns ingest.NewSource) (tidemark.Source, error) {
	if err := p.checkOpen(ctx); err != nil {
		return tidemark.Source{}, err
	}
	ns, err := p.ResolveSource(ctx, ns)
	if err != nil {
		return tidemark.Source{}, err
	}
	existing, err := p.db.Ingest().Sources(ctx)
	if err != nil {
		return tidemark.Source{}, err
	}
	if dup, ok := p.kinds.Duplicate(existing, ns); ok {
		return tidemark.Source{}, p.duplicateError(dup, ns)
	}
	return p.storeSource(ctx, ns)
}

// storeSource stores a new source with its duplicate key (kinds.Set.Key):
// the database holds a key for one source, so a duplicate that a
// concurrent add stored after the check above is refused all the same,
// as the check would have refused it. Every add (source add, an OPML
// import, --track) stores through here.
func (p *Pipeline) storeSource(ctx context.Context, ns ingest.NewSource) (tidemark.Source, error) {
	ns.Key = p.kinds.Key(ns)
	src, err := p.db.Ingest().AddSource(ctx, ns)
	if dup := (*ingest.DuplicateError)(nil); errors.As(err, &dup) {
		return src, p.duplicateError(dup.Source, ns)
	}
	return src, err
}

// duplicateError refuses ns, a duplicate of dup, naming dup and the way
// out.
func (p *Pipeline) duplicateError(dup tidemark.Source, ns ingest.NewSource) error {
	same, fix := "the same config", fmt.Sprintf("use %q, or give this one a config that selects other items", dup.Name)
	if !p.kinds.ConfigSelects(ns.Kind) {
		same, fix = "any config (a "+ns.Kind+"'s config selects no other items)", fmt.Sprintf("use %q", dup.Name)
	}
	return &ingest.DuplicateError{Source: dup, Err: fmt.Errorf("source %q already watches %s as a %s source with %s: another would record every change twice; %s: %w",
		dup.Name, redact.Location(ns.Location), ns.Kind, same, fix, tidemark.ErrConflict)}
}

// TrackRepo adds the git repository containing path as a source, unless a
// source already tracks it (then added is false and src is that source).
func (p *Pipeline) TrackRepo(ctx context.Context, path string) (src tidemark.Source, added bool, err error) {
	if err := p.checkOpen(ctx); err != nil {
		return tidemark.Source{}, false, err
	}
	ns, err := p.kinds.Resolve(ctx, ingest.NewSource{Kind: "git", Location: path,
		Interval: DefaultInterval, RetryBudget: DefaultRetryBudget, AllowPrivate: p.cfg.AllowPrivate})
	if err != nil {
		return src, false, fmt.Errorf("--track %s: %w", path, err)
	}
	srcs, err := p.db.Ingest().Sources(ctx)
	if err != nil {
		return src, false, err
	}
	names := map[string]bool{}
	for _, s := range srcs {
		if s.Kind == "git" && s.Location == ns.Location {
			return s, false, nil
		}
		names[s.Name] = true
	}
	for i, base := 2, ns.Name; names[ns.Name]; i++ {
		ns.Name = fmt.Sprintf("%s-%d", base, i)
	}
	src, err = p.storeSource(ctx, ns)
	if dup := (*ingest.DuplicateError)(nil); errors.As(err, &dup) {
		return dup.Source, false, nil // a concurrent --track added it first
	}
	return src, err == nil, err
}

// RunSource claims the source now, due or not, and runs it; while a run
// fills its window (a backlog), it runs it again, up to maxPasses runs.
// A source that could not be run at all (not found, paused, terminal,
// held) is an error with no reports. A run that was recorded as failed
// (unreachable, invalid, or not servable here) ends the runs with a
// *SourceFailedError: the source failed, not tidemark, so it matches
// tidemark.ErrUnavailable, as a source that failed in run --once does.
// A ctx that ends stops the runs: the error then wraps ctx's
// (errors.Is(err, context.Canceled) or context.DeadlineExceeded), and a
// run it cut short is recorded as such, spending no budget.
func (p *Pipeline) RunSource(ctx context.Context, ref string, maxPasses int, onReport func(ingest.Report, error)) ([]ingest.Report, error) {
	ctx, holder, release, err := p.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return p.runSource(ctx, p.ingestAs(holder), ref, maxPasses, onReport)
}

// runSource is RunSource with svc.
func (p *Pipeline) runSource(ctx context.Context, svc *ingest.Service, ref string, maxPasses int, onReport func(ingest.Report, error)) ([]ingest.Report, error) {
	if maxPasses <= 0 {
		maxPasses = ingest.DefaultMaxPasses
	}
	var reports []ingest.Report
	for range maxPasses {
		r, err := svc.RunSource(ctx, ref)
		if r.Outcome == "" && err != nil {
			return reports, err
		}
		reports = append(reports, r)
		if onReport != nil {
			onReport(r, err)
		}
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				// The caller stopped it: the run was cut short, spending
				// no budget, and the source did not fail.
				return reports, fmt.Errorf("source %s: run cut short: %w", ref, err)
			}
			if ingest.IsRunFailed(err) {
				return reports, &SourceFailedError{Source: ref, Err: err}
			}
			return reports, err
		}
		if !r.Backlog {
			break
		}
	}
	return reports, nil
}

// SourceFailedError is a run of Source that was recorded as failed; Err
// says how (an *ingest.RunFailedError). It matches tidemark.ErrUnavailable:
// the work is left undone because of the source, and trying again later
// is how it gets done.
type SourceFailedError struct {
	Source string
	Err    error
}

func (e *SourceFailedError) Error() string {
	return fmt.Sprintf("source %s: the run failed: %v", e.Source, e.Err)
}

func (e *SourceFailedError) Unwrap() []error { return []error{e.Err, tidemark.ErrUnavailable} }
