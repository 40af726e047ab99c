package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
)

// The pipelines meet here: the outbox drafts its intents inside the
// transaction that marks a page published, and page documents override
// what a change page shows.
func init() {
	publishHooks = append(publishHooks, func(a *app) publish.Hook { return a.db.Outbox().PublishHook() })
	pageOverrides = func(a *app) publish.PageOverrides { return pageDocuments{a.db.Content()} }
	afterDocPut = append(afterDocPut, republishEditedPage)
	// Deliver what the new pages drafted, so `run --once` carries a change
	// all the way out.
	afterRunOnce[stepDeliver] = append(afterRunOnce[stepDeliver], deliverAfterRunOnce)
}

// deliverAfterRunOnce delivers the intents pending on every lane, if there
// are lanes.
func deliverAfterRunOnce(a *app, cmd *cobra.Command) error {
	reports, err := deliverOnce(a, cmd.Context(), "", time.Minute)
	for _, r := range reports {
		printDeliver(a, r)
	}
	return err
}

// republishEditedPage republishes the page of an edited page document, so
// an editor's correction shows at once rather than at the page's next
// change. A page that was never published renders the edit when it is.
func republishEditedPage(a *app, cmd *cobra.Command, d content.Document) error {
	if d.Collection != content.PagesCollection {
		return nil
	}
	ctx := cmd.Context()
	svc, err := a.publishService(ctx)
	if err != nil {
		return err
	}
	summaryID, err := svc.Store.CurrentSummary(ctx, d.ID)
	if err != nil || summaryID == "" {
		return err
	}
	res, err := svc.Publish(ctx, summaryID)
	if err != nil {
		return fmt.Errorf("republish page %s: %w", res.PageID, err)
	}
	fmt.Fprintf(a.stderr, "republished page %s (generation %d)\n", res.PageID, res.Generation)
	return nil
}

// pageDocuments adapts the documents' built-in pages collection to the
// publish pipeline's overrides.
type pageDocuments struct{ st *sqlstore.ContentStore }

func (p pageDocuments) PageOverride(ctx context.Context, eventID string) (publish.Override, bool, error) {
	o, ok, err := p.st.PageOverrides(ctx, eventID)
	if err != nil || !ok {
		return publish.Override{}, false, err
	}
	out := publish.Override{Notes: o.NotesText}
	if o.HasTitle {
		out.Title = o.Title
	}
	return out, true, nil
}
