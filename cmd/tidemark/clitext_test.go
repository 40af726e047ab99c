package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
)

// token create --json gives every field the README lists for a token,
// those without a value as null, and the token itself.
func TestTokenCreateJSONHasEveryField(t *testing.T) {
	out, code := runCLI(t, "--home", t.TempDir(), "token", "create", "ci", "--json")
	var m map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
		t.Fatalf("token create --json: exit %d\n%s", code, out)
	}
	for _, k := range []string{"id", "name", "created_at", "last_used_at", "revoked_at", "token"} {
		if _, ok := m[k]; !ok {
			t.Errorf("token create --json lacks %q:\n%s", k, out)
		}
	}
	if m["last_used_at"] != nil || m["revoked_at"] != nil {
		t.Errorf("a new token: %v, want last_used_at and revoked_at null", m)
	}
}

// Two --setting-file options cannot both read standard input: the second
// is refused for that, before either is read, not as an empty value.
func TestSettingFileReadsStandardInputOnce(t *testing.T) {
	stdin, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.WriteString("https://hooks.example/h\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	saved := os.Stdin
	os.Stdin = stdin
	t.Cleanup(func() { os.Stdin = saved })
	out, code := runCLI(t, "--home", t.TempDir(), "outbox", "lane", "add", "l1", "--provider", "webhook",
		"--setting-file", "secret=-", "--setting-file", "url=-")
	if code != tidemark.ExitInvalid || !strings.Contains(out, `invalid --setting-file "url": standard input was already read by --setting-file secret`) {
		t.Fatalf("two settings from standard input: exit %d, want %d saying stdin was read by the first\n%s", code, tidemark.ExitInvalid, out)
	}
	if pos, _ := stdin.Seek(0, io.SeekCurrent); pos != 0 {
		t.Fatalf("standard input was read (to %d) by a refused command", pos)
	}
}

// source list --json gives each source's health, the word the text
// table's HEALTH column shows, so a script need not work it out.
func TestSourceListJSONGivesHealth(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/a", []byte("a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"source", "add", t.TempDir(), "--name", "fresh"}, {"source", "add", dir, "--name", "read"}} {
		if out, code := runCLI(t, append([]string{"--home", home}, args...)...); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, out)
		}
	}
	if out, code := runCLI(t, "--home", home, "source", "run", "read"); code != 0 {
		t.Fatalf("source run: exit %d\n%s", code, out)
	}
	out, code := runCLI(t, "--home", home, "source", "list", "--json")
	var list []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("source list --json: exit %d\n%s", code, out)
	}
	got := map[any]any{}
	for _, s := range list {
		got[s["name"]] = s["health"]
	}
	if got["fresh"] != "new" || got["read"] != "ok" {
		t.Fatalf("health by name %v, want fresh new and read ok\n%s", got, out)
	}
}
