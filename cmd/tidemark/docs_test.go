package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The documents' commands end to end: create, import, put, a field type
// change that fails and is aborted, and a delete refused without --force
// because it would lose the document's history.
func TestDocsCLI(t *testing.T) {
	home := t.TempDir()
	cli := func(want int, args ...string) string {
		t.Helper()
		out, code := runCLI(t, append([]string{"--home", home}, args...)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s", args, code, want, out)
		}
		return out
	}
	cli(0, "docs", "collection", "create", "things", "--field", "n:text")
	cli(2, "docs", "collection", "create", "bad", "--field", "n")
	// --batch is 1 to 5000; 0 is not "the default".
	for _, b := range []string{"0", "-1", "5001"} {
		if out := cli(2, "docs", "field", "set-type", "things", "n", "number", "--batch", b); !strings.Contains(out, "batch") {
			t.Fatalf("--batch %s: %s", b, out)
		}
	}
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte("{\"id\":\"01J0000000000000000000000A\",\"n\":\"1\"}\n{\"n\":\"x\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := cli(0, "docs", "import", "things", in); !strings.Contains(out, "imported 2 documents into things") {
		t.Fatal(out)
	}
	id := "01J0000000000000000000000A"
	cli(2, "docs", "put", "things", id, "--text", "n=2")
	cli(4, "docs", "put", "things", id, "--base-version", "7", "--text", "n=2")
	if out := cli(0, "docs", "put", "things", id, "--base-version", "1", "--text", "n=2"); !strings.Contains(out, "things/"+id+" is at version 2") {
		t.Fatal(out)
	}
	out := cli(2, "docs", "field", "set-type", "things", "n", "number", "--json")
	var run struct{ ID, Status string }
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &run); err != nil || run.Status != "failed" {
		t.Fatalf("set-type: %v\n%s", err, out)
	}
	if out := cli(0, "migrate", "abort", run.ID); !strings.Contains(out, "aborted") {
		t.Fatal(out)
	}
	if out := cli(4, "migrate", "resume", run.ID); !strings.Contains(out, "nothing to resume") {
		t.Fatal(out)
	}
	if out := cli(4, "docs", "delete", "things", id); !strings.Contains(out, "--force") {
		t.Fatal(out)
	}
	cli(0, "docs", "get", "things", id)
	if out := cli(0, "docs", "delete", "things", id, "--force"); !strings.Contains(out, "deleted things/"+id) {
		t.Fatal(out)
	}
	cli(3, "docs", "get", "things", id)
}
