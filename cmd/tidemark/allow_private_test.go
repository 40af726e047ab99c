package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
)

// Whether a source may reach a private address is the source's own
// setting: two workers whose environments differ read a loopback feed the
// source allows alike, and neither reads one it does not, whatever its
// TIDEMARK_ALLOW_PRIVATE says.
func TestAllowPrivateIsTheSourcesSetting(t *testing.T) {
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	srv := newBlog(t)
	feed := srv.URL + "/blog/rss.xml"
	db := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	store := t.TempDir()
	worker := func(env string, want int, args ...string) string {
		t.Helper()
		t.Setenv(AllowPrivateEnv, env)
		return mustTidemark(t, want, append([]string{"--home", t.TempDir(), "--db", db, "--store", store}, args...)...)
	}
	show := func(name string) tidemark.Source {
		t.Helper()
		var src tidemark.Source
		if err := json.Unmarshal([]byte(worker("", 0, "source", "show", name, "--json")), &src); err != nil {
			t.Fatal(err)
		}
		return src
	}
	worker("", 0, "source", "add", feed, "--kind", "feed", "--name", "allowed", "--allow-private")
	// A source that may not reach the feed's loopback address would fail
	// every run: it is refused at add, naming the fix, whatever the
	// worker's variable says.
	t.Setenv(AllowPrivateEnv, "1")
	out, code := runCLI(t, "--home", t.TempDir(), "--db", db, "--store", store, "source", "add", feed, "--kind", "feed", "--name", "refused", "--allow-private=false")
	if code != tidemark.ExitInvalid || !strings.Contains(out, "add it with --allow-private") {
		t.Fatalf("a loopback feed added without --allow-private: exit %d\n%s", code, out)
	}
	// Each source watches its own copy of the feed (one location is one
	// feed source).
	worker("", 0, "source", "add", feed+"?refused", "--kind", "feed", "--name", "refused", "--allow-private")
	worker("", 0, "source", "set", "refused", "--allow-private=false")
	worker("1", 0, "source", "add", feed+"?defaulted", "--kind", "feed", "--name", "defaulted")
	if !show("allowed").AllowPrivate || show("refused").AllowPrivate || !show("defaulted").AllowPrivate {
		t.Fatalf("settings stored: allowed %v refused %v defaulted %v, want true false true",
			show("allowed").AllowPrivate, show("refused").AllowPrivate, show("defaulted").AllowPrivate)
	}

	// A worker without the variable reads the sources that allow it
	// (and exits 5: one source failed).
	worker("", 5, "run", "--once")
	if o := show("allowed").LastOutcome; o != tidemark.OutcomeItems {
		t.Fatalf("allowed source read by a worker without the variable: %s", o)
	}
	if o := show("defaulted").LastOutcome; o != tidemark.OutcomeItems {
		t.Fatalf("source allowed by default at add, read by a worker without the variable: %s", o)
	}
	refused := show("refused")
	if refused.LastOutcome.Advances() || !strings.Contains(refused.LastError, "source set") {
		t.Fatalf("refused source: %s %q, want a refusal naming the fix", refused.LastOutcome, refused.LastError)
	}
	// A worker with the variable does not read it either.
	worker("1", 0, "source", "retry", "refused")
	worker("1", 5, "run", "--once")
	if o := show("refused").LastOutcome; o.Advances() {
		t.Fatalf("a worker's variable let it read a source that refuses private addresses: %s", o)
	}
	// Allowed by the source's setting, any worker reads it.
	worker("", 0, "source", "set", "refused", "--allow-private")
	worker("", 0, "source", "retry", "refused")
	worker("", 0, "run", "--once")
	if o := show("refused").LastOutcome; o != tidemark.OutcomeItems {
		t.Fatalf("source allowed by source set: %s", o)
	}
	worker("", 2, "source", "set", "refused")
}
