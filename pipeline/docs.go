package pipeline

import (
	"context"
	"fmt"

	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/publish"
)

// PutDocument writes a document. A page document (the built-in pages
// collection) republishes its page at once, so an editor's correction
// shows now rather than at the page's next change; a page that was never
// published shows the edit when it is. republished is the page's new
// publication, nil when nothing was republished. An error after the write
// says the write is kept.
func (p *Pipeline) PutDocument(ctx context.Context, collection string, put content.Put) (d content.Document, republished *publish.Result, err error) {
	d, err = p.db.Content().Put(ctx, collection, put)
	if err != nil || d.Collection != content.PagesCollection {
		return d, nil, err
	}
	svc, err := p.Publisher()
	if err != nil {
		return d, nil, fmt.Errorf("%s/%s is at version %d, but: %w", d.Collection, d.ID, d.Version, err)
	}
	summaryID, err := svc.Store.CurrentSummary(ctx, d.ID)
	if err != nil || summaryID == "" {
		if err != nil {
			err = fmt.Errorf("%s/%s is at version %d, but: %w", d.Collection, d.ID, d.Version, err)
		}
		return d, nil, err
	}
	res, err := svc.Publish(ctx, summaryID)
	if err != nil {
		return d, nil, fmt.Errorf("%s/%s is at version %d, but: republish page %s: %w", d.Collection, d.ID, d.Version, res.PageID, err)
	}
	return d, &res, nil
}
