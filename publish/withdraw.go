package publish

import (
	"context"
)

// withdrawPending takes off the wiki, up to limit of each, what the books
// say must go, without listing the store: the pages of rejected summaries
// (withdrawn: the object deleted, then the page's published state cleared
// if it still has no current summary), and the pages of removed sources
// (their rows are gone with the source; the removal recorded them). A
// publishing pass does this first, so the relinks and listings that follow
// leave them out. What fails is counted in rep and tried again by the next
// pass or sweep.
func (s *Service) withdrawPending(ctx context.Context, limit int, rep *PublishReport) error {
	gone, err := s.Store.Withdrawable(ctx, limit)
	if err != nil {
		return err
	}
	removed, err := s.Store.RemovedPages(ctx, limit)
	if err != nil {
		return err
	}
	if len(gone) == 0 && len(removed) == 0 {
		return nil
	}
	// Deleting is writing: only in the store the wiki is bound to.
	bound, err := s.BindStore(ctx)
	if err != nil {
		return err
	}
	var stayed []Absence
	for _, a := range gone {
		withdrawn, published, err := s.withdraw(ctx, a.PageID)
		switch {
		case err != nil:
			rep.fail(err)
			told(ctx, StepFailed)
		case withdrawn:
			rep.Withdrawn++
			told(ctx, StepWithdrawn)
		case published > 0:
			// A summary was accepted since the page was read, and maybe
			// published (by another worker) before the delete: the page
			// stays published, and its object, just deleted, is recorded
			// missing at the generation published now, so no listing
			// links to it until it is republished (a later publication
			// proves it present again).
			stayed = append(stayed, Absence{PageID: a.PageID, Generation: published, Absent: true})
		}
	}
	if err := s.Store.RecordAbsence(ctx, bound, stayed); err != nil {
		return err
	}
	n, err := s.deleteRemoved(ctx, removed, func(err error) { rep.fail(err); told(ctx, StepFailed) })
	rep.Withdrawn += n
	for range n {
		told(ctx, StepWithdrawn)
	}
	return err
}

// withdraw deletes a page's object, then clears its published state if
// its event still has no current summary (reported by withdrawn). The
// object goes first: a page the books no longer publish never stays in
// the store because the delete failed after the books were changed.
func (s *Service) withdraw(ctx context.Context, pageID string) (withdrawn bool, published int64, err error) {
	if err := s.Objects.Delete(ctx, PageKey(pageID)); err != nil {
		return false, 0, err
	}
	return s.Store.Withdraw(ctx, pageID)
}

// deleteRemoved deletes the objects of the pages of removed sources and
// forgets the pages whose object is gone; a failed delete is told to fail
// and left for the next pass. It returns how many it deleted.
func (s *Service) deleteRemoved(ctx context.Context, pageIDs []string, fail func(error)) (int, error) {
	var done []string
	for _, id := range pageIDs {
		if err := s.Objects.Delete(ctx, PageKey(id)); err != nil {
			fail(err)
			continue
		}
		done = append(done, id)
	}
	return len(done), s.Store.ForgetRemoved(ctx, done)
}

// withdrawLost withdraws a page a publication wrote and then lost the
// mark of, its summary rejected meanwhile with nothing current to repair
// onto. As withdrawPending does: the object goes first; if a summary was
// accepted and published since (by another worker, before the delete),
// the page stays published and its object is recorded missing, so no
// listing links to it until a sweep republishes it.
func (s *Service) withdrawLost(ctx context.Context, pageID string, bound StoreIdentity) error {
	withdrawn, published, err := s.withdraw(ctx, pageID)
	if err != nil || withdrawn || published == 0 {
		return err
	}
	return s.Store.RecordAbsence(ctx, bound, []Absence{{PageID: pageID, Generation: published, Absent: true}})
}
