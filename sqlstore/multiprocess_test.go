package sqlstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/ids"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// When the test binary is started with claimerEnv set, it is one claiming
// process of TestClaimAcrossProcesses, not a test run.
const claimerEnv = "TIDEMARK_TEST_CLAIMER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(claimerEnv); spec != "" {
		os.Exit(claimer(spec))
	}
	os.Exit(m.Run())
}

// claimer claims every source it can via ClaimDue until none is left, and
// prints one line per claim: "claimed SOURCE RUN".
func claimer(spec string) int {
	url, holder, _ := strings.Cut(spec, "|")
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, url, sqlstore.Options{Clock: clock.System{}, IDs: ids.NewULIDs(clock.System{}, rand.Reader)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer db.Close()
	// Everyone also races for one named source.
	var inFlight []string // every run claimed here is still held
	if c, err := db.Ingest().Claim(ctx, "contended", holder, time.Hour); err == nil {
		fmt.Printf("claimed %s %s\n", c.SourceID, c.RunID)
		inFlight = append(inFlight, c.RunID)
	} else if !errors.Is(err, tidemark.ErrClaimHeld) {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	for {
		cs, err := db.Ingest().ClaimDue(ctx, holder, time.Hour, 2, inFlight...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		if len(cs) == 0 {
			return 0
		}
		for _, c := range cs {
			fmt.Printf("claimed %s %s\n", c.SourceID, c.RunID)
			inFlight = append(inFlight, c.RunID)
		}
	}
}

// TestClaimAcrossProcesses starts several OS processes claiming from one
// database: every source is claimed exactly once, the contended one by
// exactly one process. It runs on every backend; PostgreSQL is the one
// where separate processes are the deployment model.
func TestClaimAcrossProcesses(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		url := b.NewURL(t)
		db := sqltest.MustOpenURL(t, url, sqltest.Env{})
		const sources, procs = 60, 6
		for i := 0; i < sources; i++ {
			name := fmt.Sprintf("s%02d", i)
			if i == 0 {
				name = "contended"
			}
			if _, err := db.Ingest().AddSource(context.Background(), ingest.NewSource{Name: name, Kind: "test", Location: name, Interval: time.Minute, RetryBudget: 3}); err != nil {
				t.Fatal(err)
			}
		}
		cmds := make([]*exec.Cmd, procs)
		outs := make([]*strings.Builder, procs)
		for i := range cmds {
			cmds[i] = exec.Command(os.Args[0], "-test.run=^$")
			cmds[i].Env = append(os.Environ(), fmt.Sprintf("%s=%s|proc%d", claimerEnv, url, i))
			outs[i] = &strings.Builder{}
			cmds[i].Stdout = outs[i]
			cmds[i].Stderr = outs[i]
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		claimed := map[string]int{}
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Fatalf("claimer %d: %v\n%s", i, err, outs[i])
			}
			for _, line := range strings.Split(outs[i].String(), "\n") {
				if f := strings.Fields(line); len(f) == 3 && f[0] == "claimed" {
					claimed[f[1]]++
				}
			}
		}
		if len(claimed) != sources {
			t.Fatalf("%d of %d sources claimed", len(claimed), sources)
		}
		for id, n := range claimed {
			if n != 1 {
				t.Errorf("source %s claimed %d times", id, n)
			}
		}
		var active int
		if err := db.SQL().QueryRow(`SELECT COUNT(*) FROM ingest_runs WHERE status = 'active'`).Scan(&active); err != nil {
			t.Fatal(err)
		}
		if active != sources {
			t.Fatalf("%d active runs for %d sources", active, sources)
		}
	})
}
