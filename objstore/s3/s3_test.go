package s3_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/objstoretest"
	"github.com/tidemark/tidemark/objstore/s3"
)

// MustTestStore returns a store on the S3 server named by
// TIDEMARK_TEST_S3_*, under a fresh prefix, or skips.
func mustTestStore(t *testing.T) *s3.Store {
	t.Helper()
	ep := os.Getenv("TIDEMARK_TEST_S3_ENDPOINT")
	if ep == "" {
		t.Skip("TIDEMARK_TEST_S3_ENDPOINT not set (.ci/s3.sh starts a server)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	s, err := s3.New(s3.Config{
		Bucket: os.Getenv("TIDEMARK_TEST_S3_BUCKET"), Prefix: "t-" + hex.EncodeToString(b[:]),
		Endpoint: ep, Region: "us-east-1", PathStyle: true,
		AccessKey: os.Getenv("TIDEMARK_TEST_S3_ACCESS_KEY"), SecretKey: os.Getenv("TIDEMARK_TEST_S3_SECRET_KEY"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store { return mustTestStore(t) })
}
