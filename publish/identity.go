package publish

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
)

// A wiki lives in one object store. The database records which one at the
// first publication: a random ID that is also written into the store as a
// marker object, and the store's location in canonical form. A worker whose
// store carries another marker (or none), or sits at another location,
// refuses to publish or sweep: two workers that share a database but not a
// store would otherwise each see the other's pages as missing and republish
// them forever. The marker is what tells apart two directories with the
// same path on two machines; the location is what tells apart a copy.

// StoreMarkerKey is the key of the marker object. Its segment starts with
// "_" so no page, card or index can take it; serve does not serve it.
const StoreMarkerKey = "_tidemark/store.json"

// ErrStoreMismatch: the object store is not the one this database's wiki
// lives in. It matches tidemark.ErrInvalid: the configuration is wrong and
// waiting will not fix it.
var ErrStoreMismatch = fmt.Errorf("publish: the object store is not the one this database's wiki lives in: %w", tidemark.ErrInvalid)

// StoreIdentity is the identity of a wiki's object store.
type StoreIdentity struct {
	// ID is the random ID in the store's marker object.
	ID string `json:"id"`
	// Location is the store's location in canonical form (an absolute
	// directory, or s3://bucket/prefix).
	Location string    `json:"location"`
	BoundAt  time.Time `json:"bound_at"`
}

// storeMarker is the marker object's body.
type storeMarker struct {
	StoreID string `json:"store_id"`
	Note    string `json:"note"`
}

// StoreMismatchError says how the store differs and how to fix it. It
// matches ErrStoreMismatch (and so tidemark.ErrInvalid).
type StoreMismatchError struct {
	// Location is this worker's store; Recorded is the database's.
	Location string
	Recorded StoreIdentity
	// MarkerID is the ID of this store's marker ("" when it has none).
	MarkerID string
}

func (e *StoreMismatchError) Error() string {
	var why string
	switch {
	case e.MarkerID == "":
		why = fmt.Sprintf("the object store %s has no tidemark marker (%s), but this database's wiki lives in the store %s (marker %s)",
			e.Location, StoreMarkerKey, e.Recorded.Location, e.Recorded.ID)
	case e.MarkerID != e.Recorded.ID:
		why = fmt.Sprintf("the object store %s carries marker %s, but this database's wiki lives in the store %s (marker %s)",
			e.Location, e.MarkerID, e.Recorded.Location, e.Recorded.ID)
	default:
		why = fmt.Sprintf("the object store %s carries this wiki's marker but the database recorded the wiki at %s: it is a copy, or the wiki moved",
			e.Location, e.Recorded.Location)
	}
	return why + "; refusing to publish or sweep. Fix: give every worker the same shared store (--store s3://BUCKET/PREFIX, or TIDEMARK_STORE), " +
		"the one at " + e.Recorded.Location + "; if the wiki moved or was emptied on purpose, run `tidemark publish rebind` with the new --store"
}

func (e *StoreMismatchError) Unwrap() error { return ErrStoreMismatch }

// readMarker reads the store's marker ID ("" when there is none).
func (s *Service) readMarker(ctx context.Context) (string, error) {
	o, err := s.Objects.Get(ctx, StoreMarkerKey)
	if errors.Is(err, objstore.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the store's marker: %w", err)
	}
	var m storeMarker
	if err := json.Unmarshal(o.Body, &m); err != nil || m.StoreID == "" {
		return "", fmt.Errorf("the store's marker %s is not tidemark's (%s): %w", StoreMarkerKey, o.Body, tidemark.ErrConflict)
	}
	return m.StoreID, nil
}

// ensureMarker returns the store's marker ID, writing a new marker if the
// store has none. Two binders racing on one store agree on the first. The
// marker is written once, create-only, as generation 1.
func (s *Service) ensureMarker(ctx context.Context) (string, error) {
	id, err := s.readMarker(ctx)
	if err != nil || id != "" {
		return id, err
	}
	body, err := json.Marshal(storeMarker{StoreID: rand.Text(),
		Note: "tidemark: the identity of this wiki's object store, recorded in its database; do not copy or delete"})
	if err != nil {
		return "", err
	}
	_, err = s.Objects.Put(ctx, StoreMarkerKey, body, objstore.PutOptions{Cond: objstore.Cond{IfNoneMatch: true}, Generation: 1, ContentType: "application/json"})
	if err != nil && !errors.Is(err, objstore.ErrPrecondition) {
		return "", fmt.Errorf("write the store's marker: %w", err)
	}
	// Written, or another binder wrote first: read what stands.
	if id, err = s.readMarker(ctx); err == nil && id == "" {
		err = fmt.Errorf("the store's marker %s was written but cannot be read back: %w", StoreMarkerKey, tidemark.ErrUnconfirmed)
	}
	return id, err
}

// verify compares the store with the recorded identity.
func (s *Service) verify(ctx context.Context, rec StoreIdentity) error {
	id, err := s.readMarker(ctx)
	if err != nil {
		return err
	}
	if id != rec.ID || s.StoreLocation != rec.Location {
		return &StoreMismatchError{Location: s.StoreLocation, Recorded: rec, MarkerID: id}
	}
	return nil
}

// CheckStore verifies, without writing anything, that the object store is
// the one the database's wiki lives in. A database with no wiki yet passes.
func (s *Service) CheckStore(ctx context.Context) error {
	rec, ok, err := s.Store.BoundStore(ctx)
	if err != nil || !ok {
		return err
	}
	return s.verify(ctx, rec)
}

// BindStore binds the database's wiki to the object store if it is bound to
// none yet (writing the marker first, then recording it), and verifies that
// the store is the bound one. Publish, Sweep and RefreshListings call it
// before their first write; callers may call it at start to refuse early.
// A service remembers the answer until its next pass, sweep or listings
// refresh (see checkAfresh).
func (s *Service) BindStore(ctx context.Context) (StoreIdentity, error) {
	s.bindMu.Lock()
	defer s.bindMu.Unlock()
	if s.bound != nil {
		return *s.bound, nil
	}
	rec, ok, err := s.Store.BoundStore(ctx)
	if err != nil {
		return rec, err
	}
	if !ok {
		id, err := s.ensureMarker(ctx)
		if err != nil {
			return rec, err
		}
		// Recorded only if no other worker recorded first; rec is the winner.
		if rec, err = s.Store.BindStore(ctx, StoreIdentity{ID: id, Location: s.StoreLocation}); err != nil {
			return rec, err
		}
	}
	if err := s.verify(ctx, rec); err != nil {
		return rec, err
	}
	s.bound = &rec
	return rec, nil
}

// checkAfresh makes the next BindStore verify the store again (a query and
// a read of the marker) rather than trust what an earlier one found. Each
// publishing pass, sweep and listings refresh starts with it, so a
// long-lived service (the daemon's, one for every round) notices a store
// wiped, emptied or replaced under it (a bucket deleted and made again,
// without its marker) at its next round, and writes nothing into it. A
// pass with nothing to write does not read the marker.
func (s *Service) checkAfresh() {
	s.bindMu.Lock()
	defer s.bindMu.Unlock()
	s.bound = nil
}

// Rebind binds the database's wiki to this service's object store whatever
// it was bound to, keeping the store's marker if it has one. An operator
// does this after moving or emptying the wiki on purpose. Bound to another
// store, the books record every published page missing from it; Rebind
// then lists the store's pages once and records those it holds (a moved
// wiki keeps its listings), and a sweep republishes the rest.
func (s *Service) Rebind(ctx context.Context) (StoreIdentity, error) {
	s.bindMu.Lock()
	defer s.bindMu.Unlock()
	id, err := s.ensureMarker(ctx)
	if err != nil {
		return StoreIdentity{}, err
	}
	rec, err := s.Store.RebindStore(ctx, StoreIdentity{ID: id, Location: s.StoreLocation})
	if err != nil {
		return rec, err
	}
	s.bound = &rec
	present := map[string]bool{}
	if err := s.Objects.List(ctx, "changes/", func(in objstore.Info) error { present[in.Key] = true; return nil }); err != nil {
		return rec, fmt.Errorf("rebound; list the pages the store holds: %w", err)
	}
	var found []Absence
	err = s.Store.PageStates(ctx, func(ps PageState) error {
		if a, changed := absenceFound(ps.PageID, ps.PublishedGeneration, ps.PublishedSummaryID != "", present[PageKey(ps.PageID)], ps.Absent); changed {
			found = append(found, a)
		}
		return nil
	})
	if err == nil {
		err = s.Store.RecordAbsence(ctx, rec, found)
	}
	if err != nil {
		return rec, fmt.Errorf("rebound; record the pages the store holds: %w", err)
	}
	return rec, nil
}
