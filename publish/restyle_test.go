package publish_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A release that renders change pages differently republishes the pages
// an earlier release rendered: a pass takes up to its limit of them, a
// sweep the rest, and once every page is in this release's format neither
// republishes anything.
func TestPagesOfAnEarlierReleaseAreRepublishedInThisOnesFormat(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		for i := range 5 {
			ev := f.mustEvent(t, fmt.Sprintf("k%d", i), fmt.Sprintf("Change %d", i), fmt.Sprintf("evidence of change %d", i))
			f.mustAccept(t, ev, fmt.Sprintf("Change %d does a thing.", i), "m")
		}
		formats := func() map[string]int {
			t.Helper()
			rows, err := f.db.SQL().QueryContext(ctx, `SELECT published_format FROM pages`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			out := map[string]int{}
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				out[s]++
			}
			return out
		}
		rep, err := f.svc.PublishPending(ctx, 10)
		if err != nil || rep.Published != 5 || rep.Restyled != 0 {
			t.Fatalf("first pass: %+v %v", rep, err)
		}
		if got := formats(); got[publish.PageFormat()] != 5 || publish.PageFormat() == "" {
			t.Fatalf("formats after the first pass: %v, want 5 in %q", got, publish.PageFormat())
		}

		// The pages as an earlier release published them.
		if _, err := f.db.SQL().ExecContext(ctx, `UPDATE pages SET published_format = 'an earlier release'`); err != nil {
			t.Fatal(err)
		}
		rep, err = f.svc.PublishPending(ctx, 2)
		if err != nil || rep.Restyled != 2 || rep.Published != 0 || rep.Failed != 0 {
			t.Fatalf("a pass of 2: %+v %v, want 2 restyled", rep, err)
		}
		var out strings.Builder
		if err := (publish.Round{Published: rep}).WriteText(&out); err != nil || !strings.Contains(out.String(), "(and 2 republished in this release's style)") {
			t.Fatalf("the pass's text does not say what it republished: %q", out.String())
		}
		srep, err := f.svc.Sweep(ctx)
		if err != nil || srep.Restyled != 3 || srep.Republished != 3 || srep.Failed != 0 {
			t.Fatalf("sweep: %+v %v, want the other 3 restyled", srep, err)
		}
		if got := formats(); got[publish.PageFormat()] != 5 {
			t.Fatalf("formats after the sweep: %v", got)
		}
		rep, err = f.svc.PublishPending(ctx, 10)
		if err != nil || rep.Restyled != 0 || rep.Relinked != 0 {
			t.Fatalf("a pass with every page restyled: %+v %v", rep, err)
		}
		if srep, err = f.svc.Sweep(ctx); err != nil || srep.Restyled != 0 || srep.Republished != 0 {
			t.Fatalf("a sweep with every page restyled: %+v %v", srep, err)
		}
	})
}
