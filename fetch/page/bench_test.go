package page_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/fetch/page"
)

// hugePage is the page of the memory report in issue 9: about 18 MB of
// 1,000,000 links.
func hugePage() []byte {
	var b bytes.Buffer
	b.WriteString("<!doctype html><html><head><title>Links</title></head><body>\n")
	for i := range 1000000 {
		fmt.Fprintf(&b, "<a href=%d>%d</a>\n", i, i%10)
	}
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

// fetchHugePage fetches hugePage with the default limits and reports the
// peak heap growth while it does.
func fetchHugePage(tb testing.TB) {
	tb.Helper()
	body := hugePage()
	srv, client := fetchtest.MustServe(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(body)
	}))
	mem := fetchtest.PeakHeap(func() {
		// Whatever the outcome, the memory it took is what is measured.
		_, _ = (&page.Fetcher{Client: client}).Fetch(context.Background(), tidemark.Source{Location: srv.URL}, "")
	})
	if b, ok := tb.(*testing.B); ok {
		b.ReportMetric(float64(mem)/(1<<20), "peak-heap-MB")
	}
}

// TestPeakRSSHugePage is the child process of BenchmarkPageHugeDocument.
func TestPeakRSSHugePage(t *testing.T) {
	if !fetchtest.InPeakChild(t.Name()) {
		t.Skip("run by BenchmarkPageHugeDocument in a fresh process")
	}
	fetchHugePage(t)
	fetchtest.PrintPeakRSS(t)
}

// BenchmarkPageHugeDocument reports the peak heap growth of fetching an
// 18 MB page of 1,000,000 links under the default limits, and the peak
// RSS of a fresh process doing only that (which includes the test
// server's copy of the body and the runtime).
func BenchmarkPageHugeDocument(b *testing.B) {
	for b.Loop() {
		fetchHugePage(b)
	}
	b.ReportMetric(float64(fetchtest.PeakRSS(b, "TestPeakRSSHugePage"))/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(len(hugePage()))/(1<<20), "page-MB")
}
