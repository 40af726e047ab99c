package web

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox"
)

// The console shows every time in UTC and says so, whatever the server's
// zone, as the wiki ("20:08 UTC") and the API ("…T20:08:34Z") do, so an
// operator comparing them is never off by the server's offset.
func TestStampIsUTCAndSaysSo(t *testing.T) {
	newYork := time.FixedZone("EST", -5*3600)
	at := time.Date(2026, 12, 1, 15, 8, 34, 0, newYork)
	got := string(stamp(at))
	for _, want := range []string{`datetime="2026-12-01T20:08:34Z"`, ">2026-12-01 20:08:34 UTC<"} {
		if !strings.Contains(got, want) {
			t.Errorf("stamp(%s) = %s, want it to contain %s", at, got, want)
		}
	}
	if got := stampText(at); got != "2026-12-01 20:08:34 UTC" {
		t.Errorf("stampText(%s) = %q", at, got)
	}
	c := newGapChart([]outbox.Gap{{At: at, MS: 2000, ThresholdMS: 1000}}, 1000)
	if title := c.Bars[0].Title; !strings.HasPrefix(title, "2026-12-01 20:08:34 UTC:") {
		t.Errorf("gap bar title %q, want the gap's time in UTC", title)
	}
}

// A count names its thing in the singular for one: "1 attempt", not
// "1 attempts".
func TestManySaysOneInTheSingular(t *testing.T) {
	for _, tc := range []struct {
		n    any
		word string
		want string
	}{{1, "attempt", "1 attempt"}, {0, "attempt", "0 attempts"}, {int64(2), "document", "2 documents"}, {int64(1), "run", "1 run"}, {5, "byte", "5 bytes"}} {
		if got := many(tc.n, tc.word); got != tc.want {
			t.Errorf("many(%v, %q) = %q, want %q", tc.n, tc.word, got, tc.want)
		}
	}
	var b strings.Builder
	err := pages.ExecuteTemplate(&b, "collection.html", map[string]any{"C": map[string]any{"Name": "notes", "Documents": int64(1)}})
	if !strings.Contains(b.String(), "notes") {
		t.Fatalf("the collection page did not render: %v", err)
	}
	if strings.Contains(b.String(), "1 documents") || !strings.Contains(b.String(), "1 document ") {
		t.Errorf("the collection page does not say 1 document:\n%s", b.String())
	}
}

// The gaps chart shows what it is for whatever the spread: with a gap of
// about the minimum beside an idle lane's gap of 17 minutes, the short
// bar and the minimum's line still stand well clear of the floor (a
// logarithmic scale), and the bar above the line is above it.
func TestGapChartShowsShortGapsBesideLongOnes(t *testing.T) {
	c := newGapChart([]outbox.Gap{{MS: 1001, ThresholdMS: 1000}, {MS: 1056110, ThresholdMS: 1000}, {MS: 400, ThresholdMS: 1000}}, 1000)
	floor := c.Height
	if short := c.Bars[0]; short.H < floor/4 {
		t.Errorf("a gap of 1001 ms beside one of 1056110 ms is %.1f of %.0f high: it cannot be seen", short.H, floor)
	}
	if c.ThresholdY > floor*3/4 {
		t.Errorf("the minimum's line is at %.1f of %.0f: on the floor", c.ThresholdY, floor)
	}
	// Above the line: its top is higher (a smaller y) than the line.
	if c.Bars[0].Y >= c.ThresholdY || c.Bars[2].Y <= c.ThresholdY {
		t.Errorf("bars at %.1f and %.1f, the line at %.1f: 1001 ms must reach above it, 400 ms stay below", c.Bars[0].Y, c.Bars[2].Y, c.ThresholdY)
	}
	if c.Bars[1].Y > 1 && c.Bars[1].H < floor-11 {
		t.Errorf("the tallest gap is %.1f high of %.0f", c.Bars[1].H, floor)
	}
	if got := durationMS(1056110); got != "17m36.11s" {
		t.Errorf("durationMS(1056110) = %q", got)
	}
}
