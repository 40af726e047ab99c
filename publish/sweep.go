package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
)

// ListingReport counts what RefreshListings did.
type ListingReport struct {
	Written   int `json:"written"`
	Unchanged int `json:"unchanged"`
	// Collected is how many source cards attached to no published page
	// were deleted.
	Collected int `json:"collected"`
}

// contentHash is the hash of a listing as rendered without a generation.
func contentHash(render func(int64) ([]byte, error)) (string, error) {
	plain, err := render(0)
	if err != nil {
		return "", err
	}
	return tidemark.HashEvidence(plain), nil
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
	info, err := objstore.PutGeneration(ctx, s.Objects, key, body, gen, contentType)
	if errors.Is(err, objstore.ErrNewerGeneration) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("write %s: %w", key, err)
	}
	return true, s.Store.RecordObject(ctx, key, gen, info.ETag, hash, stamp)
}

func (s *Service) writeCard(ctx context.Context, src SourceInfo) (bool, error) {
	render, err := s.renderCard(ctx, src)
	if err != nil {
		return false, err
	}
	hash, err := contentHash(render)
	if err != nil {
		return false, err
	}
	// No stamp: a card written ahead of its first page is refreshed by the
	// next RefreshListings.
	return s.writeListing(ctx, CardKey(src.ID), "card", src.ID, "", hash, render)
}

// RefreshListings rewrites the index and the source cards whose listing
// changed (or whose stored object is not the one recorded), and collects
// cards of sources with no published page.
func (s *Service) RefreshListings(ctx context.Context) (ListingReport, error) {
	var rep ListingReport
	sources, err := s.Store.Sources(ctx)
	if err != nil {
		return rep, err
	}
	recorded := map[string]WikiObject{}
	objs, err := s.Store.WikiObjects(ctx)
	if err != nil {
		return rep, err
	}
	for _, o := range objs {
		recorded[o.Key] = o
	}
	stored := map[string]objstore.Info{}
	if err := s.Objects.List(ctx, "sources/", func(in objstore.Info) error { stored[in.Key] = in; return nil }); err != nil {
		return rep, err
	}
	if in, err := s.Objects.Head(ctx, IndexKey); err == nil {
		stored[IndexKey] = in
	} else if !errors.Is(err, objstore.ErrNotFound) {
		return rep, err
	}
	// refresh rewrites a listing unless the store holds the recorded object
	// and the pages it lists are unchanged (same stamp: nothing to render)
	// or render to the same content.
	refresh := func(key, kind, sourceID, stamp string, renderer func() (func(int64) ([]byte, error), error)) error {
		rec, ok := recorded[key]
		st, sok := stored[key]
		current := ok && sok && rec.ETag == st.ETag
		if current && stamp != "" && rec.Stamp == stamp {
			rep.Unchanged++
			return nil
		}
		render, err := renderer()
		if err != nil {
			return err
		}
		hash, err := contentHash(render)
		if err != nil {
			return err
		}
		if current && rec.ContentHash == hash && rec.Stamp == stamp {
			rep.Unchanged++
			return nil
		}
		wrote, err := s.writeListing(ctx, key, kind, sourceID, stamp, hash, render)
		if wrote {
			rep.Written++
		}
		return err
	}
	live := map[string]bool{}
	var indexStamp strings.Builder
	for _, src := range sources {
		key := CardKey(src.ID)
		live[key] = true
		fmt.Fprintf(&indexStamp, "%s=%s/%s;", src.ID, src.Name, src.Stamp)
		err := refresh(key, "card", src.ID, src.Stamp+"|"+src.Name+"|"+src.Location, func() (func(int64) ([]byte, error), error) {
			return s.renderCard(ctx, src.SourceInfo)
		})
		if err != nil {
			return rep, err
		}
	}
	err = refresh(IndexKey, "index", "", tidemark.HashEvidence([]byte(indexStamp.String())), func() (func(int64) ([]byte, error), error) {
		return s.renderIndex(ctx, sources)
	})
	if err != nil {
		return rep, err
	}
	// Collect cards attached to nothing: in the store or in the books.
	for key := range stored {
		if strings.HasPrefix(key, "sources/") && !live[key] {
			if err := s.Objects.Delete(ctx, key); err != nil {
				return rep, err
			}
			rep.Collected++
		}
	}
	for key, o := range recorded {
		if o.Kind == "card" && !live[key] && o.ETag != "" {
			if err := s.Store.ForgetObject(ctx, key); err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

// SweepReport counts what a sweep found and did.
type SweepReport struct {
	Pages int `json:"pages"`
	// Republished pages did not show their current published summary
	// (never marked, a failed repair, a dead worker, a missing or changed
	// object).
	Republished int `json:"republished"`
	// Withdrawn pages had no current summary any more (rejected).
	Withdrawn int `json:"withdrawn"`
	// Orphans are page objects with no page in the database.
	Orphans int `json:"orphans"`
	// Awaiting pages show a summary of older evidence; their event waits to
	// be summarized again.
	Awaiting int `json:"awaiting"`
	// Superseded pages were overtaken while the sweep ran (a newer summary
	// accepted, or a newer generation written by another publisher); the
	// publisher that overtook them owns the page, and the next sweep checks.
	Superseded int           `json:"superseded"`
	Failed     int           `json:"failed"`
	Errors     []string      `json:"errors,omitempty"`
	Listings   ListingReport `json:"listings"`
}

// Sweep converges every page to its current published summary. It compares
// the books (the event's pointer against the summary marked published, and
// the recorded ETag against the stored object's) and never reads bodies, so
// a sweep with nothing to repair costs one query and one listing.
func (s *Service) Sweep(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	stored := map[string]objstore.Info{}
	if err := s.Objects.List(ctx, "changes/", func(in objstore.Info) error { stored[in.Key] = in; return nil }); err != nil {
		return rep, err
	}
	var republish []string
	var withdraw []string
	err := s.Store.PageStates(ctx, func(ps PageState) error {
		rep.Pages++
		key := PageKey(ps.PageID)
		obj, ok := stored[key]
		delete(stored, key)
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
	fail := func(err error) {
		rep.Failed++
		if len(rep.Errors) < 20 {
			rep.Errors = append(rep.Errors, err.Error())
		}
	}
	for _, id := range republish {
		res, err := s.Publish(ctx, id)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return rep, ctx.Err()
		case errors.Is(err, ErrLostRace) && res.Repaired != nil && res.RepairErr == nil:
			rep.Superseded++
			continue
		case errors.Is(err, ErrSuperseded), errors.Is(err, ErrRejected),
			errors.Is(err, objstore.ErrNewerGeneration), errors.Is(err, ErrNewerPublished):
			rep.Superseded++
			continue
		default:
			fail(err)
			continue
		}
		rep.Republished++
	}
	for _, pageID := range withdraw {
		if err := s.Objects.Delete(ctx, PageKey(pageID)); err != nil {
			fail(err)
			continue
		}
		if _, err := s.Store.Withdraw(ctx, pageID); err != nil {
			fail(err)
			continue
		}
		rep.Withdrawn++
	}
	for key := range stored {
		if err := s.Objects.Delete(ctx, key); err != nil {
			fail(err)
			continue
		}
		rep.Orphans++
	}
	if rep.Listings, err = s.RefreshListings(ctx); err != nil {
		return rep, err
	}
	return rep, nil
}
