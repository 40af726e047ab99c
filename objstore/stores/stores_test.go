package stores_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore/stores"
)

// A store location never carries its credentials (they are the S3
// settings, kept secret), and the refusal of one does not show them.
func TestOpenRefusesCredentialsInTheLocation(t *testing.T) {
	for _, loc := range []string{
		"s3://AKIDX:SEKRET-s3url-140@tidemark-test/p",
		"s3://SEKRET-s3url-141@tidemark-test",
		"https://u:SEKRET-s3url-142@store.example/p",
	} {
		_, err := stores.Open("--store", loc, stores.S3{})
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "--store") {
			t.Errorf("open %s: %v; want a refusal naming --store", loc, err)
		}
		if err != nil && strings.Contains(err.Error(), "SEKRET") {
			t.Errorf("open %s: the refusal shows the credential: %v", loc, err)
		}
	}
}
