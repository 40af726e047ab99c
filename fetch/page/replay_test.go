package page_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/fetch/page"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A run that fails between the fetch and the settlement (or inside the
// settlement) leaves the cursor where it was; the replay freezes exactly
// the evidence the failed run would have frozen, once.
func TestPageReplayAfterFailureFreezesSameEvidence(t *testing.T) {
	for _, fp := range []string{"ingest.run.after-fetch", "ingest.settle.after-events", "ingest.settle.before-commit"} {
		t.Run(fp, func(t *testing.T) {
			sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
				s := newSite("")
				s.Set(200, html("10 EUR", "1"), "")
				srv, client := fetchtest.MustServe(t, s)
				f := &page.Fetcher{Client: client}
				cfg := map[string]string{page.ConfigSelector: "#prices", page.ConfigIgnore: ".stamp"}
				h := fetchtest.MustHarness(t, b, "page", srv.URL, cfg, f)
				h.MustRun(t, tidemark.OutcomeItems)

				s.Set(200, html("11 EUR", "2"), "")
				before := h.Current(t)
				want, err := f.Fetch(context.Background(), before, before.Cursor)
				if err != nil || len(want.Items) != 1 {
					t.Fatalf("direct fetch: %v", err)
				}
				if err := failpoint.Arm(fp + "=error"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(failpoint.Reset)
				// The settlement's own failure is returned as an error after
				// the run is recorded as failed.
				if _, err := h.Service.RunSource(context.Background(), h.Source.ID); err == nil {
					t.Fatal("the armed failpoint did not fail the run")
				}
				failpoint.Reset()
				if o := h.Current(t).LastOutcome; o != tidemark.OutcomeError {
					t.Fatalf("failed run recorded as %q", o)
				}
				if after := h.Current(t); after.Cursor != before.Cursor || after.CursorVersion != before.CursorVersion {
					t.Fatal("a failed run moved the cursor")
				}
				if ev := h.Events(t)[srv.URL]; ev.Revision != 1 {
					t.Fatalf("a failed run froze revision %d", ev.Revision)
				}

				h.MustRun(t, tidemark.OutcomeItems)
				ev := h.Events(t)[srv.URL]
				if ev.Revision != 2 || ev.EvidenceHash != want.Items[0].EvidenceHash() {
					t.Fatalf("replay froze revision %d hash %s, want 2 and %s", ev.Revision, ev.EvidenceHash, want.Items[0].EvidenceHash())
				}
				h.MustRun(t, tidemark.OutcomeEmpty)
			})
		})
	}
}
