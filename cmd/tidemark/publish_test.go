package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/internal/gittest"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/web"
)

func mustGitRepo(t *testing.T) string {
	return gittest.Repo(t, "parser: read <feeds>\n\nThe parser reads RSS and Atom.", "cursor: never move past unread data")
}

func runCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String() + errb.String(), code
}

// The README's first command ends with a browsable wiki of real
// summaries; a sweep then finds nothing to do; serve serves it.
func TestRunOnceBuildsWiki(t *testing.T) {
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	repo := mustGitRepo(t)
	home := t.TempDir()
	out, code := runCLI(t, "--home", home, "run", "--once", "--track", repo)
	if code != 0 {
		t.Fatalf("run --once: exit %d\n%s", code, out)
	}
	index := filepath.Join(home, "wiki", "index.html")
	if !strings.Contains(out, "2 published now") || !strings.Contains(out, index) {
		t.Fatalf("run --once output lacks the pages and the index:\n%s", out)
	}
	b, err := os.ReadFile(index)
	if err != nil || !strings.Contains(string(b), "parser: read &lt;feeds&gt;") {
		t.Fatalf("index: %v\n%s", err, b)
	}

	out, code = runCLI(t, "--home", home, "publish", "sweep", "--json")
	if code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, out)
	}
	var rep struct {
		Pages, Republished int
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Pages != 2 || rep.Republished != 0 {
		t.Fatalf("sweep report %+v (%v):\n%s", rep, err, out)
	}

	out, code = runCLI(t, "--home", home, "publish", "summaries", "--json")
	var sums []struct {
		ID, Text, Model string
		Current         bool
	}
	if code != 0 || json.Unmarshal([]byte(out), &sums) != nil || len(sums) != 2 || sums[0].Model != "extractive" {
		t.Fatalf("summaries: exit %d\n%s", code, out)
	}
	if !strings.Contains(sums[1].Text+sums[0].Text, "The parser reads RSS and Atom.") {
		t.Fatalf("summaries lack the commit body: %+v", sums)
	}
	out, code = runCLI(t, "--home", home, "publish", "reject", sums[0].ID)
	if code != 2 {
		t.Fatalf("reject without a reason: exit %d\n%s", code, out)
	}
	if out, code = runCLI(t, "--home", home, "publish", "reject", sums[0].ID, "--reason", "wrong"); code != 0 {
		t.Fatalf("reject: exit %d\n%s", code, out)
	}
	if out, code = runCLI(t, "--home", home, "publish", "reject", sums[0].ID, "--reason", "wrong"); code != 0 {
		t.Fatalf("reject again for the same reason: exit %d\n%s", code, out)
	}
	out, code = runCLI(t, "--home", home, "publish", "reject", sums[0].ID, "--reason", "other")
	if code != 4 || !strings.Contains(out, "rejected already at") || !strings.Contains(out, `"wrong"`) || strings.Contains(out, "rejected summary") {
		t.Fatalf("reject again for another reason: exit %d, want 4 (conflict) saying when and why\n%s", code, out)
	}
	if out, code = runCLI(t, "--home", home, "publish", sums[0].ID); code != 4 {
		t.Fatalf("publish a rejected summary: exit %d, want 4 (conflict)\n%s", code, out)
	}
	out, code = runCLI(t, "--home", home, "publish", "sweep", "--json")
	if code != 0 || !strings.Contains(out, `"withdrawn": 1`) {
		t.Fatalf("sweep after rejection: exit %d\n%s", code, out)
	}

	// serve: the store as it stands, hidden sidecars never served.
	objs, err := dir.Open(filepath.Join(home, "wiki"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.StoreHandler(objs, slog.New(slog.DiscardHandler)))
	defer srv.Close()
	for path, want := range map[string]int{"/": 200, "/index.html": 200, "/.index.html.meta": 404, "/../tidemark.db": 404, "/changes/nope.html": 404, "/feed.atom": 200} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// Switching to an OpenAI-compatible summarizer supersedes the extractive
// summaries and republishes the pages with the new text.
func TestPublishWithOpenAICompatibleEndpoint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop",
			"message":{"role":"assistant","content":"A model wrote this summary."}}]}`))
	}))
	defer srv.Close()
	repo := mustGitRepo(t)
	home := t.TempDir()
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	if out, code := runCLI(t, "--home", home, "run", "--once", "--track", repo); code != 0 {
		t.Fatalf("run --once: exit %d\n%s", code, out)
	}
	t.Setenv("TIDEMARK_OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("TIDEMARK_OPENAI_MODEL", "local-model")
	out, code := runCLI(t, "--home", home, "publish", "--summarizer", "openai", "--json")
	if code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, out)
	}
	var round struct {
		Summarized struct{ Accepted int }
		Published  struct{ Published, Pages int }
	}
	if err := json.Unmarshal([]byte(out), &round); err != nil || round.Summarized.Accepted != 2 || round.Published.Published != 2 || round.Published.Pages != 2 {
		t.Fatalf("publish round %+v (%v):\n%s", round, err, out)
	}
	pages, _ := filepath.Glob(filepath.Join(home, "wiki", "changes", "*.html"))
	if len(pages) != 2 {
		t.Fatalf("pages %v", pages)
	}
	for _, p := range pages {
		b, _ := os.ReadFile(p)
		if !strings.Contains(string(b), "A model wrote this summary.") || !strings.Contains(string(b), "local-model") {
			t.Fatalf("%s does not show the model's summary:\n%s", p, b)
		}
	}

	// Switching back to extractive supersedes the model's summaries in
	// turn: the extractive ones are reinstated, and the pages show them.
	out, code = runCLI(t, "--home", home, "publish", "--summarizer", "extractive")
	if code != 0 || !strings.Contains(out, "0 accepted, 2 reinstated") || !strings.Contains(out, "2 published now") {
		t.Fatalf("publish after switching back: exit %d\n%s", code, out)
	}
	for _, p := range pages {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "A model wrote this summary.") {
			t.Fatalf("%s still shows the model's summary after switching back:\n%s", p, b)
		}
	}

	// A rejected summary's page comes back when the rejection is lifted.
	out, code = runCLI(t, "--home", home, "publish", "summaries", "--json")
	var sums []struct {
		ID, Model string
		Current   bool
	}
	if code != 0 || json.Unmarshal([]byte(out), &sums) != nil || len(sums) != 4 {
		t.Fatalf("summaries: exit %d\n%s", code, out)
	}
	id := ""
	for _, s := range sums {
		if s.Current && s.Model == "extractive" {
			id = s.ID
		}
	}
	if out, code = runCLI(t, "--home", home, "publish", "unreject", id, "--reason", "x"); code != 4 || !strings.Contains(out, "not rejected") {
		t.Fatalf("unreject a summary not rejected: exit %d, want 4\n%s", code, out)
	}
	if out, code = runCLI(t, "--home", home, "publish", "reject", id, "--reason", "wrong"); code != 0 {
		t.Fatalf("reject: exit %d\n%s", code, out)
	}
	if out, code = runCLI(t, "--home", home, "publish"); code != 0 || !strings.Contains(out, "withdrawn: 1") {
		t.Fatalf("publish after the rejection: exit %d\n%s", code, out)
	}
	if out, code = runCLI(t, "--home", home, "publish", "unreject", id); code != 2 {
		t.Fatalf("unreject without a reason: exit %d, want 2\n%s", code, out)
	}
	out, code = runCLI(t, "--home", home, "publish", "unreject", id, "--reason", "it was right", "--json")
	var back struct {
		Current bool
		Lifted  []struct {
			RejectedReason string `json:"rejected_reason"`
			Reason         string
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &back) != nil || !back.Current || len(back.Lifted) != 1 || back.Lifted[0].RejectedReason != "wrong" {
		t.Fatalf("unreject: exit %d\n%s", code, out)
	}
	if out, code = runCLI(t, "--home", home, "publish"); code != 0 || !strings.Contains(out, "1 published now") || !strings.Contains(out, "2 in all") {
		t.Fatalf("publish after the unreject: exit %d\n%s", code, out)
	}
}

// The same command against an S3-compatible server: --store s3://bucket/prefix.
func TestRunOnceOnS3(t *testing.T) {
	ep := os.Getenv("TIDEMARK_TEST_S3_ENDPOINT")
	if ep == "" {
		t.Skip("TIDEMARK_TEST_S3_ENDPOINT not set (.ci/s3.sh starts a server)")
	}
	t.Setenv("TIDEMARK_S3_ENDPOINT", ep)
	t.Setenv("AWS_ACCESS_KEY_ID", os.Getenv("TIDEMARK_TEST_S3_ACCESS_KEY"))
	t.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv("TIDEMARK_TEST_S3_SECRET_KEY"))
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	store := "s3://" + os.Getenv("TIDEMARK_TEST_S3_BUCKET") + "/cli-" + filepath.Base(t.TempDir())
	home := t.TempDir()
	out, code := runCLI(t, "--home", home, "--store", store, "run", "--once", "--track", mustGitRepo(t))
	if code != 0 || !strings.Contains(out, "2 published now") || !strings.Contains(out, store+"/index.html") {
		t.Fatalf("run --once on S3: exit %d\n%s", code, out)
	}
	out, code = runCLI(t, "--home", home, "--store", store, "publish", "sweep", "--json")
	if code != 0 || !strings.Contains(out, `"republished": 0`) || !strings.Contains(out, `"pages": 2`) {
		t.Fatalf("sweep on S3: exit %d\n%s", code, out)
	}
	if out, code := runCLI(t, "--home", home, "--store", "ftp://x", "publish", "sweep"); code != 2 {
		t.Fatalf("bad store URL: exit %d\n%s", code, out)
	}
}

// publish with a summarizer that cannot be reached stops at the first
// refusal, publishes what it can, says so and exits 5.
func TestPublishStopsWhenSummarizerUnavailable(t *testing.T) {
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	repo := mustGitRepo(t)
	home := t.TempDir()
	if out, code := runCLI(t, "--home", home, "run", "--once", "--track", repo); code != 0 {
		t.Fatalf("run --once: exit %d\n%s", code, out)
	}
	calls := 0
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	t.Setenv("TIDEMARK_OPENAI_BASE_URL", down.URL+"/v1")
	t.Setenv("TIDEMARK_OPENAI_API_KEY", "k")
	t.Setenv("TIDEMARK_OPENAI_MODEL", "m")
	out, code := runCLI(t, "--home", home, "publish", "--summarizer", "openai")
	if code != 5 {
		t.Fatalf("publish: exit %d, want 5\n%s", code, out)
	}
	if calls != 1 {
		t.Errorf("the summarizer was asked %d times, want 1: the first refusal stops the round", calls)
	}
	for _, want := range []string{"summaries: 0 accepted, 0 unchanged, 1 failed", "summarizing stopped at event", "0 pages published now"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
}

// publish that passes over events another live worker is summarizing did
// not do everything it set out to: it exits 5, and both its text and its
// JSON say whose claim it met and until when.
func TestPublishExitsFiveWhenAnotherWorkerHoldsAnEvent(t *testing.T) {
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	ctx := context.Background()
	home := t.TempDir()
	if out, code := runCLI(t, "--home", home, "source", "add", mustGitRepo(t), "--name", "repo"); code != 0 {
		t.Fatalf("source add: exit %d\n%s", code, out)
	}
	if out, code := runCLI(t, "--home", home, "source", "run", "repo"); code != 0 {
		t.Fatalf("source run: exit %d\n%s", code, out)
	}
	cfg := pipeline.Defaults()
	cfg.Home = home
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := p.Events(ctx, ingest.EventFilter{Limit: 10})
	if err != nil || len(evs) != 2 {
		t.Fatalf("events %+v, %v", evs, err)
	}
	sum, err := p.Summarizer("")
	if err != nil {
		t.Fatal(err)
	}
	model, prompt := sum.Identity()
	got, err := p.DB().Publish().ClaimSummary(ctx, publish.SummaryClaim{EventID: evs[0].ID, Model: model, PromptVersion: prompt, Holder: "worker-b"}, publish.SummaryClaimTTL)
	if err != nil || !got.OK {
		t.Fatalf("claim: %+v, %v", got, err)
	}
	p.Close()
	until := fieldtext.Day(got.Until)

	out, code := runCLI(t, "--home", home, "publish", "--json")
	if code != 5 {
		t.Fatalf("publish --json: exit %d, want 5\n%s", code, out)
	}
	var r struct {
		Summarized struct {
			ClaimedElsewhere int `json:"claimed_elsewhere"`
			Elsewhere        []struct {
				EventID string    `json:"event_id"`
				Holder  string    `json:"holder"`
				Until   time.Time `json:"until"`
			} `json:"elsewhere"`
		} `json:"summarized"`
	}
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if e := r.Summarized.Elsewhere; r.Summarized.ClaimedElsewhere != 1 || len(e) != 1 || e[0].EventID != evs[0].ID || e[0].Holder != "worker-b" || !e[0].Until.Equal(got.Until) {
		t.Fatalf("summarized %+v\n%s", r.Summarized, out)
	}
	out, code = runCLI(t, "--home", home, "publish")
	if code != 5 {
		t.Fatalf("publish: exit %d, want 5\n%s", code, out)
	}
	for _, want := range []string{"being summarized by worker-b until " + until + ": 1 event",
		"publish left work undone: 1 event not summarized: another worker was summarizing it (worker-b until " + until + ")"} {
		if !strings.Contains(out, want) {
			t.Errorf("publish does not say %q:\n%s", want, out)
		}
	}
}
