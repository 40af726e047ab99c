package main

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
)

// A wiki URL carrying a credential is refused with what to do: drop the
// credential from the variable, and find and retire the intents drafted
// with it (their bodies were frozen when drafted). Usage help is no help
// for a variable.
func TestWikiURLRefusalSaysWhatToDo(t *testing.T) {
	t.Setenv("TIDEMARK_WIKI_URL", "https://wiki.example.org/?token=SEKRET-wiki-1")
	out, code := runCLI(t, "--home", t.TempDir(), "source", "list")
	if code != tidemark.ExitInvalid || strings.Contains(out, "SEKRET") {
		t.Fatalf("exit %d, want %d without the credential:\n%s", code, tidemark.ExitInvalid, out)
	}
	for _, want := range []string{"TIDEMARK_WIKI_URL", "outbox intents list --state pending --json", "outbox intents retire", "publish sweep"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--help") {
		t.Errorf("the refusal of a variable points at usage help:\n%s", out)
	}
}

// A store location refused names where it came from: the variable, when
// it came from TIDEMARK_STORE.
func TestStoreRefusalNamesTheVariable(t *testing.T) {
	t.Setenv("TIDEMARK_STORE", "s3://AKID:SEKRET-store-1@bucket/wiki")
	out, code := runCLI(t, "--home", t.TempDir(), "publish", "sweep")
	if code != tidemark.ExitInvalid || strings.Contains(out, "SEKRET") || !strings.Contains(out, "invalid TIDEMARK_STORE") {
		t.Fatalf("exit %d, want %d naming TIDEMARK_STORE without the secret:\n%s", code, tidemark.ExitInvalid, out)
	}
	out, code = runCLI(t, "--home", t.TempDir(), "--store", "s3://AKID:SEKRET-store-1@bucket/wiki", "publish", "sweep")
	if code != tidemark.ExitInvalid || !strings.Contains(out, "invalid --store") {
		t.Fatalf("exit %d, want %d naming --store:\n%s", code, tidemark.ExitInvalid, out)
	}
}
