package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
)

// The providers command and a lane's display show the guarantee derived
// from the provider's capabilities and the lane's settings.
func TestOutboxProvidersAndTheLanesGuarantee(t *testing.T) {
	var kinds []struct {
		Kind    string   `json:"kind"`
		Best    string   `json:"best"`
		Default string   `json:"default"`
		Needs   []string `json:"needs"`
		MinGap  string   `json:"min_gap"`
	}
	if err := json.Unmarshal(mustRun(t, "outbox", "providers", "--json"), &kinds); err != nil {
		t.Fatal(err)
	}
	byKind := map[string]int{}
	for i, k := range kinds {
		byKind[k.Kind] = i
	}
	if w := kinds[byKind["webhook"]]; w.Best != "exactly-once" || w.Default != "at-most-once" || len(w.Needs) == 0 {
		t.Fatalf("webhook row %+v", w)
	}
	if text := mustRun(t, "outbox", "providers"); !bytes.Contains(text, []byte("at-most-once without")) {
		t.Fatalf("providers:\n%s", text)
	}
	// The gap providers shows is the one lane add gives a lane of the
	// kind, published or not: a webhook publishes none and gets 2s.
	if w := kinds[byKind["webhook"]]; w.MinGap != "2s" {
		t.Errorf("providers --json: webhook min_gap %q, want the 2s lane add gives", w.MinGap)
	}
	for _, line := range bytes.Split(mustRun(t, "outbox", "providers"), []byte("\n")) {
		if f := bytes.Fields(line); len(f) > 0 && string(f[0]) == "webhook" && string(f[len(f)-1]) != "2s" {
			t.Errorf("providers: webhook row ends in %q, want its gap 2s:\n%s", f[len(f)-1], line)
		}
	}

	t.Setenv("TM_CLI_SECRET", "k")
	base := []string{"--db", "sqlite:" + filepath.Join(t.TempDir(), "t.db")}
	cmd := func(args ...string) []byte { return mustRun(t, append(append([]string(nil), base...), args...)...) }
	hook := []string{"outbox", "lane", "add", "--provider", "webhook", "--setting", "secret_env=TM_CLI_SECRET", "--setting", "url=http://127.0.0.1:1/hook"}
	cmd(append(hook, "blind")...)
	cmd(append(hook, "listed", "--setting", "list_url=http://127.0.0.1:1/writes")...)
	cmd(append(hook, "eager", "--setting", "resend_in_doubt=true")...)
	var out, errb bytes.Buffer
	if code := run(append(append(base, hook...), "bad", "--setting", "resend_in_doubt=maybe"), &out, &errb); code != 2 {
		t.Fatalf("a bad resend_in_doubt: exit %d (%s), want 2", code, errb.String())
	}
	// The provider's published rate limit is the default gap; --min-gap
	// overrides it.
	cmd("outbox", "lane", "add", "alerts", "--provider", "ntfy", "--setting", "topics=alerts")
	cmd("outbox", "lane", "add", "fast", "--provider", "ntfy", "--min-gap", "1s")
	for lane, want := range map[string]string{"alerts": "5s", "fast": "1s", "blind": "2s"} {
		var l struct {
			MinGap string `json:"min_gap"`
		}
		if err := json.Unmarshal(cmd("outbox", "lane", "show", lane, "--json"), &l); err != nil {
			t.Fatal(err)
		}
		if l.MinGap != want {
			t.Errorf("lane %s: min gap %s, want %s", lane, l.MinGap, want)
		}
	}
	for lane, want := range map[string]string{"blind": "at-most-once", "listed": "exactly-once", "eager": "at-least-once"} {
		var l struct {
			Guarantee struct {
				Guarantee     string   `json:"guarantee"`
				ResendInDoubt bool     `json:"resend_in_doubt"`
				Missing       []string `json:"missing"`
				Why           string   `json:"why"`
			} `json:"guarantee"`
		}
		if err := json.Unmarshal(cmd("outbox", "lane", "show", lane, "--json"), &l); err != nil {
			t.Fatal(err)
		}
		if g := l.Guarantee; g.Guarantee != want || g.Why == "" || (want == "at-least-once") != g.ResendInDoubt {
			t.Errorf("lane %s shows %+v, want %s", lane, g, want)
		}
		if text := cmd("outbox", "lane", "show", lane); !bytes.Contains(text, []byte("guarantee: "+want)) {
			t.Errorf("lane show %s:\n%s", lane, text)
		}
	}
}
