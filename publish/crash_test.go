package publish_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/objstore/objstoretest"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

const (
	helperDB      = "TIDEMARK_PUBLISH_HELPER_DB"
	helperStore   = "TIDEMARK_PUBLISH_HELPER_STORE"
	helperSummary = "TIDEMARK_PUBLISH_HELPER_SUMMARY"
)

// openHelperStore opens "dir:PATH" or "s3:PREFIX" (on the test S3 server).
func openHelperStore(t testing.TB, spec string) objstore.Store {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "dir":
		s, err := dir.Open(arg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	case "s3":
		return objstoretest.S3(t, arg)
	}
	t.Fatalf("store spec %q", spec)
	return nil
}

// TestHelperPublishProcess is the worker the crash test kills: it runs
// only when re-executed with the helper variables set.
func TestHelperPublishProcess(t *testing.T) {
	url := os.Getenv(helperDB)
	if url == "" {
		t.Skip("helper process only")
	}
	if err := failpoint.ArmFromEnv(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, url, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc := &publish.Service{Store: db.Publish(), Objects: openHelperStore(t, os.Getenv(helperStore))}
	if _, err := svc.Publish(ctx, os.Getenv(helperSummary)); err != nil {
		t.Fatal(err)
	}
}

// A worker killed between the page write and the mark leaves a page body
// nobody marked; a newer summary is accepted meanwhile. One sweep
// converges the page to the newer summary.
func TestKilledBetweenObjectWriteAndMarkConvergesAfterOneSweep(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		specs := map[string]string{"dir": "dir:" + t.TempDir()}
		if os.Getenv("TIDEMARK_TEST_S3_ENDPOINT") != "" {
			specs["s3"] = "s3:" + objstoretest.S3(t, "").Prefix()
		}
		for name, spec := range specs {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				url := b.NewURL(t)
				env := sqltest.NewEnv(7)
				f := mustFixtureDB(t, sqltest.MustOpenURL(t, url, env), env, openHelperStore(t, spec))
				ev := f.mustEvent(t, "c1", "change", "evidence")
				s1 := f.mustAccept(t, ev, "Older summary.", "m1")

				cmd := exec.Command(os.Args[0], "-test.run=^TestHelperPublishProcess$", "-test.count=1")
				cmd.Env = append(os.Environ(), helperDB+"="+url, helperStore+"="+spec, helperSummary+"="+s1.ID,
					failpoint.EnvVar+"=publish.after-object-write=crash")
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("worker was not killed: %v\n%s", err, out)
				}
				if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("worker ended with %v, want SIGKILL\n%s", err, out)
				}
				// The body is written, the mark is not.
				var pageID string
				_ = f.st.PageStates(ctx, func(ps publish.PageState) error { pageID = ps.PageID; return nil })
				f.mustPageShows(t, pageID, "Older summary.", "")
				mustPublished(t, f.mustSummary(t, s1.ID), false)

				s2 := f.mustAccept(t, ev, "Newer summary.", "m2")
				rep, err := f.svc.Sweep(ctx)
				if err != nil || rep.Republished != 1 || rep.Failed != 0 {
					t.Fatalf("sweep: %+v %v", rep, err)
				}
				f.mustPageShows(t, pageID, "Newer summary.", "Older summary.")
				mustPublished(t, f.mustSummary(t, s2.ID), true)
				mustPublished(t, f.mustSummary(t, s1.ID), false)
				if rep, err := f.svc.Sweep(ctx); err != nil || rep.Republished != 0 {
					t.Fatalf("second sweep: %+v %v", rep, err)
				}
			})
		}
	})
}
