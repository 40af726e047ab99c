package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
)

// A store that refuses our credentials (a wrong secret) is configuration
// to fix: publish, run --once and the daemon stop at once with exit 2 and
// name the settings to check; nothing calls it an internal error and the
// daemon does not wait it out.
func TestStoreRefusingCredentialsIsConfiguration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		if r.Method != http.MethodHead {
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided.</Message></Error>`)
		}
	}))
	defer srv.Close()
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	t.Setenv("TIDEMARK_STORE", "s3://wiki/site")
	t.Setenv("TIDEMARK_S3_ENDPOINT", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	home := t.TempDir()
	for _, args := range [][]string{{"publish"}, {"run", "--once"}, {"run"}} {
		type result struct {
			out  string
			code int
		}
		done := make(chan result, 1)
		go func() {
			out, code := runCLI(t, append([]string{"--home", home}, args...)...)
			done <- result{out, code}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%v: still running after 30s: retrying a refusal no retry can fix", args)
		}
		if r.code != tidemark.ExitInvalid {
			t.Errorf("%v: exit %d, want %d\n%s", args, r.code, tidemark.ExitInvalid, r.out)
		}
		for _, want := range []string{"refused our credentials", "AWS_SECRET_ACCESS_KEY"} {
			if !strings.Contains(r.out, want) {
				t.Errorf("%v: output does not say %q:\n%s", args, want, r.out)
			}
		}
		if strings.Contains(r.out, "internal error") || strings.Contains(r.out, "failed; retrying") {
			t.Errorf("%v: called an internal error, or retried:\n%s", args, r.out)
		}
	}
}
