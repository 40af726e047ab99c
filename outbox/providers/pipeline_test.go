package providers_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize"
)

// TestAPublishedChangeReachesARealServerOnceThroughAKill9 is the whole way
// from a change to a person, against the real servers CI starts: changes
// of a source are settled, summarized and published (the publish hook
// drafts each page's intent from its channel's template), a delivering
// process is killed with SIGKILL once the server took its third write and
// before the answer reached it, and recovery in this process lands every
// page's message in the Matrix room (Dendrite) and in the mailbox
// (mailpit) exactly once.
func TestAPublishedChangeReachesARealServerOnceThroughAKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	real := realServers()
	if len(real) == 0 {
		t.Skip("no real server: source .ci/mailpit.sh and .ci/dendrite.sh")
	}
	const n = 4
	for _, name := range slices.Sorted(maps.Keys(real)) {
		k := real[name]
		kind := k.providerKind(name)
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			env := sqltest.NewEnv(7)
			env.Clock.Set(time.Now().Add(time.Minute)) // past the killed writer's lease
			url := sqltest.NewSQLiteURL(t)
			db := sqltest.MustOpenURL(t, url, env)
			ob := db.Outbox()
			settings, received, d := k.settings(t, env)
			shown, secret := providers.Split(kind, settings)
			if _, err := ob.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "lane", Provider: kind, Settings: shown}, Secrets: secret}); err != nil {
				t.Fatal(err)
			}
			src, err := db.Ingest().AddSource(ctx, ingest.NewSource{Name: "releases", Kind: "git", Location: "/src/releases", Interval: time.Hour, RetryBudget: 3})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ob.AddChannel(ctx, src.ID, "lane", k.targetFor(settings), ""); err != nil {
				t.Fatal(err)
			}
			svc := &publish.Service{Store: db.Publish().WithHooks(ob.PublishHook()), Objects: mem.New()}
			var titles []string
			for i := range n {
				title := fmt.Sprintf("Release 1.%d", i)
				mustPublishChange(t, db, env, src.ID, svc, title, fmt.Sprintf("Release 1.%d fixes %d bugs & adds <one> feature.", i, i+1))
				titles = append(titles, title)
			}
			intents, err := ob.ListIntents(ctx, outbox.IntentFilter{Lane: "lane"})
			if err != nil || len(intents) != n {
				t.Fatalf("%d intents drafted (%v), want %d", len(intents), err, n)
			}

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=1", "TM_DB_URL="+url, "TM_LANE=lane")
			started := make(chan struct{})
			d.KillAt(3, func() { <-started; _ = cmd.Process.Kill() })
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			close(started)
			var ee *exec.ExitError
			if err := cmd.Wait(); !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
				t.Fatalf("the deliverer was not killed mid-send: %v\n%s", err, out.Bytes())
			}

			lane, err := ob.Lane(ctx, "lane")
			if err != nil {
				t.Fatal(err)
			}
			prov, err := providers.NewWithSecrets(lane, secret, env.Clock)
			if err != nil {
				t.Fatal(err)
			}
			rd := &outbox.Deliverer{Store: ob, Provider: prov, Lane: "lane", Holder: "recovery", Clock: env.Clock, LeaseTTL: time.Minute}
			left := deliverAll(t, env, ob, rd, n)
			got := received()
			assertOnce(t, intents, left, got)
			for _, title := range titles {
				found := 0
				for _, body := range got {
					if strings.HasPrefix(body, title+"\n\n") && strings.Contains(body, "& adds <one> feature.") {
						found++
					}
				}
				if found != 1 {
					t.Errorf("the change %q arrived %d times as its page's message", title, found)
				}
			}
		})
	}
}

// mustPublishChange settles one change of the source through a real claim,
// accepts its summary and publishes its page.
func mustPublishChange(t *testing.T, db *sqlstore.DB, env sqltest.Env, sourceID string, svc *publish.Service, title, summary string) {
	t.Helper()
	ctx := context.Background()
	ing := db.Ingest()
	c, err := ing.Claim(ctx, sourceID, "test-holder", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(time.Second)
	rep, err := ing.Settle(ctx, c, ingest.Settlement{
		Items:     []tidemark.Item{{Key: title, Title: title, OccurredAt: env.Clock.Now(), Evidence: []byte("evidence of " + title)}},
		Cursor:    title,
		NextDueAt: env.Clock.Now(),
	})
	if err != nil || len(rep.EventIDs) != 1 {
		t.Fatalf("settle %s: %v %+v", title, err, rep)
	}
	ev, err := ing.Event(ctx, rep.EventIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := db.Publish().Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash,
		Draft: summarize.Draft{Text: summary, Model: "m", PromptVersion: "p1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Publish(ctx, s.ID); err != nil {
		t.Fatalf("publish %s: %v", title, err)
	}
}
