package objstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
)

// An older generation that finishes last cannot replace a newer body.
func ExamplePutGeneration() {
	ctx := context.Background()
	s := mem.New()
	if _, err := objstore.PutGeneration(ctx, s, "changes/p.html", []byte("newer"), 2, "text/html"); err != nil {
		panic(err)
	}
	_, err := objstore.PutGeneration(ctx, s, "changes/p.html", []byte("older"), 1, "text/html")
	fmt.Println(errors.Is(err, objstore.ErrNewerGeneration))
	o, _ := s.Get(ctx, "changes/p.html")
	fmt.Printf("%s (generation %d)\n", o.Body, o.Generation)
	// Output:
	// true
	// newer (generation 2)
}
