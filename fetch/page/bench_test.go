package page_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
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

// atLimit is the number of links of the largest page the default
// max_nodes admits.
const atLimit = page.DefaultMaxNodes/3 - 10

// fetchLinkPage fetches linkPage(n) with the default limits, checks the
// outcome (refused over max_nodes, else read), and reports the peak heap
// growth while it does.
func fetchLinkPage(tb testing.TB, n int, metric string) {
	tb.Helper()
	body := linkPage(n)
	srv, client := fetchtest.MustServe(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(body)
	}))
	mem := fetchtest.PeakHeap(func() {
		res, err := (&page.Fetcher{Client: client}).Fetch(context.Background(), tidemark.Source{Location: srv.URL}, "")
		switch {
		case n > atLimit && (err == nil || !errors.Is(err, page.ErrTooManyNodes)):
			tb.Fatalf("%d links: %v", n, err)
		case n <= atLimit && (err != nil || len(res.Items) != 1):
			tb.Fatalf("%d links: %v", n, err)
		}
	})
	if b, ok := tb.(*testing.B); ok {
		b.ReportMetric(float64(mem)/(1<<20), metric)
	}
}

// TestPeakRSSHugePage is the child process of BenchmarkPageHugeDocument.
func TestPeakRSSHugePage(t *testing.T) {
	if !fetchtest.InPeakChild(t.Name()) {
		t.Skip("run by BenchmarkPageHugeDocument in a fresh process")
	}
	fetchLinkPage(t, 1000000, "")
	fetchtest.PrintPeakRSS(t)
}

// TestPeakRSSPageAtLimit is the child process of BenchmarkPageHugeDocument
// for the largest page the default max_nodes admits.
func TestPeakRSSPageAtLimit(t *testing.T) {
	if !fetchtest.InPeakChild(t.Name()) {
		t.Skip("run by BenchmarkPageHugeDocument in a fresh process")
	}
	fetchLinkPage(t, atLimit, "")
	fetchtest.PrintPeakRSS(t)
}

// BenchmarkPageHugeDocument reports the peak heap growth of fetching an
// 18 MB page of 1,000,000 links under the default limits (refused: over
// max_nodes), and of the largest page the default max_nodes admits (read),
// and the peak RSS of a fresh process doing only one of them (which
// includes the test server's copy of the body and the runtime).
func BenchmarkPageHugeDocument(b *testing.B) {
	for b.Loop() {
		fetchLinkPage(b, 1000000, "peak-heap-MB-1M-links")
		fetchLinkPage(b, atLimit, "peak-heap-MB-at-limit")
	}
	b.ReportMetric(float64(fetchtest.PeakRSS(b, "TestPeakRSSHugePage"))/(1<<20), "peak-RSS-MB-1M-links")
	b.ReportMetric(float64(fetchtest.PeakRSS(b, "TestPeakRSSPageAtLimit"))/(1<<20), "peak-RSS-MB-at-limit")
	b.ReportMetric(float64(len(linkPage(1000000)))/(1<<20), "page-MB-1M-links")
	b.ReportMetric(float64(len(linkPage(atLimit)))/(1<<20), "page-MB-at-limit")
}
