package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/detect"
	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/ingest/opml"
	"github.com/tidemark/tidemark/redact"
)

// The lifecycle of a source, one operation each, behind the CLI, the
// console and the API alike. Every change is audited with actor (who did
// it); every removal of data is refused unless forced.

// TestRequest is a location to fetch once as a new source would be.
type TestRequest = ingest.TestRequest

// TestSource fetches a location once as a source of its kind (detected, or
// the request's) and reports what a first run would record, storing
// nothing. A failed fetch is the report's outcome (see
// ingest.TestReport.Err), not an error.
func TestSource(ctx context.Context, ks *kinds.Set, req TestRequest) (ingest.TestReport, error) {
	ns, err := ks.Resolve(ctx, req.Source)
	if err != nil {
		return ingest.TestReport{}, err
	}
	return ingest.TestFetch(ctx, ks.Fetchers()[ns.Kind], ns.Source(), req.Cursor, req.Evidence)
}

// TestSource is TestSource with the pipeline's kinds.
func (p *Pipeline) TestSource(ctx context.Context, req TestRequest) (ingest.TestReport, error) {
	if err := p.checkOpen(ctx); err != nil {
		return ingest.TestReport{}, err
	}
	return TestSource(ctx, p.kinds, req)
}

// SetSource changes a source's settings (private addresses, interval,
// retry budget, and the config keys its kind lets change: a git branch).
// A config change is checked as source add checks a config (the branch
// must exist), and refused when it would make the source another's
// duplicate; the cursor stays, standing for what was read, and the
// source's duplicate key follows the config (an add of the old branch is
// another source).
func (p *Pipeline) SetSource(ctx context.Context, ref string, ch ingest.Settings, actor string) (tidemark.Source, error) {
	if err := p.checkOpen(ctx); err != nil {
		return tidemark.Source{}, err
	}
	if ch.AllowPrivate != nil {
		if err := kinds.CheckAllowPrivate(ctx, *ch.AllowPrivate); err != nil {
			return tidemark.Source{}, err
		}
	}
	if len(ch.Config) > 0 {
		if err := ch.Validate(); err != nil {
			return tidemark.Source{}, err
		}
		st := p.db.Ingest()
		src, err := st.Source(ctx, ref)
		if err != nil {
			return src, err
		}
		if ch.AllowPrivate != nil {
			src.AllowPrivate = *ch.AllowPrivate // the guard the new config is checked under
		}
		cfg, err := p.kinds.ChangeConfig(ctx, src, ch.Config)
		if err != nil {
			return tidemark.Source{}, err
		}
		all, err := st.Sources(ctx)
		if err != nil {
			return tidemark.Source{}, err
		}
		others := slices.DeleteFunc(all, func(s tidemark.Source) bool { return s.ID == src.ID })
		ns := ingest.NewSource{Kind: src.Kind, Location: src.Location, Config: cfg}
		if dup, ok := p.kinds.Duplicate(others, ns); ok {
			return tidemark.Source{}, p.duplicateError(dup, ns)
		}
		// The store keys the source anew (kinds.Set.Key, given at Open) and
		// refuses a key another source took since the check above.
		src, err = p.db.Ingest().Set(ctx, ref, ch, actor)
		if dup := (*ingest.DuplicateError)(nil); errors.As(err, &dup) {
			return src, p.duplicateError(dup.Source, ns)
		}
		return src, err
	}
	return p.db.Ingest().Set(ctx, ref, ch, actor)
}

// RenameSource gives a source a new name; its ID, cursor, events and pages
// stay (the wiki shows the new name from the next listing refresh).
func (p *Pipeline) RenameSource(ctx context.Context, ref, name, actor string) (tidemark.Source, error) {
	if err := p.checkOpen(ctx); err != nil {
		return tidemark.Source{}, err
	}
	return p.db.Ingest().RenameSource(ctx, ref, name, actor)
}

// RemoveSource deletes a source with its runs, events, frozen evidence,
// pages and outbox channels. A source with events or channels is refused
// unless force, with an error that says what would be lost. The wiki's
// objects of the source (its change pages and card) are withdrawn by the
// next sweep (`publish`, the daemon's publish loop): a page object with no
// page in the books is an orphan the sweep deletes, and a card no listing
// renders is collected.
func (p *Pipeline) RemoveSource(ctx context.Context, ref, actor string, force bool) (ingest.Removal, error) {
	if err := p.checkOpen(ctx); err != nil {
		return ingest.Removal{}, err
	}
	return p.db.Ingest().RemoveSource(ctx, ref, actor, force)
}

// RemovalOf counts what removing the source would delete, deleting
// nothing.
func (p *Pipeline) RemovalOf(ctx context.Context, ref string) (ingest.Removal, error) {
	if err := p.checkOpen(ctx); err != nil {
		return ingest.Removal{}, err
	}
	return p.db.Ingest().RemovalOf(ctx, ref)
}

// PauseSource stops a source from being claimed; ResumeSource lets it be
// claimed again.
func (p *Pipeline) PauseSource(ctx context.Context, ref, actor string) (tidemark.Source, error) {
	if err := p.checkOpen(ctx); err != nil {
		return tidemark.Source{}, err
	}
	return p.db.Ingest().SetState(ctx, ref, tidemark.SourcePaused, actor)
}

// ResumeSource lets a paused source be claimed again.
func (p *Pipeline) ResumeSource(ctx context.Context, ref, actor string) (tidemark.Source, error) {
	if err := p.checkOpen(ctx); err != nil {
		return tidemark.Source{}, err
	}
	return p.db.Ingest().SetState(ctx, ref, tidemark.SourceActive, actor)
}

// RetrySource reopens a source's window with a fresh budget, due now.
func (p *Pipeline) RetrySource(ctx context.Context, ref, actor, note string) (tidemark.Source, error) {
	if err := p.checkOpen(ctx); err != nil {
		return tidemark.Source{}, err
	}
	return p.db.Ingest().Retry(ctx, ref, actor, note)
}

// SkipSource moves a source's cursor to an explicit position ("" the
// source's head, for kinds that have one), recording what was skipped.
func (p *Pipeline) SkipSource(ctx context.Context, ref, to, actor, note string) (tidemark.Source, error) {
	if err := p.checkOpen(ctx); err != nil {
		return tidemark.Source{}, err
	}
	return p.Ingest().Skip(ctx, ref, to, actor, note)
}

// Sources lists every source, with the holds that decide when each is
// next tried (ingest.ListSources).
func (p *Pipeline) Sources(ctx context.Context) (ingest.SourceList, error) {
	if err := p.checkOpen(ctx); err != nil {
		return ingest.SourceList{}, err
	}
	return ingest.ListSources(ctx, p.db.Ingest(), p.clock.Now())
}

// SourceDetail reads a source with up to limit of its runs and actions.
func (p *Pipeline) SourceDetail(ctx context.Context, ref string, limit int) (ingest.Detail, error) {
	if err := p.checkOpen(ctx); err != nil {
		return ingest.Detail{}, err
	}
	return ingest.SourceDetail(ctx, p.db.Ingest(), ref, limit, p.clock.Now())
}

// Runs lists runs, newest first, after ingest.ResolveRunFilter: a source
// or run the filter names that does not exist is not found.
func (p *Pipeline) Runs(ctx context.Context, f ingest.RunFilter) (ingest.RunList, error) {
	if err := p.checkOpen(ctx); err != nil {
		return ingest.RunList{}, err
	}
	f, err := ingest.ResolveRunFilter(ctx, p.db.Ingest(), f)
	if err != nil {
		return nil, err
	}
	return p.db.Ingest().Runs(ctx, f)
}

// Events lists events, newest first, after ingest.ResolveEventFilter: a
// source, run or event the filter names that does not exist is not found.
func (p *Pipeline) Events(ctx context.Context, f ingest.EventFilter) (ingest.EventList, error) {
	if err := p.checkOpen(ctx); err != nil {
		return ingest.EventList{}, err
	}
	f, err := ingest.ResolveEventFilter(ctx, p.db.Ingest(), f)
	if err != nil {
		return nil, err
	}
	return p.db.Ingest().Events(ctx, f)
}

// Evidence returns an event's frozen evidence at a revision (0: current).
func (p *Pipeline) Evidence(ctx context.Context, eventID string, revision int) ([]byte, string, error) {
	if err := p.checkOpen(ctx); err != nil {
		return nil, "", err
	}
	return p.db.Ingest().Evidence(ctx, eventID, revision)
}

// OPMLImport says how to add the feeds of an OPML file.
type OPMLImport struct {
	Interval    time.Duration
	RetryBudget int
	// DryRun reports what would be added, adding nothing.
	DryRun bool
	// AllowPrivate says whether the new sources may reach private,
	// loopback and link-local addresses (nil: the configuration's
	// default, TIDEMARK_ALLOW_PRIVATE).
	AllowPrivate *bool
}

// OPMLReport is what an import added and skipped (with the reason).
type OPMLReport struct {
	Added   []opml.Feed `json:"added"`
	Skipped []opml.Feed `json:"skipped"`
	DryRun  bool        `json:"-"`
}

// WriteText lists what was added (or would be) and skipped, and counts.
func (r OPMLReport) WriteText(w io.Writer) error {
	verb := "added"
	if r.DryRun {
		verb = "would add"
	}
	for _, f := range r.Added {
		fmt.Fprintf(w, "%s feed %q (%s)\n", verb, f.Name, f.Location)
	}
	for _, f := range r.Skipped {
		fmt.Fprintf(w, "skipped %s: %s\n", f.Location, f.Reason)
	}
	_, err := fmt.Fprintf(w, "%d %s, %d skipped\n", len(r.Added), verb, len(r.Skipped))
	return err
}

// ImportOPML adds the feeds of an OPML file as feed sources. A feed
// already tracked, whose URL is not a feed's, or whose host has only
// addresses the new sources may not reach (private, loopback, link-local:
// added, it would fail every run), is skipped with the reason; a name
// already taken gets a suffix. New sources may reach private addresses
// when o.AllowPrivate says so, by default when the configuration allows
// it (TIDEMARK_ALLOW_PRIVATE).
func (p *Pipeline) ImportOPML(ctx context.Context, r io.Reader, o OPMLImport) (OPMLReport, error) {
	if err := p.checkOpen(ctx); err != nil {
		return OPMLReport{}, err
	}
	rep := OPMLReport{Added: []opml.Feed{}, Skipped: []opml.Feed{}, DryRun: o.DryRun}
	feeds, err := opml.Parse(r)
	if err != nil {
		return rep, err
	}
	st := p.db.Ingest()
	existing, err := st.Sources(ctx)
	if err != nil {
		return rep, err
	}
	allow := p.cfg.AllowPrivate
	if o.AllowPrivate != nil {
		allow = *o.AllowPrivate
	}
	names, tracked := map[string]bool{}, map[string]string{}
	for _, s := range existing {
		names[s.Name] = true
		if s.Kind == "feed" {
			tracked[s.Location] = s.Name
		}
	}
	for _, f := range feeds {
		err := detect.CheckURL(f.Location)
		if err == nil {
			err = kinds.CheckLocationCredentials(f.Location)
		}
		if err != nil {
			f.Reason = tidemark.Text(err)
			rep.Skipped = append(rep.Skipped, f)
			continue
		}
		if n, ok := tracked[f.Location]; ok {
			f.Name, f.Reason = n, "already tracked"
			rep.Skipped = append(rep.Skipped, f)
			continue
		}
		if err := p.kinds.CheckAddress(ctx, f.Location, allow); err != nil {
			// Added, it would fail every run; say the fix at import time.
			f.Reason = tidemark.NamedText(err, func(in tidemark.Input) string {
				return "--" + strings.ReplaceAll(string(in), "_", "-")
			})
			rep.Skipped = append(rep.Skipped, f)
			continue
		}
		if f.Name == "" {
			f.Name = detect.Name(f.Location)
		}
		base := f.Name
		for i := 2; names[f.Name]; i++ {
			f.Name = fmt.Sprintf("%s-%d", base, i)
		}
		ns := ingest.NewSource{Name: f.Name, Kind: "feed", Location: f.Location, Config: map[string]string{},
			Interval: o.Interval, RetryBudget: o.RetryBudget, AllowPrivate: allow}
		if err := ValidateSource(ns); err != nil {
			return rep, err
		}
		if !o.DryRun {
			_, err := p.storeSource(ctx, ns)
			if dup := (*ingest.DuplicateError)(nil); errors.As(err, &dup) {
				// Added meanwhile (a concurrent add or import): tracked.
				f.Name, f.Reason = dup.Source.Name, "already tracked"
				rep.Skipped = append(rep.Skipped, f)
				continue
			}
			if err != nil {
				return rep, fmt.Errorf("add %s: %w", f.Location, err)
			}
		}
		names[f.Name], tracked[f.Location] = true, f.Name
		rep.Added = append(rep.Added, f)
	}
	// The report is shown (text and --json): a location in it is too.
	for _, l := range [][]opml.Feed{rep.Added, rep.Skipped} {
		for i := range l {
			l[i].Location = redact.Location(l[i].Location)
		}
	}
	return rep, nil
}

// ExportOPML writes the feed sources as an OPML 2.0 document.
func (p *Pipeline) ExportOPML(ctx context.Context, w io.Writer) error {
	if err := p.checkOpen(ctx); err != nil {
		return err
	}
	srcs, err := p.db.Ingest().Sources(ctx)
	if err != nil {
		return err
	}
	var feeds []opml.Feed
	for _, s := range srcs {
		if s.Kind == "feed" {
			// Shown, as everywhere: a credential kept in an old location
			// does not leave in an export.
			feeds = append(feeds, opml.Feed{Name: s.Name, Location: s.ShownLocation()})
		}
	}
	return opml.Write(w, "tidemark feeds", p.clock.Now(), feeds)
}

// ExportOPMLFile writes the export to path through a temporary file in the
// same directory, synced, renamed into place, then syncs the directory: a
// reader never sees half a file, and a crash after it returns does not
// lose it.
func (p *Pipeline) ExportOPMLFile(ctx context.Context, path string) error {
	if err := p.checkOpen(ctx); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := p.ExportOPML(ctx, &b); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	fh, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := fh.Name()
	_, err = fh.Write(b.Bytes())
	if err == nil {
		err = fh.Chmod(0o644) // CreateTemp's 0600 would hide the export from others
	}
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
