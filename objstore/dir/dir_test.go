package dir_test

import (
	"testing"

	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/objstore/objstoretest"
)

func TestConformance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		s, err := dir.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
