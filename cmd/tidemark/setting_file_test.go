package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A lane's secret can be given from a file (or standard input) with
// --setting-file, so it stays out of the process's arguments (ps) and the
// shell's history; it is then kept and shown like one given by --setting.
func TestLaneSettingFromAFile(t *testing.T) {
	const token = "SEKRET-from-a-file-5521"
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "t.db")
	file := filepath.Join(dir, "url")
	if err := os.WriteFile(file, []byte("https://discord.example/api/webhooks/42/"+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(append([]string{"--db", db}, args...), &out, &errb); code != want {
			t.Fatalf("tidemark %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
	out := cli(0, "outbox", "lane", "add", "d", "--provider", "discord", "--setting-file", "url="+file)
	out += cli(0, "outbox", "lane", "show", "d", "--json")
	if strings.Contains(out, token) || !strings.Contains(out, "discord.example") {
		t.Fatalf("lane add and show with the URL from a file:\n%s", out)
	}

	// What is wrong with a file is said, and nothing is added.
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(dir, "two")
	if err := os.WriteFile(two, []byte("a\nb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{
		"url=" + filepath.Join(dir, "missing"): "no such file",
		"url=" + empty:                         "empty",
		"url=" + two:                           "more than one line",
		"url":                                  "key=PATH",
	} {
		if got := cli(2, "outbox", "lane", "add", "e", "--provider", "discord", "--setting-file", arg); !strings.Contains(got, want) {
			t.Errorf("--setting-file %s: %s, want it to say %q", arg, got, want)
		}
	}
	if got := cli(2, "outbox", "lane", "add", "e", "--provider", "discord", "--setting", "url=https://x.example/1", "--setting-file", "url="+file); !strings.Contains(got, "twice") {
		t.Errorf("url given by --setting and --setting-file: %s, want it refused as given twice", got)
	}
	if got := cli(0, "outbox", "lanes"); strings.Contains(got, " e ") {
		t.Errorf("a refused lane add added a lane:\n%s", got)
	}
}

// A value read by --setting-file is the file's line without the white
// space around it, which a receiver trims: kept with it, the secret would
// not be found in an upstream's echo of what it received.
func TestSettingFileTrimsWhiteSpace(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	for _, body := range []string{"  SEKRET-spc-111  \n", "\tSEKRET-spc-111\r\n", "SEKRET-spc-111 "} {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		key, v, err := settingFromFile("token=" + file)
		if err != nil || key != "token" || v != "SEKRET-spc-111" {
			t.Errorf("file %q: %q = %q, %v; want the line trimmed", body, key, v, err)
		}
	}
}
