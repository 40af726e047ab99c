package page_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/fetch/page"
)

// linkPage is a page of n links, each three HTML nodes (the link, its
// text, the line break after it). linkPage(1000000) is the page of the
// memory report in issue 9: about 18 MB of 1,000,000 links.
func linkPage(n int) []byte {
	var b bytes.Buffer
	b.WriteString("<!doctype html><html><head><title>Links</title></head><body>\n")
	for i := range n {
		fmt.Fprintf(&b, "<a href=%d>%d</a>\n", i, i%10)
	}
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

// textPage is a page of about 19 MB of paragraphs, under the default
// max_nodes: the largest text the default limits admit.
func textPage() []byte {
	var b bytes.Buffer
	b.WriteString("<html><body>\n")
	line := strings.Repeat("word ", 50)
	for i := 0; b.Len() < 19<<20; i++ {
		fmt.Fprintf(&b, "<p>%d %s</p>\n", i, line)
	}
	b.WriteString("</body></html>")
	return b.Bytes()
}

// atLimit is the number of links of the largest page the default
// max_nodes admits.
const atLimit = page.DefaultMaxNodes/3 - 10

// fetchPage fetches body with the default limits, checks the outcome
// (refused over max_nodes, or read), and reports the peak heap growth
// while it does as metric.
func fetchPage(tb testing.TB, body []byte, refused bool, metric string) {
	tb.Helper()
	srv, client := fetchtest.MustServe(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(body)
	}))
	mem := fetchtest.PeakHeap(func() {
		res, err := (&page.Fetcher{Client: client}).Fetch(context.Background(), tidemark.Source{Location: srv.URL}, "")
		switch {
		case refused && !errors.Is(err, page.ErrTooManyNodes):
			tb.Fatalf("want over max_nodes, got %v", err)
		case !refused && (err != nil || len(res.Items) != 1):
			tb.Fatalf("want read, got %v", err)
		}
	})
	if b, ok := tb.(*testing.B); ok {
		b.ReportMetric(float64(mem)/(1<<20), metric)
	}
}

// TestPeakRSSHugePage, TestPeakRSSPageAtLimit and TestPeakRSSTextPage are
// the child processes of BenchmarkPageHugeDocument.
func TestPeakRSSHugePage(t *testing.T) {
	if !fetchtest.InPeakChild(t.Name()) {
		t.Skip("run by BenchmarkPageHugeDocument in a fresh process")
	}
	fetchPage(t, linkPage(1000000), true, "")
	fetchtest.PrintPeakRSS(t)
}

func TestPeakRSSPageAtLimit(t *testing.T) {
	if !fetchtest.InPeakChild(t.Name()) {
		t.Skip("run by BenchmarkPageHugeDocument in a fresh process")
	}
	fetchPage(t, linkPage(atLimit), false, "")
	fetchtest.PrintPeakRSS(t)
}

func TestPeakRSSTextPage(t *testing.T) {
	if !fetchtest.InPeakChild(t.Name()) {
		t.Skip("run by BenchmarkPageHugeDocument in a fresh process")
	}
	fetchPage(t, textPage(), false, "")
	fetchtest.PrintPeakRSS(t)
}

// BenchmarkPageHugeDocument reports the peak heap growth of fetching, under
// the default limits, an 18 MB page of 1,000,000 links (refused: over
// max_nodes), the page of the most links max_nodes admits, and a 19 MB
// page of text (both read), and the peak RSS of a fresh process doing
// only one of them (which includes the test server's copy of the body and
// the runtime): memory is bounded by the limits, not by the page.
func BenchmarkPageHugeDocument(b *testing.B) {
	huge, links, text := linkPage(1000000), linkPage(atLimit), textPage()
	for b.Loop() {
		fetchPage(b, huge, true, "peak-heap-MB-1M-links")
		fetchPage(b, links, false, "peak-heap-MB-at-limit")
		fetchPage(b, text, false, "peak-heap-MB-text")
	}
	b.ReportMetric(float64(fetchtest.PeakRSS(b, "TestPeakRSSHugePage"))/(1<<20), "peak-RSS-MB-1M-links")
	b.ReportMetric(float64(fetchtest.PeakRSS(b, "TestPeakRSSPageAtLimit"))/(1<<20), "peak-RSS-MB-at-limit")
	b.ReportMetric(float64(fetchtest.PeakRSS(b, "TestPeakRSSTextPage"))/(1<<20), "peak-RSS-MB-text")
	b.ReportMetric(float64(len(huge))/(1<<20), "page-MB-1M-links")
	b.ReportMetric(float64(len(text))/(1<<20), "page-MB-text")
}
