package pipeline_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/pipeline"
)

// libraryProgram is the README's library program ("Using tidemark as a
// library"), compiled here; TestTheREADMEsLibraryProgramIsCompiled keeps
// the two the same.
func libraryProgram(ctx context.Context) error {
	cfg, err := pipeline.Load(os.Getenv) // or pipeline.Defaults(), then set fields
	if err != nil {
		return err
	}
	cfg.Home = "/var/lib/tidemark"
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		return err // p is nil (its Close is harmless)
	}
	defer p.Close()
	// NewSource gives the configured defaults (interval, retry budget, allow_private from
	// TIDEMARK_ALLOW_PRIVATE); AddSource stores a NewSource exactly as given, zero fields refused
	src, err := p.AddSource(ctx, p.NewSource("notes", "/srv/notes"))
	if err != nil {
		return err
	}
	res, err := p.RunOnce(ctx, pipeline.OnceOptions{OnReport: func(r ingest.Report, err error) { /* … */ }})
	// res.Reports, res.Publish.Published, res.Deliveries; err is a *pipeline.IncompleteError (exit 5) when work was left undone
	fmt.Printf("%s: %d runs, %v\n", src.Name, len(res.Reports), err)
	return p.Run(ctx, pipeline.RunOptions{Workers: 8}) // the daemon, until ctx is cancelled
}

var _ = libraryProgram

// A program that embeds tidemark: open it over a directory, add a source,
// run once, and read the page it published.
func Example() {
	ctx := context.Background()
	home, _ := os.MkdirTemp("", "tidemark-example-")
	defer os.RemoveAll(home)
	notes := filepath.Join(home, "notes")
	_ = os.MkdirAll(notes, 0o755)
	_ = os.WriteFile(filepath.Join(notes, "release.md"), []byte("# Release 1.0\n\nThe first release.\n"), 0o644)

	cfg := pipeline.Defaults()
	cfg.Home = home
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	src, err := p.AddSource(ctx, p.NewSource("notes", notes)) // the configured defaults
	if err != nil {
		log.Fatal(err)
	}
	res, err := p.RunOnce(ctx, pipeline.OnceOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s source %q: %d new events, %d pages published\n", src.Kind, src.Name, res.Reports[0].EventsNew, res.Publish.Published)

	objs, err := p.Objects()
	if err != nil {
		log.Fatal(err)
	}
	var page []byte
	err = objs.List(ctx, "changes/", func(o objstore.Info) error {
		got, err := objs.Get(ctx, o.Key)
		page = got.Body
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the page names the change:", strings.Contains(string(page), "Release 1.0"))
	// Output:
	// dir source "notes": 1 new events, 1 pages published
	// the page names the change: true
}
