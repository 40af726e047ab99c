package publish_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/publish"
)

// Rounds that did everything leave nothing undone; otherwise Undone names
// each reason an event stays unsummarized or a page unpublished: failed
// (not counting those then held), held (each event once, the soonest hold
// first), claimed by another worker (whose, until the last of its claims),
// and pages that failed. The text output names the claims' holders too.
func TestTotalsSayWhatIsLeftUndone(t *testing.T) {
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	var done publish.Totals
	done.Add(publish.Round{Summarized: publish.SummarizeReport{Accepted: 3}, Published: publish.PublishReport{Published: 3}})
	if u := done.Undone(); len(u) != 0 {
		t.Fatalf("a complete round left undone %q", u)
	}

	var tot publish.Totals
	held := publish.Held{EventID: "e2", Failures: 3, Until: at.Add(time.Hour)}
	tot.Add(publish.Round{Summarized: publish.SummarizeReport{Failed: 2, Held: []publish.Held{held},
		ClaimedElsewhere: 3, Elsewhere: []publish.Elsewhere{
			{EventID: "e3", Holder: "vm:572", Until: at.Add(time.Minute)},
			{EventID: "e4", Holder: "worker-b", Until: at.Add(2 * time.Minute)},
			{EventID: "e5", Holder: "vm:572", Until: at.Add(3 * time.Minute)},
		}}, Published: publish.PublishReport{Failed: 1}})
	// A later round leaves e2 out as held, and names an earlier hold.
	tot.Add(publish.Round{Summarized: publish.SummarizeReport{Holding: []publish.Held{held, {EventID: "e1", Failures: 5, Until: at.Add(time.Minute)}}}})
	if len(tot.Holding) != 2 || tot.Holding[0].EventID != "e1" || tot.Holding[1].EventID != "e2" {
		t.Fatalf("holding %+v, want e1 then e2, once each", tot.Holding)
	}
	want := []string{
		"1 event not summarized: the summarizer failed it",
		"2 events held, the first until 2026-12-02 03:01:00 UTC",
		"3 events not summarized: another worker was summarizing them (vm:572 until 2026-12-02 03:03:00 UTC, worker-b until 2026-12-02 03:02:00 UTC)",
		"1 page not published",
	}
	u := tot.Undone()
	if len(u) != len(want) {
		t.Fatalf("undone %q, want %d parts", u, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(u[i], want[i]) {
			t.Errorf("undone[%d] = %q, want it to start %q", i, u[i], want[i])
		}
	}
	var text strings.Builder
	if err := tot.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"  being summarized by vm:572 until 2026-12-02 03:03:00 UTC: 2 events\n",
		"  being summarized by worker-b until 2026-12-02 03:02:00 UTC: 1 event\n",
		"  held (the summarizer keeps refusing them): 2 events, the first until 2026-12-02 03:01:00 UTC\n",
	} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text %q lacks %q", text.String(), line)
		}
	}
}
