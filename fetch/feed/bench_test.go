package feed_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch"
	"github.com/tidemark/tidemark/fetch/feed"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// bigFeed is an RSS document of n items of realistic size.
func bigFeed(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>Bench</title><link>https://example.org/</link>` + "\n")
	for i := range n {
		fmt.Fprintf(&b, `<item><guid>https://example.org/posts/%d</guid><title>Post number %d</title><link>https://example.org/posts/%d</link>`+
			`<pubDate>Mon, 02 Jan 2026 15:04:05 GMT</pubDate><category>bench</category>`+
			`<description>&lt;p&gt;Paragraph %d of the benchmark feed, with some text to hash and store.&lt;/p&gt;</description></item>`+"\n", i, i, i, i)
	}
	b.WriteString("</channel></rss>\n")
	return b.Bytes()
}

// BenchmarkFeedIngest measures items per second through the whole path —
// local HTTP server → fetch → parse → canonicalize → hash → settle on
// SQLite — against parsing the same feed alone, and reports the ratio.
func BenchmarkFeedIngest(b *testing.B) {
	const n = 10000
	body := bigFeed(n)
	srv, client := fetchtest.MustServe(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		w.Write(body)
	}))
	var parseTime, fullTime time.Duration
	for b.Loop() {
		t0 := time.Now()
		fd, err := gofeed.NewParser().Parse(bytes.NewReader(body))
		if err != nil || len(fd.Items) != n {
			b.Fatalf("parse: %v", err)
		}
		parseTime += time.Since(t0)

		b.StopTimer()
		h := fetchtest.MustHarness(b, sqltest.Backends()[0], "feed", srv.URL, nil, &feed.Fetcher{Client: client})
		b.StartTimer()
		t1 := time.Now()
		rep := h.Run(b)
		fullTime += time.Since(t1)
		if rep.Outcome != tidemark.OutcomeItems || rep.EventsNew != n {
			b.Fatalf("run: %+v", rep)
		}
	}
	iters := float64(b.N)
	full := n * iters / fullTime.Seconds()
	parse := n * iters / parseTime.Seconds()
	b.ReportMetric(full, "items/s")
	b.ReportMetric(parse, "parse-items/s")
	b.ReportMetric(full/parse, "x/baseline")
}

// BenchmarkFeedMemory reports the peak heap growth while a 50 MB body is
// rejected by the size limit (default 20 MiB) and while a 10,000-item feed
// is accepted and settled, and the first against the limit.
func BenchmarkFeedMemory(b *testing.B) {
	chunk := []byte(strings.Repeat("<item><title>x</title></item>\n", 1<<15)) // ~1 MB
	huge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		w.Write([]byte(`<?xml version="1.0"?><rss version="2.0"><channel>`))
		for written := 0; written < 50<<20; written += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return // the client stopped reading at its limit
			}
		}
		w.Write([]byte("</channel></rss>"))
	})
	srvHuge, clientHuge := fetchtest.MustServe(b, huge)
	body := bigFeed(10000)
	srvBig, clientBig := fetchtest.MustServe(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
	}))
	var rejectedPeak, acceptedPeak uint64
	for b.Loop() {
		p := fetchtest.PeakHeap(func() {
			_, err := (&feed.Fetcher{Client: clientHuge}).Fetch(context.Background(), tidemark.Source{Location: srvHuge.URL}, "")
			if o, _, _ := tidemark.Classify(err); o != tidemark.OutcomeInvalid {
				b.Fatalf("50 MB body: %v", err)
			}
		})
		rejectedPeak = max(rejectedPeak, p)
		b.StopTimer()
		h := fetchtest.MustHarness(b, sqltest.Backends()[0], "feed", srvBig.URL, nil, &feed.Fetcher{Client: clientBig})
		b.StartTimer()
		p = fetchtest.PeakHeap(func() {
			if rep := h.Run(b); rep.EventsNew != 10000 {
				b.Fatalf("10k feed: %+v", rep)
			}
		})
		acceptedPeak = max(acceptedPeak, p)
	}
	const mb = 1 << 20
	b.ReportMetric(float64(rejectedPeak)/mb, "peak-MB-50MB-rejected")
	b.ReportMetric(float64(acceptedPeak)/mb, "peak-MB-10k-accepted")
	b.ReportMetric(float64(rejectedPeak)/float64(20<<20), "x/limit-rejected")
	b.ReportMetric(float64(len(body))/mb, "feed-MB-10k")
}

// hugeFeed is the document of the memory report in issue 9: about 19 MB
// of 600,000 small items, far over the default max_items.
func hugeFeed() []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>Huge</title>` + "\n")
	for i := range 600000 {
		fmt.Fprintf(&b, "<item><guid>%07d</guid></item>\n", i)
	}
	b.WriteString("</channel></rss>\n")
	return b.Bytes()
}

// fullFeed is the largest feed the default limits admit: max_items
// entries of about 950 bytes, about 19 MB.
func fullFeed() []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>Full</title>` + "\n")
	text := strings.Repeat("Some words of the entry, escaped &amp;amp; all. ", 16)
	for i := range fetch.DefaultMaxItems {
		fmt.Fprintf(&b, `<item><guid>https://example.org/%d</guid><title>Entry %d</title><link>https://example.org/%d</link>`+
			`<pubDate>Mon, 02 Jan 2026 15:04:05 GMT</pubDate><description>%s</description></item>`+"\n", i, i, i, text)
	}
	b.WriteString("</channel></rss>\n")
	return b.Bytes()
}

// fetchFeed fetches body with the default limits, checks the outcome
// (refused as over max_items, or all entries read), and reports the peak
// heap growth while it does as metric.
func fetchFeed(tb testing.TB, body []byte, entries int, metric string) {
	tb.Helper()
	srv, client := fetchtest.MustServe(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		w.Write(body)
	}))
	mem := fetchtest.PeakHeap(func() {
		res, err := (&feed.Fetcher{Client: client}).Fetch(context.Background(), tidemark.Source{Location: srv.URL}, "")
		switch {
		case entries > fetch.DefaultMaxItems && !errors.Is(err, feed.ErrTooManyEntries):
			tb.Fatalf("%d entries: %v", entries, err)
		case entries <= fetch.DefaultMaxItems && (err != nil || len(res.Items) != entries):
			tb.Fatalf("%d entries: %v, %d items", entries, err, len(res.Items))
		}
	})
	if b, ok := tb.(*testing.B); ok {
		b.ReportMetric(float64(mem)/(1<<20), metric)
	}
}

// TestPeakRSSHugeFeed and TestPeakRSSFullFeed are the child processes of
// BenchmarkFeedHugeDocument.
func TestPeakRSSHugeFeed(t *testing.T) {
	if !fetchtest.InPeakChild(t.Name()) {
		t.Skip("run by BenchmarkFeedHugeDocument in a fresh process")
	}
	fetchFeed(t, hugeFeed(), 600000, "")
	fetchtest.PrintPeakRSS(t)
}

func TestPeakRSSFullFeed(t *testing.T) {
	if !fetchtest.InPeakChild(t.Name()) {
		t.Skip("run by BenchmarkFeedHugeDocument in a fresh process")
	}
	fetchFeed(t, fullFeed(), fetch.DefaultMaxItems, "")
	fetchtest.PrintPeakRSS(t)
}

// BenchmarkFeedHugeDocument reports the peak heap growth of fetching a 19
// MB feed of 600,000 items under the default limits (refused: over
// max_items), and of the largest feed those limits admit (read), and the
// peak RSS of a fresh process doing only one of them (which includes the
// test server's copy of the body and the runtime): memory is bounded by
// the limits, not by the document.
func BenchmarkFeedHugeDocument(b *testing.B) {
	huge, full := hugeFeed(), fullFeed()
	for b.Loop() {
		fetchFeed(b, huge, 600000, "peak-heap-MB-600k")
		fetchFeed(b, full, fetch.DefaultMaxItems, "peak-heap-MB-full")
	}
	b.ReportMetric(float64(fetchtest.PeakRSS(b, "TestPeakRSSHugeFeed"))/(1<<20), "peak-RSS-MB-600k")
	b.ReportMetric(float64(fetchtest.PeakRSS(b, "TestPeakRSSFullFeed"))/(1<<20), "peak-RSS-MB-full")
	b.ReportMetric(float64(len(huge))/(1<<20), "feed-MB-600k")
	b.ReportMetric(float64(len(full))/(1<<20), "feed-MB-full")
}
