package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// mustIngested adds a repository of two commits as a source and ingests
// it (nothing summarized yet): its two events, and the summarizer's
// identity a pass summarizes them under.
func mustIngested(t *testing.T, p *Pipeline) (evs []string, model, prompt string) {
	t.Helper()
	ctx := context.Background()
	src, err := p.AddSource(ctx, ingestSource("repo", gitRepo(t)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunSource(ctx, src.Name, 0, nil); err != nil {
		t.Fatal(err)
	}
	list, err := p.DB().Ingest().Events(ctx, ingest.EventFilter{SourceID: src.ID, Limit: 10})
	if err != nil || len(list) != 2 {
		t.Fatalf("events %+v, %v", list, err)
	}
	for _, ev := range list {
		evs = append(evs, ev.ID)
	}
	sum, err := p.Summarizer("")
	if err != nil {
		t.Fatal(err)
	}
	model, prompt = sum.Identity()
	return evs, model, prompt
}

// A worker of this host killed while it asked the summarizer leaves its
// claims behind: the next pass takes them over at once and summarizes
// their events. A live worker's claim is passed over, and the pass then
// did not do everything: it is incomplete (exit 5) and says whose claim
// it met and until when.
func TestRunOnceTakesOverADeadWorkersSummaryClaimsAndNamesALiveOnes(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	evs, model, prompt := mustIngested(t, p)
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name:", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("cannot run a process to outlive:", err)
	}
	claim := func(ev, holder string) time.Time {
		t.Helper()
		got, err := p.DB().Publish().ClaimSummary(ctx, publish.SummaryClaim{EventID: ev, Model: model, PromptVersion: prompt, Holder: holder}, publish.SummaryClaimTTL)
		if err != nil || !got.OK {
			t.Fatalf("claim by %s: %+v, %v", holder, got, err)
		}
		return got.Until
	}
	claim(evs[0], fmt.Sprintf("%s:%d", host, dead.Process.Pid))
	until := claim(evs[1], "worker-b")

	res, err := p.RunOnce(ctx, OnceOptions{})
	if res.Publish == nil || res.Publish.Accepted != 1 || res.Publish.Published != 1 {
		t.Fatalf("publish %+v: want the dead worker's event summarized and published", res.Publish)
	}
	var inc *IncompleteError
	if !errors.As(err, &inc) || tidemark.ExitCode(err) != tidemark.ExitUnavailable {
		t.Fatalf("err %v (exit %d), want an incomplete pass", err, tidemark.ExitCode(err))
	}
	at := fieldtext.Day(until)
	if !strings.Contains(inc.What, "1 event not summarized") || !strings.Contains(inc.What, "worker-b") || !strings.Contains(inc.What, at) {
		t.Fatalf("incomplete: %q; want it to name worker-b's claim until %s", inc.What, at)
	}
	if e := res.Publish.Elsewhere; len(e) != 1 || e[0].EventID != evs[1] || e[0].Holder != "worker-b" || !e[0].Until.Equal(until) {
		t.Fatalf("claimed elsewhere: %+v", e)
	}
	var text strings.Builder
	if err := res.Publish.WriteText(&text); err != nil || !strings.Contains(text.String(), "worker-b until "+at) {
		t.Fatalf("text %q, %v: want worker-b's claim named", text.String(), err)
	}
	// Once worker-b gives its claim up, the next pass does the rest.
	if err := p.DB().Publish().ReleaseSummary(ctx, publish.SummaryClaim{EventID: evs[1], Model: model, PromptVersion: prompt, Holder: "worker-b"}); err != nil {
		t.Fatal(err)
	}
	res, err = p.RunOnce(ctx, OnceOptions{})
	if err != nil || res.Publish == nil || res.Publish.Published != 1 {
		t.Fatalf("after the release: %+v, %v", res.Publish, err)
	}
}

// An event held (the summarizer kept refusing it) by an earlier round is
// left out of the pass's rounds: the pass is incomplete and says which
// event is held until when, rather than exit 0 with it unsummarized.
func TestRunOnceIsIncompleteWhileAnEventIsHeld(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	evs, model, prompt := mustIngested(t, p)
	ev, err := p.DB().Ingest().Event(ctx, evs[0])
	if err != nil {
		t.Fatal(err)
	}
	f := publish.SummaryFailure{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Model: model, PromptVersion: prompt, Err: "HTTP 500: model crashed"}
	for range publish.HoldAfter {
		if _, err := p.DB().Publish().SummaryFailed(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	until, err := p.DB().Publish().HoldSummary(ctx, f, publish.HoldMin)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.RunOnce(ctx, OnceOptions{})
	if res.Publish == nil || res.Publish.Published != 1 {
		t.Fatalf("publish %+v: want the other event published", res.Publish)
	}
	var inc *IncompleteError
	at := fieldtext.Day(until)
	if !errors.As(err, &inc) || !strings.Contains(inc.What, "1 event held") || !strings.Contains(inc.What, at) {
		t.Fatalf("err %v, want an incomplete pass naming the event held until %s", err, at)
	}
	if h := res.Publish.Holding; len(h) != 1 || h[0].EventID != ev.ID || !h[0].Until.Equal(until.Truncate(time.Millisecond)) || h[0].Failures != publish.HoldAfter {
		t.Fatalf("holding %+v", h)
	}
}

// A lane whose lease a process of this host left behind when it was
// killed is delivered by the next pass, not passed over as another
// writer's (which would make run --once skip it without a word); a live
// writer's lane is passed over, and the report says whose lease it is.
func TestDeliverOnceTakesOverALaneOfADeadWriter(t *testing.T) {
	ctx := context.Background()
	p := openBackend(t, sqltest.Backends()[0])
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name:", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("cannot run a process to outlive:", err)
	}
	for lane, holder := range map[string]string{"dead": fmt.Sprintf("%s:%d", host, dead.Process.Pid), "live": "worker-b"} {
		mustAddLane(t, p, lane, "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/h", "secret": "s"}})
		if _, err := p.DB().Outbox().Draft(ctx, outbox.Draft{Lane: lane, Target: "room", Body: "hello"}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.DB().Outbox().Acquire(ctx, lane, holder, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	reports, _ := p.DeliverOnce(ctx, "", time.Minute)
	for _, r := range reports {
		switch r.Lane {
		case "dead":
			if r.PassedOver != "" || len(r.Steps) == 0 {
				t.Errorf("the dead writer's lane: %+v; want it taken over and stepped", r)
			}
		case "live":
			if !strings.Contains(r.PassedOver, "worker-b") {
				t.Errorf("the live writer's lane: %+v; want it passed over naming worker-b", r)
			}
		}
	}
}

// A detached field migration whose claim a killed worker of this host left
// behind is finished by the next pass, not passed over as another
// worker's.
func TestRunOnceFinishesAMigrationADeadWorkerHeld(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	if _, err := p.CreateCollection(ctx, "ann", "things", []string{"n:text"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ImportDocuments(ctx, "ann", "things", "seed", strings.NewReader("{\"n\":\"1\"}\n{\"n\":\"2\"}\n")); err != nil {
		t.Fatal(err)
	}
	run, err := p.DB().Content().StartRun(ctx, "things", "n", content.Number, 1)
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name:", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("cannot run a process to outlive:", err)
	}
	if _, err := p.DB().Content().ClaimRun(ctx, run.ID, fmt.Sprintf("%s:%d", host, dead.Process.Pid), time.Hour); err != nil {
		t.Fatal(err)
	}
	res, err := p.RunOnce(ctx, OnceOptions{})
	if err != nil || res.Migrations != 1 {
		t.Fatalf("run --once: %d migrations finished, %v; want the dead worker's run finished", res.Migrations, err)
	}
	if r, err := p.DB().Content().Run(ctx, run.ID); err != nil || r.Status != content.RunDone {
		t.Fatalf("run %+v, %v; want it done", r, err)
	}
}
