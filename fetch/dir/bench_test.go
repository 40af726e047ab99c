package dir_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/dir"
)

// BenchmarkDirUnchanged measures a run over a directory in which nothing
// changed (1,000 files of 4 KiB and of 64 KiB in 10 directories) from a
// manifest that keeps the files' status, which reads no file, against the
// same run from the manifest less its status, which hashes every file as
// every run did before, and reports the ratio of their speeds.
func BenchmarkDirUnchanged(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			root := mustRealDir(b)
			const line = "a line of text in a file that nobody changed\n"
			body := strings.Repeat(line, size/len(line)+1)[:size]
			for i := range 1000 {
				mustWrite(b, root, fmt.Sprintf("d%d/f%d.txt", i%10, i), body)
			}
			ctx := context.Background()
			src := tidemark.Source{Kind: "dir", Location: root}
			f := &dir.Fetcher{}
			f.SetNow(func() time.Time { return time.Now().Add(time.Hour) }) // the files count as old
			first, err := f.Fetch(ctx, src, "")
			if err != nil || len(first.Items) != 1000 {
				b.Fatalf("first run: %d items, %v", len(first.Items), err)
			}
			plain, err := f.ResolveCursor(ctx, src, first.Cursor) // less the status
			if err != nil {
				b.Fatal(err)
			}
			run := func(cursor string) time.Duration {
				t0 := time.Now()
				res, err := f.Fetch(ctx, src, cursor)
				if err != nil || len(res.Items) != 0 {
					b.Fatalf("run: %d items, %v", len(res.Items), err)
				}
				return time.Since(t0)
			}
			var stat, rehash time.Duration
			for b.Loop() {
				stat += run(first.Cursor)
				rehash += run(plain)
			}
			n := float64(b.N)
			b.ReportMetric(n/stat.Seconds(), "runs/s")
			b.ReportMetric(n/rehash.Seconds(), "rehash-runs/s")
			b.ReportMetric(rehash.Seconds()/stat.Seconds(), "x/rehash")
		})
	}
}
