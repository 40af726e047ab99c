package outbox

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestPlanGolden runs the offline planner over each case under
// testdata/plan and compares its JSON (the fixed contract), its readable
// report, or its error with the golden files.
func TestPlanGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/plan/*")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			unexec := filepath.Join(dir, "unexecutable.txt")
			if _, err := os.Stat(unexec); err != nil {
				unexec = ""
			}
			p, err := PlanFiles(filepath.Join(dir, "intents.jsonl"), filepath.Join(dir, "own.jsonl"), unexec)
			if err != nil {
				golden(t, filepath.Join(dir, "want.err"), []byte(err.Error()+"\n"))
				return
			}
			var js bytes.Buffer
			enc := json.NewEncoder(&js)
			enc.SetIndent("", "  ")
			if err := enc.Encode(p); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(dir, "want.json"), js.Bytes())
			var txt bytes.Buffer
			if err := p.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(dir, "want.txt"), txt.Bytes())
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
