package content_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/internal/testbin"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// The crash tests kill the real tidemark binary at each failpoint of a
// migration and resume it with another process. The binary is built once.
var (
	binOnce    sync.Once
	binPath    string
	binErr     error
	binCleanup func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binCleanup != nil {
		binCleanup()
	}
	os.Exit(code)
}

func mustBinary(tb testing.TB) string {
	tb.Helper()
	binOnce.Do(func() {
		binPath, binCleanup, binErr = testbin.Build("tidemark-docs-test-", "github.com/tidemark/tidemark/cmd/tidemark")
	})
	if binErr != nil {
		tb.Fatal(binErr)
	}
	return binPath
}

// result is one finished tidemark process.
type result struct {
	code   int
	killed bool
	stdout string
	stderr string
}

func runTidemark(tb testing.TB, dbURL, failpoints string, args ...string) result {
	tb.Helper()
	cmd := exec.Command(mustBinary(tb), args...)
	home := tb.TempDir()
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "TIDEMARK_HOME="+home, "TIDEMARK_DB="+dbURL, "TIDEMARK_HOLDER=crash-test", "TIDEMARK_FAILPOINTS="+failpoints)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			r.killed = true
		}
	} else if err != nil {
		tb.Fatalf("tidemark %v: %v", args, err)
	}
	return r
}

const crashDocs = 30

type crashPoint struct {
	name string
	// nth picks which hit crashes, given the run's number of batches.
	nth func(batches int) int
}

func first(int) int        { return 1 }
func middle(b int) int     { return (b + 1) / 2 }
func batches(n, b int) int { return (n + b - 1) / b }

var crashPoints = []crashPoint{
	{"migrate.start.after-commit", first},
	{"migrate.claim.after-commit", first},
	{"migrate.batch.after-convert", middle},
	{"migrate.batch.before-flip", first},
	{"migrate.batch.before-commit", middle},
	{"migrate.batch.after-commit", middle},
}

// conversion is a field the matrix migrates, with the value every
// document must end with if its rule ran exactly once.
type conversion struct {
	field string
	to    content.FieldType
	want  func(i int) string
}

var conversions = []conversion{
	// Wrapped twice would be a block inside a block; the rule refuses
	// rich text, so a replay over converted values would fail the run.
	{"body", content.RichText, func(i int) string {
		return fmt.Sprintf(`[{"_type":"block","children":[{"_type":"span","text":"body %d"}]}]`, i)
	}},
	// text→number refuses its own output (a number is not text).
	{"price", content.Number, func(i int) string { return fmt.Sprintf("%d.5", i) }},
}

func TestMigrationCrashMatrix(t *testing.T) {
	mustBinary(t)
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for _, cp := range crashPoints {
			for _, size := range []int{1, 7, 100} {
				t.Run(fmt.Sprintf("%s/batch-%d", cp.name, size), func(t *testing.T) {
					crashAndResume(t, b, cp, size)
				})
			}
		}
	})
}

func crashAndResume(t *testing.T, b sqltest.Backend, cp crashPoint, size int) {
	ctx := context.Background()
	url := b.NewURL(t)
	db := sqltest.MustOpenURL(t, url, sqltest.NewEnv(7))
	st := db.Content()
	mustSeedThings(t, st, func(i int) (string, string) { return fmt.Sprintf("body %d", i), fmt.Sprintf("%d.5", i) })

	for _, conv := range conversions {
		spec := fmt.Sprintf("%s=crash@%d", cp.name, cp.nth(batches(crashDocs, size)))
		r := runTidemark(t, url, spec, "docs", "field", "set-type", "things", conv.field, string(conv.to), "--batch", fmt.Sprint(size))
		if !r.killed || !strings.Contains(r.stderr, "failpoint "+cp.name+": crash") {
			t.Fatalf("%s with %s: exit %d, want killed at the failpoint\nstdout: %s\nstderr: %s", conv.field, spec, r.code, r.stdout, r.stderr)
		}
		runs, err := st.Runs(ctx, content.RunFilter{Collection: "things"})
		if err != nil || len(runs) == 0 || runs[0].Field != conv.field {
			t.Fatalf("after the crash, runs: %+v %v", runs, err)
		}
		run := runs[0]
		crashes := 1
		for attempt := 0; run.Status.Open(); attempt++ {
			if attempt == 4 {
				t.Fatalf("run %s still %s after %d resumes", run.ID, run.Status, attempt)
			}
			// The first resume crashes again at the same point, if it
			// reaches it; a replay of a replay must hold too.
			again := ""
			if attempt == 0 {
				again = cp.name + "=crash@1"
			}
			r := runTidemark(t, url, again, "migrate", "resume", run.ID, "--json")
			if r.killed && again != "" {
				crashes++
			} else if r.code != 0 {
				t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if run, err = st.Run(ctx, run.ID); err != nil {
				t.Fatal(err)
			}
		}
		assertConvertedOnce(t, db, run, conv)
		t.Logf("%s→%s: %d crashes", conv.field, conv.to, crashes)
	}
	// Both migrations wrote exactly one version each on top of the import.
	for _, d := range mustDocs(t, st) {
		if d.Version != 3 {
			t.Fatalf("document %s at version %d, want 3 (create + one conversion per field)", d.ID, d.Version)
		}
	}
}

func jsonString(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

// mustSeedThings creates the collection things, whose text fields body and
// price document i sets to values(i), with crashDocs documents.
func mustSeedThings(tb testing.TB, st *sqlstore.ContentStore, values func(i int) (body, price string)) {
	tb.Helper()
	ctx := context.Background()
	if _, err := st.CreateCollection(ctx, "things", []content.Field{{Name: "body", Type: content.Text}, {Name: "price", Type: content.Text}}); err != nil {
		tb.Fatal(err)
	}
	i := 0
	if _, err := st.Import(ctx, "things", func() (content.Put, bool, error) {
		if i == crashDocs {
			return content.Put{}, false, nil
		}
		body, price := values(i)
		i++
		return content.Put{Set: content.Fields{"body": jsonString(body), "price": jsonString(price)}}, true, nil
	}); err != nil {
		tb.Fatal(err)
	}
	if docs := mustDocs(tb, st); len(docs) != crashDocs {
		tb.Fatalf("seeded %d documents, want %d", len(docs), crashDocs)
	}
}

func mustDocs(tb testing.TB, st *sqlstore.ContentStore) []content.Document {
	tb.Helper()
	docs, err := st.Documents(context.Background(), "things", "", crashDocs+1)
	if err != nil {
		tb.Fatal(err)
	}
	return docs
}

func assertConvertedOnce(t *testing.T, db *sqlstore.DB, run content.Run, conv conversion) {
	t.Helper()
	ctx := context.Background()
	st := db.Content()
	if run.Status != content.RunDone || run.Walked != crashDocs || run.Converted != crashDocs {
		t.Fatalf("run %s: status %s, walked %d, converted %d; want done with %d", run.ID, run.Status, run.Walked, run.Converted, crashDocs)
	}
	for i, d := range mustDocs(t, st) {
		if got, want := string(d.Fields[conv.field]), conv.want(i); got != want {
			t.Fatalf("document %d %s = %s, want %s (converted exactly once)", i, conv.field, got, want)
		}
	}
	// Exactly one conversion snapshot per document.
	var snapshots, distinct int
	if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT document_id) FROM document_versions WHERE run_id = $1 AND reason = 'migrate'`,
		run.ID).Scan(&snapshots, &distinct); err != nil {
		t.Fatal(err)
	}
	if snapshots != crashDocs || distinct != crashDocs {
		t.Fatalf("%d conversion snapshots over %d documents, want %d each once", snapshots, distinct, crashDocs)
	}
	// The type flipped once.
	var flips int
	if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM field_type_changes WHERE collection = 'things' AND field = $1`, conv.field).Scan(&flips); err != nil {
		t.Fatal(err)
	}
	c, err := st.Collection(ctx, "things")
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := c.Field(conv.field); flips != 1 || f.Type != conv.to {
		t.Fatalf("field %s: %d flips, type %s; want one flip to %s", conv.field, flips, f.Type, conv.to)
	}
}

// The operator's path through the CLI: a value that cannot convert fails
// the run with the collection consistent; fixing it and resuming completes
// the run; a second run that fails is aborted and everything is restored.
func TestMigrationFailFixResumeAbortCLI(t *testing.T) {
	mustBinary(t)
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		url := b.NewURL(t)
		dir := t.TempDir()
		file := filepath.Join(dir, "things.jsonl")
		var lines []string
		for i := range 12 {
			v := fmt.Sprint(i)
			if i == 8 {
				v = "eight"
			}
			lines = append(lines, fmt.Sprintf(`{"n":%q,"flag":%q}`, v, "maybe"))
		}
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun := func(args ...string) result {
			t.Helper()
			r := runTidemark(t, url, "", args...)
			if r.code != 0 {
				t.Fatalf("tidemark %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
			}
			return r
		}
		mustRun("docs", "collection", "create", "things", "--field", "n:text", "--field", "flag:text")
		mustRun("docs", "import", "things", file)

		r := runTidemark(t, url, "", "docs", "field", "set-type", "things", "n", "number", "--batch", "3", "--json")
		if r.code != 2 {
			t.Fatalf("set-type over a bad value: exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
		}
		var run content.Run
		if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
			t.Fatalf("run JSON: %v\n%s", err, r.stdout)
		}
		if run.Status != content.RunFailed || run.FailedValue != `"eight"` || !strings.Contains(r.stderr, run.FailedDocumentID) || !strings.Contains(r.stderr, "text→number") {
			t.Fatalf("failed run: %+v\nstderr: %s", run, r.stderr)
		}
		var doc content.Document
		if err := json.Unmarshal([]byte(mustRun("docs", "get", "things", run.FailedDocumentID, "--json").stdout), &doc); err != nil || doc.Version == 0 {
			t.Fatalf("docs get: %+v %v", doc, err)
		}
		if r := runTidemark(t, url, "", "docs", "put", "things", doc.ID, "--text", "n=8", "--base-version", fmt.Sprint(doc.Version+1)); r.code != 4 {
			t.Fatalf("put based on a version that does not exist: exit %d", r.code)
		}
		mustRun("docs", "put", "things", doc.ID, "--text", "n=8", "--base-version", fmt.Sprint(doc.Version))
		// A write based on the version the fix replaced is stale: refused
		// (exit 4), not merged; had it passed, the resume below would fail.
		if r := runTidemark(t, url, "", "docs", "put", "things", doc.ID, "--text", "n=eight", "--base-version", fmt.Sprint(doc.Version)); r.code != 4 {
			t.Fatalf("stale put: exit %d\n%s", r.code, r.stderr)
		}
		mustRun("migrate", "resume", run.ID)
		var docs []content.Document
		_ = json.Unmarshal([]byte(mustRun("docs", "list", "things", "--json").stdout), &docs)
		for i, d := range docs {
			if string(d.Fields["n"]) != fmt.Sprint(i) {
				t.Fatalf("after resume, doc %d n = %s", i, d.Fields["n"])
			}
		}

		// flag is "maybe" everywhere: the run fails on the first document,
		// with nothing converted; abort leaves everything as it was.
		r = runTidemark(t, url, "", "docs", "field", "set-type", "things", "flag", "boolean", "--batch", "5", "--json")
		if r.code != 2 {
			t.Fatalf("set-type flag: exit %d\n%s", r.code, r.stderr)
		}
		_ = json.Unmarshal([]byte(r.stdout), &run)
		mustRun("migrate", "abort", run.ID)
		var shown content.Run
		_ = json.Unmarshal([]byte(mustRun("migrate", "show", run.ID, "--json").stdout), &shown)
		if shown.Status != content.RunAborted {
			t.Fatalf("after abort: %+v", shown)
		}
		var coll struct {
			Fields []content.Field `json:"fields"`
		}
		_ = json.Unmarshal([]byte(mustRun("docs", "collection", "show", "things", "--json").stdout), &coll)
		if len(coll.Fields) != 2 || coll.Fields[0].Type != content.Number || coll.Fields[1].Type != content.Text {
			t.Fatalf("fields after abort: %+v", coll.Fields)
		}

		// --detach only records the run; `tidemark run` carries it out.
		_ = json.Unmarshal([]byte(mustRun("docs", "field", "set-type", "things", "flag", "richtext", "--detach", "--json").stdout), &run)
		if run.Status != content.RunRunning || run.Walked != 0 {
			t.Fatalf("detached run: %+v", run)
		}
		mustRun("run", "--once")
		_ = json.Unmarshal([]byte(mustRun("migrate", "show", run.ID, "--json").stdout), &shown)
		if shown.Status != content.RunDone || shown.Converted != 12 {
			t.Fatalf("detached run after run --once: %+v", shown)
		}
	})
}

// Abort after a partial conversion restores each converted document from
// its snapshot, surviving a crash between its batches.
func TestMigrationAbortCrashRestores(t *testing.T) {
	mustBinary(t)
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		url := b.NewURL(t)
		db := sqltest.MustOpenURL(t, url, sqltest.NewEnv(9))
		st := db.Content()
		mustSeedThings(t, st, func(i int) (string, string) {
			if i == 20 {
				return "b", "twenty"
			}
			return "b", fmt.Sprint(i)
		})
		r := runTidemark(t, url, "", "docs", "field", "set-type", "things", "price", "number", "--batch", "4", "--json")
		var run content.Run
		if err := json.Unmarshal([]byte(r.stdout), &run); err != nil || run.Status != content.RunFailed || run.Converted != 20 {
			t.Fatalf("set-type: %+v %v\n%s", run, err, r.stderr)
		}
		r = runTidemark(t, url, "migrate.restore.before-commit=crash@3", "migrate", "abort", run.ID)
		if !r.killed {
			t.Fatalf("abort with a crash armed: exit %d\n%s", r.code, r.stderr)
		}
		if run, _ = st.Run(ctx, run.ID); run.Status != content.RunAborting || run.Restored != 8 {
			t.Fatalf("after the crash: %+v", run)
		}
		if r := runTidemark(t, url, "", "migrate", "resume", run.ID); r.code != 0 {
			t.Fatalf("resume abort: exit %d\n%s", r.code, r.stderr)
		}
		run, _ = st.Run(ctx, run.ID)
		if run.Status != content.RunAborted || run.Restored != 20 {
			t.Fatalf("aborted: %+v", run)
		}
		for i, d := range mustDocs(t, st) {
			want := jsonString(fmt.Sprint(i))
			if i == 20 {
				want = jsonString("twenty")
			}
			if string(d.Fields["price"]) != string(want) {
				t.Fatalf("doc %d price = %s, want %s", i, d.Fields["price"], want)
			}
		}
		var restores int
		_ = db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM document_versions WHERE run_id = $1 AND reason = 'restore'`, run.ID).Scan(&restores)
		if restores != 20 {
			t.Fatalf("%d restore snapshots, want 20", restores)
		}
		c, _ := st.Collection(ctx, "things")
		if f, _ := c.Field("price"); f.Type != content.Text {
			t.Fatalf("type after abort: %s", f.Type)
		}
	})
}
