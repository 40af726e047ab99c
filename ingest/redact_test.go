package ingest_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A run's error, as stored, reported and logged, never carries the
// credentials of the source's location, even when the upstream echoes
// them (a source stored before locations with credentials were refused).
func TestRunErrorHidesLocationCredentials(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(11)
		db := sqltest.MustOpen(t, b, env)
		var logs bytes.Buffer
		for _, loc := range []string{"https://bob:hunter2hunter@example.org/repo.git", "https://ghp_T0KENVALUE@example.org/x.git",
			"https://example.org/feed.xml?category=go&token=qt0kenq7"} {
			echo := func(_ context.Context, src tidemark.Source, _ string) (tidemark.FetchResult, error) {
				return tidemark.FetchResult{}, tidemark.Unreachable("fatal: unable to access '"+src.Location+"/': auth failed for "+
					strings.TrimPrefix(strings.SplitN(src.Location, "@", 2)[0], "https://"), 0, errors.New("git"))
			}
			svc := &ingest.Service{Store: db.Ingest(), Fetchers: ingest.Fetchers{"test": fetchFunc(echo)}, Clock: env.Clock, Rand: env.Rand,
				Holder: "w1", LeaseTTL: time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			name := "s" + loc[8:11]
			if _, err := db.Ingest().AddSource(ctx, ingest.NewSource{Name: name, Kind: "test", Location: loc, Interval: time.Minute, RetryBudget: 3}); err != nil {
				t.Fatal(err)
			}
			rep, err := svc.RunSource(ctx, name)
			if !ingest.IsRunFailed(err) {
				t.Fatalf("run: %v", err)
			}
			src, _ := db.Ingest().Source(ctx, name)
			runs, _ := db.Ingest().Runs(ctx, ingest.RunFilter{SourceID: src.ID, Limit: 1})
			if len(runs) != 1 || runs[0].Error == "" {
				t.Fatalf("runs: %+v", runs)
			}
			for what, text := range map[string]string{"report": rep.Error, "error": err.Error(), "last_error": src.LastError,
				"run error": runs[0].Error, "logs": logs.String()} {
				for _, secret := range []string{"hunter2hunter", "ghp_T0KENVALUE", "qt0kenq7"} {
					if strings.Contains(text, secret) {
						t.Errorf("%s shows %q: %s", what, secret, text)
					}
				}
			}
			if !strings.Contains(runs[0].Error, "example.org") {
				t.Errorf("the error lost more than the credential: %s", runs[0].Error)
			}
		}
	})
}
