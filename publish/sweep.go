package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/redact"
	"golang.org/x/sync/errgroup"
)

// ListingReport counts what RefreshListings did.
type ListingReport struct {
	Written   int `json:"written"`
	Unchanged int `json:"unchanged"`
	// Collected is how many source cards attached to no published page
	// were deleted.
	Collected int `json:"collected"`
}

// writeListing allocates a generation and writes a listing object with the
// store's compare-and-swap. A newer generation already stored wins.
func (s *Service) writeListing(ctx context.Context, key, kind, sourceID, stamp, hash string, render func(int64) ([]byte, error)) (bool, error) {
	gen, err := s.Store.AllocateObject(ctx, key, kind, sourceID)
	if err != nil {
		return false, err
	}
	body, err := render(gen)
	if err != nil {
		return false, err
	}
	info, err := objstore.PutGeneration(ctx, s.Objects, key, body, gen, contentTypeOf(key))
	if errors.Is(err, objstore.ErrNewerGeneration) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("write %s: %w", key, err)
	}
	return true, s.Store.RecordObject(ctx, key, gen, info.ETag, hash, stamp)
}

func (s *Service) writeCard(ctx context.Context, src SourceInfo) (bool, error) {
	absent, err := s.absentPages(ctx)
	if err != nil {
		return false, err
	}
	objs, err := s.renderCard(ctx, src, absent.all, nil)
	if err != nil {
		return false, err
	}
	hash, err := objs[0].contentHash()
	if err != nil {
		return false, err
	}
	// No stamp: a card written ahead of its first page is refreshed by the
	// next RefreshListings, with its archive pages and feed.
	return s.writeListing(ctx, objs[0].key, "card", src.ID, "", hash, objs[0].render)
}

// absence is the published pages whose objects the store does not hold
// (a new or emptied store, a deleted object), all and by source.
type absence struct {
	all      map[string]bool
	bySource map[string][]string
}

func (a *absence) add(pageID, sourceID string) {
	a.all[pageID] = true
	a.bySource[sourceID] = append(a.bySource[sourceID], pageID)
}

func newAbsence() *absence {
	return &absence{all: map[string]bool{}, bySource: map[string][]string{}}
}

// absentPages is the published pages the books record absent from the
// store: the last sweep found them missing (it lists the store; a
// publishing pass need not), or the wiki was rebound to another store and
// they have not been republished since.
func (s *Service) absentPages(ctx context.Context) (*absence, error) {
	a := newAbsence()
	err := s.Store.AbsentPages(ctx, func(pageID, sourceID string) error {
		a.add(pageID, sourceID)
		return nil
	})
	return a, err
}

// absenceFound is the change to a page's absence record that a look at
// the store found (present or not, when its published generation was
// generation): changed is false when the record already says so.
func absenceFound(pageID string, generation int64, published, present, recorded bool) (a Absence, changed bool) {
	missing := published && !present
	return Absence{PageID: pageID, Generation: generation, Absent: missing}, missing != recorded
}

// Missing counts the published pages the books record missing from the
// store (see absentPages): a Sweep republishes them.
func (s *Service) Missing(ctx context.Context) (int, error) {
	a, err := s.absentPages(ctx)
	if err != nil {
		return 0, err
	}
	return len(a.all), nil
}

// listingPrefixes hold listing objects only; an object there that no
// listing renders is collected.
var listingPrefixes = []string{"sources/", "archive/"}

// RefreshListings rewrites the listing objects (the index and its archive
// pages, each source's card, archive pages and feed, the feed of all
// changes) whose content changed (or whose stored object is not the one
// recorded), and collects listing objects nothing renders any more: cards
// of sources with no published page, archive pages past the last.
func (s *Service) RefreshListings(ctx context.Context) (ListingReport, error) {
	s.checkAfresh()
	return s.refreshListings(ctx, nil)
}

// refreshListings is RefreshListings given the published pages the store
// does not hold (nil: find them). Its phases: read what the books record
// and what the store holds, refresh each source's group, then the index's,
// then collect what no group rendered.
func (s *Service) refreshListings(ctx context.Context, absent *absence) (ListingReport, error) {
	if _, err := s.BindStore(ctx); err != nil {
		return ListingReport{}, err
	}
	sources, err := s.Store.Sources(ctx)
	if err != nil {
		return ListingReport{}, err
	}
	r, err := s.readListings(ctx)
	if err != nil {
		return ListingReport{}, err
	}
	if absent == nil {
		if absent, err = s.absentPages(ctx); err != nil {
			return r.rep, err
		}
	}
	var indexStamp strings.Builder
	every := &everyPage{} // read once, by the first group that renders
	base := s.baseStamp()
	for _, src := range sources {
		// The stamp is stored (wiki_objects): it holds the location as shown.
		stamp := src.Stamp + "|" + src.Name + "|" + redact.Location(src.Location) + absentStamp(absent.bySource[src.ID]) + base
		fmt.Fprintf(&indexStamp, "%s=%s;", src.ID, stamp)
		err := s.refreshGroup(ctx, r, CardKey(src.ID), "card", src.ID, stamp, func() ([]listingObject, error) {
			return s.renderCard(ctx, src.SourceInfo, absent.all, every)
		})
		if err != nil {
			return r.rep, err
		}
	}
	indexStamp.WriteString(base)
	err = s.refreshGroup(ctx, r, IndexKey, "index", "", tidemark.HashEvidence([]byte(indexStamp.String())), func() ([]listingObject, error) {
		return s.renderIndex(ctx, sources, absent.all, every)
	})
	if err != nil {
		return r.rep, err
	}
	err = s.collectListings(ctx, r)
	return r.rep, err
}

// listingRefresh is one refresh's view of the listing objects: what the
// books record, what the store holds, and what this refresh rendered.
type listingRefresh struct {
	recorded map[string]WikiObject
	stored   map[string]objstore.Info
	live     map[string]bool
	rep      ListingReport
}

// readListings reads the listing objects the books record and those the
// store holds (under the listing prefixes, and the index and the feed).
func (s *Service) readListings(ctx context.Context) (*listingRefresh, error) {
	r := &listingRefresh{recorded: map[string]WikiObject{}, stored: map[string]objstore.Info{}, live: map[string]bool{}}
	objs, err := s.Store.WikiObjects(ctx)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		r.recorded[o.Key] = o
	}
	for _, prefix := range listingPrefixes {
		if err := s.Objects.List(ctx, prefix, func(in objstore.Info) error { r.stored[in.Key] = in; return nil }); err != nil {
			return nil, err
		}
	}
	for _, key := range []string{IndexKey, FeedKey} {
		if in, err := s.Objects.Head(ctx, key); err == nil {
			r.stored[key] = in
		} else if !errors.Is(err, objstore.ErrNotFound) {
			return nil, err
		}
	}
	return r, nil
}

// baseStamp is the part of every group's stamp that says which base URL
// its feeds were rendered with (they link to the wiki by it), so that a
// changed BaseURL rewrites them though no page changed: a URL an operator
// moved, or one whose credential was dropped (the feeds would otherwise
// keep publishing it). Only its hash is stored.
// A stamp recorded before it had this part (a release that did not
// know) differs from any, so the first refresh after an upgrade renders
// every group once, and writes only the objects whose content differs.
func (s *Service) baseStamp() string {
	return "|base:" + tidemark.HashEvidence([]byte(s.BaseURL))
}

// absentStamp is the part of a group's stamp that says which of its pages
// the store does not hold, so a group is re-rendered when that changes.
func absentStamp(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return "|absent:" + tidemark.HashEvidence([]byte(strings.Join(ids, ",")))
}

// current says whether the store holds the very object the books record
// for key.
func (r *listingRefresh) current(key string) bool {
	rec, ok := r.recorded[key]
	st, sok := r.stored[key]
	return ok && sok && rec.ETag != "" && rec.ETag == st.ETag
}

// refreshGroup decides whether a group of listing objects (one source's,
// or the index's) is rewritten: not when the store holds every object
// recorded for the group and the pages they list are unchanged (same
// stamp: nothing to render); otherwise it renders the group and writes
// each object whose content differs.
func (s *Service) refreshGroup(ctx context.Context, r *listingRefresh, mainKey, kind, sourceID, stamp string, renderer func() ([]listingObject, error)) error {
	fresh := r.current(mainKey) && r.recorded[mainKey].Stamp == stamp
	var members []string
	for key, rec := range r.recorded {
		if rec.Kind == kind && rec.SourceID == sourceID && rec.ETag != "" {
			members = append(members, key)
			fresh = fresh && r.current(key) && rec.Stamp == stamp
		}
	}
	if fresh {
		for _, key := range members {
			r.live[key] = true
		}
		r.rep.Unchanged += len(members)
		return nil
	}
	group, err := renderer()
	if err != nil {
		return err
	}
	// An object whose content is unchanged is not written again (a full
	// archive page never changes when newer changes arrive); it is only
	// restamped, so the group is fresh again at the next refresh.
	var (
		restamp []WikiObject
		writes  []listingWrite
		main    *listingWrite
	)
	for _, o := range group {
		r.live[o.key] = true
		hash, err := o.contentHash()
		if err != nil {
			return err
		}
		if rec := r.recorded[o.key]; r.current(o.key) && rec.ContentHash == hash {
			r.rep.Unchanged++
			if rec.Stamp != stamp {
				restamp = append(restamp, rec)
			}
			continue
		}
		if o.key == mainKey {
			main = &listingWrite{o, hash}
		} else {
			writes = append(writes, listingWrite{o, hash})
		}
	}
	// The objects the front page links first, up to s.concurrency() at
	// once (each fenced by its own generation), then the front page.
	var mu sync.Mutex
	write := func(ctx context.Context, w listingWrite) error {
		wrote, err := s.writeListing(ctx, w.key, kind, sourceID, stamp, w.hash, w.render)
		if wrote {
			mu.Lock()
			r.rep.Written++
			mu.Unlock()
		}
		return err
	}
	g, gctx := errgroup.WithContext(ctx) // one write failed: the others queued are not started
	g.SetLimit(s.concurrency())
	for _, w := range writes {
		g.Go(func() error { return write(gctx, w) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if main != nil {
		if err := write(ctx, *main); err != nil {
			return err
		}
	}
	return s.Store.RestampObjects(ctx, stamp, restamp)
}

// listingWrite is a listing object to write, with its content hash.
type listingWrite struct {
	listingObject
	hash string
}

// collectListings decides what no group rendered any more: such objects
// are deleted from the store (the index excepted) and forgotten by the
// books.
func (s *Service) collectListings(ctx context.Context, r *listingRefresh) error {
	for key := range r.stored {
		if key != IndexKey && !r.live[key] {
			if err := s.Objects.Delete(ctx, key); err != nil {
				return err
			}
			r.rep.Collected++
		}
	}
	for key, o := range r.recorded {
		if !r.live[key] && o.ETag != "" {
			if err := s.Store.ForgetObject(ctx, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// SweepReport counts what a sweep found and did.
type SweepReport struct {
	Pages int `json:"pages"`
	// Republished pages did not show their current published summary
	// (never marked, a failed repair, a dead worker, a missing or changed
	// object).
	Republished int `json:"republished"`
	// Withdrawn pages had no current summary any more (rejected), or
	// were deleted with their source.
	Withdrawn int `json:"withdrawn"`
	// Orphans are page objects with no page in the database.
	Orphans int `json:"orphans"`
	// Awaiting pages show a summary of older evidence; their event waits to
	// be summarized again.
	Awaiting int `json:"awaiting"`
	// Superseded pages were overtaken while the sweep ran (a newer summary
	// accepted, or a newer generation written by another publisher); the
	// publisher that overtook them owns the page, and the next sweep checks.
	Superseded int `json:"superseded"`
	// Relinked counts the pages republished because their neighbours
	// changed (also counted in Republished when they were).
	Relinked int `json:"relinked"`
	// Restyled counts the pages republished because an earlier release
	// rendered them (also counted in Republished).
	Restyled int `json:"restyled"`
	// Missing counts the published pages the store does not hold after
	// the sweep (it could not republish them): no listing links to them,
	// and the next sweep tries again.
	Missing  int           `json:"missing"`
	Failed   int           `json:"failed"`
	Errors   []string      `json:"errors,omitempty"`
	Listings ListingReport `json:"listings"`
}

// Sweep converges every page to its current published summary. It compares
// the books (the event's pointer against the summary marked published, and
// the recorded ETag against the stored object's) and never reads a page's
// body: a sweep with nothing to repair costs six queries, a read of the
// store's marker (see checkAfresh), the store's listings of its page and
// listing objects, and two HEADs.
func (s *Service) Sweep(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	s.checkAfresh()
	bound, err := s.BindStore(ctx)
	if err != nil {
		return rep, err
	}
	fail := func(err error) {
		rep.Failed++
		if len(rep.Errors) < 20 {
			rep.Errors = append(rep.Errors, tidemark.Text(err))
		}
	}
	// The pages of removed sources go first, by the removal's record, so
	// the listing below does not find them as orphans.
	for {
		removed, err := s.Store.RemovedPages(ctx, 1000)
		if err != nil {
			return rep, err
		}
		n, err := s.deleteRemoved(ctx, removed, fail)
		rep.Withdrawn += n
		if err != nil {
			return rep, err
		}
		if len(removed) < 1000 || n < len(removed) {
			break // all done, or the rest failed: the next sweep tries again
		}
	}
	stored := map[string]objstore.Info{}
	if err := s.Objects.List(ctx, "changes/", func(in objstore.Info) error { stored[in.Key] = in; return nil }); err != nil {
		return rep, err
	}
	var republish []string
	var withdraw []string
	// What the listings need once the sweep is done: which published
	// pages the store holds.
	type listed struct {
		pageID, sourceID   string
		published, present bool
		generation         int64 // published
		recordedAbsent     bool
	}
	pages := map[string]*listed{} // by key
	err = s.Store.PageStates(ctx, func(ps PageState) error {
		rep.Pages++
		key := PageKey(ps.PageID)
		obj, ok := stored[key]
		delete(stored, key)
		pages[key] = &listed{pageID: ps.PageID, sourceID: ps.SourceID, published: ps.PublishedSummaryID != "", present: ok,
			generation: ps.PublishedGeneration, recordedAbsent: ps.Absent}
		switch {
		case ps.SummaryID != "" && ps.PointerFresh:
			if ps.PublishedSummaryID != ps.SummaryID || !ok || obj.ETag != ps.PublishedETag {
				republish = append(republish, ps.SummaryID)
			}
		case ps.SummaryID == "" && (ps.PublishedSummaryID != "" || ok):
			withdraw = append(withdraw, ps.PageID)
		case ps.SummaryID != "":
			rep.Awaiting++
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	// Pages whose neighbours changed link to the wrong pages.
	relink, err := s.Store.Relink(ctx, 0)
	if err != nil {
		return rep, err
	}
	queued := map[string]bool{}
	for _, id := range republish {
		queued[id] = true
	}
	for _, id := range relink {
		if !queued[id] {
			queued[id] = true
			republish = append(republish, id)
			rep.Relinked++
		}
	}
	// Pages an earlier release rendered take this one's format.
	restyle, err := s.Store.Restyle(ctx, PageFormat(), 0)
	if err != nil {
		return rep, err
	}
	restyling := map[string]bool{}
	for _, id := range restyle {
		if !queued[id] {
			republish = append(republish, id)
			restyling[id] = true
		}
	}
	// Republished as a publishing pass publishes: up to s.concurrency()
	// at once, each fenced on its own page; a store the wiki was rebound
	// from stops the sweep, as it stops a pass.
	err = s.publishEach(ctx, republish, func(id string) (Result, error) { return s.Publish(ctx, id) },
		func(id string, res Result, err error) {
			switch {
			case err == nil && res.Elsewhere:
				// Another publisher published the same summary meanwhile.
				rep.Superseded++
			case err == nil:
				if l := pages[res.Key]; l != nil {
					l.published, l.present = true, true
				}
				rep.Republished++
				if restyling[id] {
					rep.Restyled++
				}
			case errors.Is(err, ErrLostRace) && res.Repaired != nil && res.RepairErr == nil,
				errors.Is(err, ErrSuperseded), errors.Is(err, ErrRejected),
				errors.Is(err, objstore.ErrNewerGeneration), errors.Is(err, ErrNewerPublished):
				rep.Superseded++
			default:
				fail(err)
			}
		})
	if err != nil {
		return rep, err
	}
	for _, pageID := range withdraw {
		l := pages[PageKey(pageID)]
		// Left out of the listings whatever happens below: a page being
		// withdrawn is not linked, and its object may be gone already.
		l.present = false
		withdrawn, published, err := s.withdraw(ctx, pageID)
		switch {
		case err != nil:
			fail(err)
		case withdrawn:
			l.published = false
			rep.Withdrawn++
		case published > 0:
			// A summary accepted since the sweep read the page, perhaps
			// published before the delete: it stays published, and the
			// object just deleted is recorded missing below, at the
			// generation published now, so no listing links to it until
			// it is republished.
			l.published, l.generation = true, published
		}
	}
	for key := range stored {
		if err := s.Objects.Delete(ctx, key); err != nil {
			fail(err)
			continue
		}
		rep.Orphans++
	}
	// The books record what the store holds now, so passes until the next
	// sweep need not list it (a page republished here was recorded present
	// by its mark), and the listings leave out what they record missing.
	var found []Absence
	for _, l := range pages {
		if a, changed := absenceFound(l.pageID, l.generation, l.published, l.present, l.recordedAbsent); changed {
			found = append(found, a)
		}
	}
	if err := s.Store.RecordAbsence(ctx, bound, found); err != nil {
		return rep, err
	}
	absent, err := s.absentPages(ctx)
	if err != nil {
		return rep, err
	}
	rep.Missing = len(absent.all)
	if rep.Listings, err = s.refreshListings(ctx, absent); err != nil {
		return rep, err
	}
	return rep, nil
}
