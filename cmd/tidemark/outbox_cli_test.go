package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/internal/gittest"
	"github.com/tidemark/tidemark/outbox/providertest"
)

func mustRun(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("tidemark %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.Bytes()
}

// TestOutboxCLIEndToEnd drives a webhook lane from the command line
// against the local test provider: add, draft, deliver, list, reconcile,
// gaps, retire, revive.
func TestOutboxCLIEndToEnd(t *testing.T) {
	t.Setenv("TM_CLI_SECRET", "k")
	srv := providertest.New(t, clock.System{}, []byte("k"))
	db := "sqlite:" + filepath.Join(t.TempDir(), "t.db")
	base := []string{"--db", db}
	cmd := func(args ...string) []byte { return mustRun(t, append(append([]string(nil), base...), args...)...) }
	add := []string{"outbox", "lane", "add", "hook", "--provider", "webhook", "--min-gap", "0s", "--setting", "secret_env=TM_CLI_SECRET"}
	for k, v := range srv.Settings() {
		add = append(add, "--setting", k+"="+v)
	}
	cmd(add...)
	cmd("outbox", "intents", "draft", "--lane", "hook", "--target", "room", "--body", "hello")
	cmd("outbox", "intents", "draft", "--lane", "hook", "--target", "locked", "--body", "hi")
	srv.Moderate("locked", "moderated")
	var out, errb bytes.Buffer
	if code := run(append(base, "outbox", "intents", "draft", "--lane", "hook", "--target", "room", "--body", "hello"), &out, &errb); code != 4 {
		t.Fatalf("duplicate draft: exit %d (%s), want 4 (conflict)", code, errb.String())
	}

	var reports []struct {
		Lane  string `json:"lane"`
		Steps []struct {
			Kind    string `json:"kind"`
			Outcome string `json:"outcome"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(cmd("outbox", "deliver", "--once", "--json"), &reports); err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || len(reports[0].Steps) != 2 || reports[0].Steps[0].Outcome != "landed" || reports[0].Steps[1].Kind != "bucketed" {
		t.Fatalf("deliver report %+v", reports)
	}
	var intents []struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		RemoteID string `json:"remote_id"`
	}
	if err := json.Unmarshal(cmd("outbox", "intents", "list", "--json"), &intents); err != nil {
		t.Fatal(err)
	}
	if len(intents) != 2 || intents[0].State != "landed" || intents[0].RemoteID == "" || intents[1].State != "unexecutable" {
		t.Fatalf("intents %+v", intents)
	}
	var plan struct {
		Landed     []string `json:"landed"`
		Accounting struct {
			Balanced bool `json:"balanced"`
		} `json:"accounting"`
	}
	if err := json.Unmarshal(cmd("outbox", "reconcile", "hook", "--json"), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Landed) != 1 || !plan.Accounting.Balanced {
		t.Fatalf("reconcile plan %+v", plan)
	}
	var gaps []struct {
		Lane  string `json:"lane"`
		Count int    `json:"count"`
	}
	if err := json.Unmarshal(cmd("outbox", "gaps", "--json"), &gaps); err != nil || len(gaps) != 1 || gaps[0].Lane != "hook" {
		t.Fatalf("gaps %+v %v", gaps, err)
	}
	cmd("outbox", "intents", "retire", intents[1].ID, "--reason", "thread is gone")
	var shown struct {
		State   string            `json:"state"`
		Checks  []json.RawMessage `json:"checks"`
		Actions []json.RawMessage `json:"actions"`
	}
	if err := json.Unmarshal(cmd("outbox", "intents", "show", intents[1].ID, "--json"), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.State != "retired" || len(shown.Checks) == 0 || len(shown.Actions) != 1 {
		t.Fatalf("shown %+v", shown)
	}
	cmd("outbox", "intents", "revive", intents[1].ID, "--reason", "try again")
	if srv.Count() != 1 || len(srv.Duplicates()) != 0 {
		t.Fatalf("provider holds %d writes", srv.Count())
	}
	for _, c := range [][]string{{"outbox", "lanes"}, {"outbox", "lanes", "--json"}, {"outbox", "lane", "show", "hook"}, {"outbox", "intents", "list"}, {"outbox", "gaps"}, {"outbox", "channel", "list", "--json"}} {
		cmd(c...)
	}
}

// TestOutboxLaneLifecycleCLI: lane set keeps secrets apart, lane remove is
// refused while an intent waits and says what would be lost, --force
// removes it, and each change is in the lane's history with who did it.
func TestOutboxLaneLifecycleCLI(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "t.db")
	cmd := func(args ...string) string { return string(mustRun(t, append([]string{"--db", db}, args...)...)) }
	cmd("outbox", "lane", "add", "hook", "--provider", "webhook", "--setting", "url=http://127.0.0.1:1/h")
	if out := cmd("outbox", "lane", "add", "toot", "--provider", "mastodon", "--setting", "base_url=https://m.example", "--setting", "token_env=TM_CLI_UNSET_TOKEN"); !strings.Contains(out, "warning: lane toot cannot deliver from here") {
		t.Fatalf("a lane whose secret is missing is added without a warning:\n%s", out)
	}
	if out := cmd("outbox", "lanes"); !strings.Contains(out, "broken") {
		t.Fatalf("lanes does not show the broken lane:\n%s", out)
	}
	// A broken lane is a lane that failed (exit 5), not a bad command line.
	var dout, derr bytes.Buffer
	if code := run([]string{"--db", db, "outbox", "deliver", "--once", "--lane", "toot"}, &dout, &derr); code != 5 || !strings.Contains(derr.String(), "lane toot: broken here") {
		t.Fatalf("deliver --once on a broken lane: exit %d, want 5\n%s", code, derr.String())
	}
	if out := cmd("outbox", "lane", "set", "hook", "--setting", "secret=s3cr3t-value", "--min-gap", "3s"); strings.Contains(out, "s3cr3t") || !strings.Contains(out, "3s") {
		t.Fatalf("lane set:\n%s", out)
	}
	cmd("outbox", "intents", "draft", "--lane", "hook", "--target", "room", "--body", "hello")
	var out, errb bytes.Buffer
	if code := run([]string{"--db", db, "outbox", "lane", "remove", "hook"}, &out, &errb); code != 4 || !strings.Contains(errb.String(), "1 pending") || !strings.Contains(errb.String(), "--force") {
		t.Fatalf("lane remove with a pending intent: exit %d\n%s", code, errb.String())
	}
	if out := cmd("outbox", "lane", "remove", "hook", "--force"); !strings.Contains(out, "pending 1") {
		t.Fatalf("lane remove --force:\n%s", out)
	}
	hist := cmd("outbox", "lane", "history", "hook")
	for _, want := range []string{"lane add", "lane set", "set secret, min gap 2s → 3s", "lane remove", "forced, losing 1 pending"} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %q:\n%s", want, hist)
		}
	}
	if strings.Contains(hist, "s3cr3t") {
		t.Errorf("history shows a secret:\n%s", hist)
	}
}

// outbox channel template sets a channel's template, shows what it would
// send with it, refuses a bad one with exit 2 keeping the old, and
// --default resets it; each change is in the lane's history.
func TestOutboxChannelTemplateCLI(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "t.db")
	cmd := func(args ...string) string { return string(mustRun(t, append([]string{"--db", db}, args...)...)) }
	cmd("outbox", "lane", "add", "hook", "--provider", "webhook", "--setting", "url=http://127.0.0.1:1/h")
	cmd("source", "add", gittest.Repo(t, "first"), "--name", "docs")
	var c struct{ ID string }
	if err := json.Unmarshal([]byte(cmd("outbox", "channel", "add", "--source", "docs", "--lane", "hook", "--target", "room", "--json")), &c); err != nil || c.ID == "" {
		t.Fatalf("channel add --json: %v", err)
	}
	if out := cmd("outbox", "channel", "template", c.ID, "--template", "new in {{.Source}}: {{.Title}}"); !strings.Contains(out, "would send") || !strings.Contains(out, "new in docs: ") {
		t.Fatalf("template set does not show what the channel would send:\n%s", out)
	}
	tmpl := filepath.Join(dir, "t.txt")
	if err := os.WriteFile(tmpl, []byte("{{.Author}}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--file", tmpl}, {}, {"--default", "--template", "x"}} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"--db", db, "outbox", "channel", "template", c.ID}, args...), &out, &errb); code != 2 {
			t.Fatalf("template %v: exit %d, want 2\n%s", args, code, errb.String())
		}
	}
	var cs []struct{ Template string }
	if err := json.Unmarshal([]byte(cmd("outbox", "channel", "list", "--json")), &cs); err != nil || len(cs) != 1 || cs[0].Template != "new in {{.Source}}: {{.Title}}" {
		t.Fatalf("after the refusals: %+v, %v", cs, err)
	}
	if out := cmd("outbox", "channel", "template", c.ID, "--default", "--json"); !strings.Contains(out, `"template": ""`) {
		t.Fatalf("--default --json:\n%s", out)
	}
	if hist := cmd("outbox", "lane", "history", "hook"); strings.Count(hist, "channel template") != 2 || !strings.Contains(hist, "the provider's default") {
		t.Fatalf("history:\n%s", hist)
	}
}

// A provider that says "later" (429 with Retry-After) does not keep
// `deliver --once` waiting: the intent is deferred, the pass ends, the
// lane's line says so and the command exits 5 (work left undone); a later
// pass sends it.
func TestOutboxDeliverOnceDefersWhenTheProviderSaysLater(t *testing.T) {
	t.Setenv("TM_CLI_SECRET", "k")
	srv := providertest.New(t, clock.System{}, []byte("k"))
	db := "sqlite:" + filepath.Join(t.TempDir(), "t.db")
	add := []string{"--db", db, "outbox", "lane", "add", "hook", "--provider", "webhook", "--min-gap", "0s", "--setting", "secret_env=TM_CLI_SECRET"}
	for k, v := range srv.Settings() {
		add = append(add, "--setting", k+"="+v)
	}
	mustRun(t, add...)
	mustRun(t, "--db", db, "outbox", "intents", "draft", "--lane", "hook", "--target", "room", "--body", "hello")
	srv.RetryAfterNext(time.Hour)
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"--db", db, "outbox", "deliver", "--once"}, &out, &errb) }()
	select {
	case code := <-done:
		if code != 5 || !strings.Contains(out.String(), "deferred 1") || !strings.Contains(errb.String(), "deferred") {
			t.Fatalf("deliver --once: exit %d, out %q, err %q; want exit 5 and the intent deferred", code, out.String(), errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("deliver --once is still waiting on a provider that said later")
	}
	if srv.Posts() != 1 || srv.Count() != 0 {
		t.Fatalf("%d posts, %d writes; want one attempt, not landed", srv.Posts(), srv.Count())
	}
}
