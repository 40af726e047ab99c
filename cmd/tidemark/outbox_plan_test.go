package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestOutboxPlanContract runs `tidemark outbox plan` over the planner's
// golden cases and checks the fixed contract: the JSON and the readable
// report match the golden files, and the exit code is 0 only for a
// balanced plan (2 for input it refuses, such as a duplicate join key).
func TestOutboxPlanContract(t *testing.T) {
	cases, _ := filepath.Glob("../../outbox/testdata/plan/*")
	if len(cases) == 0 {
		t.Fatal("no golden cases")
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			args := []string{"outbox", "plan", "--intents", filepath.Join(dir, "intents.jsonl"), "--own-writes", filepath.Join(dir, "own.jsonl")}
			if _, err := os.Stat(filepath.Join(dir, "unexecutable.txt")); err == nil {
				args = append(args, "--unexecutable", filepath.Join(dir, "unexecutable.txt"))
			}
			for _, asJSON := range []bool{true, false} {
				var out, errb bytes.Buffer
				a := args
				want := "want.txt"
				if asJSON {
					a, want = append(append([]string(nil), args...), "--json"), "want.json"
				}
				code := run(a, &out, &errb)
				if wantErr, err := os.ReadFile(filepath.Join(dir, "want.err")); err == nil {
					if code != 2 || !bytes.Contains(errb.Bytes(), bytes.TrimSpace(wantErr)) {
						t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errb.String(), wantErr)
					}
					continue
				}
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
				golden, err := os.ReadFile(filepath.Join(dir, want))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out.Bytes(), golden) {
					t.Errorf("%s: got\n%s\nwant\n%s", want, out.String(), golden)
				}
			}
		})
	}
}
