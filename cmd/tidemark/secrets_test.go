package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox/provider/webhook"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/web"
)

// A lane's secrets (its signing secret, the password in its URL's
// userinfo, a token in its URL's query, the token in its URL's path) are used to send but never shown: not by lane
// add, not by the lane listings (text or JSON), not by the API or the
// status pages, and not in the error an upstream echoes them in, whether
// logged or stored.
func TestLaneSecretsNeverShown(t *testing.T) {
	const secret, queryTok, pathTok, userPW = "s3cr3t-signing", "qu3ry-t0ken", "PATHSECRET123", "us3rPW-hunter"
	secrets := []string{secret, queryTok, pathTok, userPW}
	var signed atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		user, pw, _ := r.BasicAuth()
		if r.Header.Get(webhook.SignatureHeader) == webhook.Sign([]byte(secret), body) && r.URL.Query().Get("token") == queryTok &&
			strings.Contains(r.URL.Path, pathTok) && user == "hookuser" && pw == userPW {
			signed.Add(1)
		}
		// An upstream that echoes the credentials in its error.
		http.Error(w, "rejected "+r.URL.String()+" signed with "+secret+" token="+queryTok, http.StatusBadRequest)
	}))
	defer upstream.Close()

	db := "sqlite:" + filepath.Join(t.TempDir(), "t.db")
	var logs bytes.Buffer
	cliExit := func(want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(append([]string{"--db", db, "--log-level", "debug"}, args...), &out, &errb)
		logs.Write(errb.Bytes())
		if code != want {
			t.Fatalf("tidemark %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
	cli := func(args ...string) string { t.Helper(); return cliExit(0, args...) }
	shown := map[string]string{}
	shown["lane add"] = cli("outbox", "lane", "add", "hook", "--provider", "webhook", "--min-gap", "0s", "--json",
		"--setting", "secret="+secret, "--setting", "url="+strings.Replace(upstream.URL, "://", "://hookuser:"+userPW+"@", 1)+"/hook/"+pathTok+"?token="+queryTok)
	cli("outbox", "intents", "draft", "--lane", "hook", "--target", "room", "--body", "hello")
	// The upstream refuses the request (400): the lane stops (exit 5).
	shown["deliver"] = cliExit(5, "outbox", "deliver", "--once", "--json")
	if signed.Load() != 1 {
		t.Fatalf("the upstream got %d correctly signed writes to the secret URL, want 1", signed.Load())
	}
	shown["lanes --json"] = cli("outbox", "lanes", "--json")
	shown["lanes"] = cli("outbox", "lanes")
	shown["lane show"] = cli("outbox", "lane", "show", "hook", "--json")
	shown["intents list"] = cli("outbox", "intents", "list", "--json")
	var intents []struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(shown["intents list"]), &intents); err != nil || len(intents) != 1 || intents[0].State != "pending" {
		t.Fatalf("intents after a rejected write: %v %s", err, shown["intents list"])
	}
	shown["intent show"] = cli("outbox", "intents", "show", intents[0].ID)
	shown["intent show --json"] = cli("outbox", "intents", "show", intents[0].ID, "--json")
	if !strings.Contains(shown["intent show"], "rejected") {
		t.Fatalf("the upstream's error is not kept at all:\n%s", shown["intent show"])
	}
	if !strings.Contains(shown["lanes --json"], "•••") {
		t.Errorf("the shown settings do not say a secret is set:\n%s", shown["lanes --json"])
	}

	a := &app{cfg: pipeline.Defaults(), stdout: io.Discard, stderr: io.Discard}
	a.cfg.Database = db
	defer a.close()
	d, err := a.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := d.Auth().CreateToken(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&web.Server{Ingest: d.Ingest(), Outbox: d.Outbox(), Migrations: d.Content(), Auth: d.Auth()}).Handler())
	defer srv.Close()
	for _, p := range []string{"/api/outbox/lanes", "/api/outbox/intents", "/status", "/status/lanes/hook"} {
		req, _ := http.NewRequest("GET", srv.URL+p, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
		shown["GET "+p] = string(b)
	}
	shown["logs"] = logs.String()
	for what, text := range shown {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the secret %q:\n%s", what, s, text)
			}
		}
	}
}

// A location that carries a credential is refused before anything reads
// it, and the refusal does not repeat the credential; an SSH user name is
// not a credential.
func TestSourceLocationWithCredentialsRefused(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "t.db")
	for _, loc := range []string{"https://bob:hunter2hunter@example.org/repo.git", "https://ghp_T0KENVALUE@github.com/o/r.git",
		"git://u:hunter2hunter@example.org/r.git", "https://bob:hunter2hunter@example.org/feed.xml"} {
		var out, errb bytes.Buffer
		code := run([]string{"--db", db, "source", "add", loc}, &out, &errb)
		text := out.String() + errb.String()
		if code != 2 || !strings.Contains(text, "credential") {
			t.Errorf("source add %s: exit %d, want 2 (invalid) saying why\n%s", loc, code, text)
		}
		if strings.Contains(text, "hunter2hunter") || strings.Contains(text, "ghp_T0KENVALUE") {
			t.Errorf("source add %s: the refusal repeats the credential:\n%s", loc, text)
		}
	}
	out := mustRun(t, "--db", db, "source", "add", "--kind", "git", "ssh://git@example.org/o/r.git", "--json")
	if !strings.Contains(string(out), "ssh://git@example.org/o/r.git") {
		t.Fatalf("source add with an SSH user name:\n%s", out)
	}
}

// A mistyped --setting is refused without repeating it: it may be a secret.
func TestMistypedSettingNotRepeated(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "t.db")
	for _, arg := range []string{"secret:s3cr3t-value", "=s3cr3t-value"} {
		var out, errb bytes.Buffer
		code := run([]string{"--db", db, "outbox", "lane", "add", "hook", "--provider", "webhook", "--setting", arg}, &out, &errb)
		if code != 2 || strings.Contains(out.String()+errb.String(), "s3cr3t-value") || !strings.Contains(errb.String(), "key=value") {
			t.Errorf("--setting %s: exit %d\n%s%s", arg, code, out.String(), errb.String())
		}
	}
}

// A location carrying a credential in its query is refused by source add
// and skipped by an OPML import, neither repeating it; a source stored
// with one before (by an older tidemark) keeps running, and no face shows
// its token: source list and show (text and --json), export-opml, the
// run's output, and the wiki's source card.
func TestSourceLocationQueryCredentialNeverShown(t *testing.T) {
	const secret = "SEKRET-qtok-5"
	srv := newBlog(t)
	home := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"--home", home, "source", "add", srv.URL + "/blog/rss.xml?token=" + secret, "--allow-private"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "credential") || strings.Contains(out.String()+errb.String(), secret) {
		t.Errorf("source add with ?token=: exit %d\n%s%s", code, out.String(), errb.String())
	}
	subs := filepath.Join(t.TempDir(), "subs.opml")
	if err := os.WriteFile(subs, []byte(`<?xml version="1.0"?><opml version="1.0"><head><title>s</title></head><body>
<outline type="rss" text="Private" xmlUrl="https://example.org/feed?api_key=`+secret+`"/>
<outline type="rss" text="Basic" xmlUrl="https://u:`+secret+`@example.org/feed"/></body></opml>`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--json"}, {}, {"--dry-run"}} {
		got := mustTidemark(t, 0, append([]string{"--home", home, "source", "import-opml", subs}, args...)...)
		if strings.Contains(got, secret) || !strings.Contains(got, "example.org/feed") {
			t.Errorf("import-opml %v shows the credential, or not the feed:\n%s", args, got)
		}
	}

	ctx := context.Background()
	db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(home, "tidemark.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Ingest().AddSource(ctx, ingest.NewSource{Name: "old", Kind: "feed", Location: srv.URL + "/blog/rss.xml?token=" + secret,
		Interval: time.Hour, RetryBudget: 3, AllowPrivate: true})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]string{}
	for _, args := range [][]string{
		{"run", "--once"}, {"source", "list"}, {"source", "list", "--json"}, {"source", "show", "old"},
		{"source", "show", "old", "--json"}, {"source", "export-opml"},
	} {
		shown[strings.Join(args, " ")] = mustTidemark(t, 0, append([]string{"--home", home}, args...)...)
	}
	cards, _ := filepath.Glob(filepath.Join(home, "wiki", "sources", "*.html"))
	if len(cards) == 0 {
		t.Fatal("the run published no source card: the old source did not keep working")
	}
	for _, c := range cards {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		shown[c] = string(b)
	}
	for what, text := range shown {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the location's token:\n%s", what, text)
		}
	}
	if !strings.Contains(shown["source show old"], "token=•••") {
		t.Errorf("source show does not show the location without its token:\n%s", shown["source show old"])
	}
}
