package s3_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/s3"
)

// mustDenyingServer is a fake S3 server that refuses every request with
// status and the S3 error code (as a wrong secret, an unknown key or a
// missing permission are refused), and a store over it.
func mustDenyingServer(tb testing.TB, status int, code string) *s3.Store {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		if r.Method != http.MethodHead { // a HEAD's answer has no body
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>refused</Message></Error>`, code)
		}
	}))
	tb.Cleanup(srv.Close)
	s, err := s3.New(s3.Config{Bucket: "wiki", Endpoint: srv.URL, PathStyle: true, AccessKey: "AKID", SecretKey: "wrong"})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// A server that refuses our credentials or their rights is a configuration
// to fix, on every operation: not an internal error, not an outage to wait
// out. The error says so and names the settings to check.
func TestDeniedIsConfiguration(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		status int
		code   string
	}{
		{http.StatusForbidden, "SignatureDoesNotMatch"},
		{http.StatusForbidden, "InvalidAccessKeyId"},
		{http.StatusForbidden, "AccessDenied"},
		{http.StatusUnauthorized, "Unauthorized"},
	} {
		s := mustDenyingServer(t, tc.status, tc.code)
		ops := map[string]func() error{
			"get":  func() error { _, err := s.Get(ctx, "_tidemark/store.json"); return err },
			"head": func() error { _, err := s.Head(ctx, "changes/a.html"); return err },
			"put": func() error {
				_, err := s.Put(ctx, "changes/a.html", []byte("x"), objstore.PutOptions{Cond: objstore.Cond{IfNoneMatch: true}, Generation: 1})
				return err
			},
			"delete": func() error { return s.Delete(ctx, "changes/a.html") },
			"list":   func() error { return s.List(ctx, "changes/", func(objstore.Info) error { return nil }) },
		}
		for op, call := range ops {
			err := call()
			if !errors.Is(err, objstore.ErrDenied) {
				t.Errorf("%d %s: %s: %v, want objstore.ErrDenied", tc.status, tc.code, op, err)
				continue
			}
			if got := tidemark.ExitCode(err); got != tidemark.ExitInvalid {
				t.Errorf("%d %s: %s: exit code %d, want %d (a configuration to fix)", tc.status, tc.code, op, got, tidemark.ExitInvalid)
			}
			if errors.Is(err, tidemark.ErrUnavailable) {
				t.Errorf("%d %s: %s: %v is an outage, want a refusal", tc.status, tc.code, op, err)
			}
			msg := err.Error() + tidemark.Hint(err)
			for _, want := range []string{"refused our credentials", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%d %s: %s: %q does not say %q", tc.status, tc.code, op, msg, want)
				}
			}
		}
	}
}

// A bucket that does not exist (deleted under a running worker, or never
// made) is not a missing object: every operation that can tell says so,
// naming the bucket and the server's code, as an outage to wait out (the
// bucket may be made again), so a store's marker read from it is not taken
// for a store with no marker.
func TestAMissingBucketIsNotAMissingObject(t *testing.T) {
	ctx := context.Background()
	s := mustDenyingServer(t, http.StatusNotFound, "NoSuchBucket")
	ops := map[string]func() error{
		"get": func() error { _, err := s.Get(ctx, "_tidemark/store.json"); return err },
		"put": func() error {
			_, err := s.Put(ctx, "changes/a.html", []byte("x"), objstore.PutOptions{Cond: objstore.Cond{IfNoneMatch: true}, Generation: 1})
			return err
		},
		"list":   func() error { return s.List(ctx, "changes/", func(objstore.Info) error { return nil }) },
		"delete": func() error { return s.Delete(ctx, "changes/a.html") },
	}
	for op, call := range ops {
		err := call()
		if !errors.Is(err, objstore.ErrNoBucket) || errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrPrecondition) {
			t.Errorf("%s: %v, want objstore.ErrNoBucket and not a missing object", op, err)
			continue
		}
		if got := tidemark.ExitCode(err); got != tidemark.ExitUnavailable {
			t.Errorf("%s: exit code %d, want %d", op, got, tidemark.ExitUnavailable)
		}
		for _, want := range []string{"no such bucket", `"wiki"`, "NoSuchBucket"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", op, err, want)
			}
		}
	}
}
