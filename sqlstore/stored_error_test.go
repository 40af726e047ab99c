package sqlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A run's error, a source's last error and its terminal reason stored by
// a release that did not clean them (or by any path that forgot) may hold
// the credential of the source's location: every read shows them cleaned
// of it, as the location is shown (redact.Location), whatever is stored.
func TestStoredErrorsAreReadWithoutTheLocationsCredential(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(7)
		db := sqltest.MustOpen(t, b, env)
		st := db.Ingest()
		src, err := st.AddSource(ctx, ingest.NewSource{Name: "f", Kind: "feed", Location: "http://127.0.0.1:2/f.xml",
			Interval: time.Hour, RetryBudget: 1})
		if err != nil {
			t.Fatal(err)
		}
		// As an older release stored it, before such locations were refused.
		const secret = "SEKRET-loc-91"
		if _, err := db.SQL().ExecContext(ctx, `UPDATE sources SET location = $1 WHERE id = $2`,
			"http://127.0.0.1:2/f.xml?token="+secret, src.ID); err != nil {
			t.Fatal(err)
		}
		c, err := st.Claim(ctx, src.ID, "w1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		raw := `Get "http://127.0.0.1:2/f.xml?token=` + secret + `": dial tcp 127.0.0.1:2: connect: connection refused`
		if _, err := st.Fail(ctx, c, ingest.Failure{Outcome: tidemark.OutcomeUnreachable, Reason: raw,
			NextDueAt: env.Clock.Now(), Terminal: true, Why: "budget of 1 attempts spent"}); err != nil {
			t.Fatal(err)
		}
		if n, err := db.CountForTest(ctx, "ingest_runs", "error", raw); err != nil || n != 1 {
			t.Fatalf("the stored run error is not the raw one (%d, %v): the test does not test", n, err)
		}
		check := func(what, got string) {
			t.Helper()
			if strings.Contains(got, secret) || !strings.Contains(got, "connection refused") || !strings.Contains(got, "f.xml?token=") {
				t.Errorf("%s = %q, want it without the location's credential", what, got)
			}
		}
		s, err := st.Source(ctx, src.ID)
		if err != nil {
			t.Fatal(err)
		}
		check("source's last_error", s.LastError)
		check("source's terminal_reason", s.TerminalReason)
		all, err := st.Sources(ctx)
		if err != nil || len(all) != 1 {
			t.Fatalf("sources: %v %v", all, err)
		}
		check("listed source's last_error", all[0].LastError)
		runs, err := st.Runs(ctx, ingest.RunFilter{})
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs: %v %v", runs, err)
		}
		check("run's error", runs[0].Error)
		run, err := st.Run(ctx, runs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		check("run's error read alone", run.Error)
	})
}
