package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// Publication reads an editor's overrides of a page from the built-in
// pages collection; a page document's ID is its event's ID.
func ExampleContentStore_PageOverrides() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "tidemark-example-")
	defer os.RemoveAll(dir)
	env := sqltest.NewEnv(1)
	db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(dir, "tidemark.db"), sqlstore.Options{Clock: env.Clock, IDs: env.IDs})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	eventID := db.IDs.New()

	_, ok, _ := db.Content().PageOverrides(ctx, eventID)
	fmt.Println("overridden before an edit:", ok)

	title, _ := json.Marshal("A clearer title")
	notes, _ := json.Marshal(content.Wrap("Confirmed upstream.\n\nSee the release notes."))
	if _, err := db.Content().Put(ctx, content.PagesCollection, content.Put{ID: eventID, Set: content.Fields{"title": title, "notes": notes}}); err != nil {
		panic(err)
	}
	o, ok, _ := db.Content().PageOverrides(ctx, eventID)
	fmt.Println("overridden after an edit:", ok)
	fmt.Printf("title %q, %d note blocks, version %d\n", o.Title, len(o.Notes), o.Version)
	// Output:
	// overridden before an edit: false
	// overridden after an edit: true
	// title "A clearer title", 2 note blocks, version 1
}
