package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// errorLine is the line of out that says what was refused.
func errorLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "tidemark: ") {
			return l
		}
	}
	return ""
}

// A store location carrying credentials is refused by every command, the
// same way and before anything runs, given as a flag or a variable: not
// shown by config as if it could be used, nor used by source list.
func TestStoreWithCredentialsIsRefusedByEveryCommand(t *testing.T) {
	const loc = "s3://AKIDEXAMPLE:wJalrXUtnFEMI@bucket/p"
	home := t.TempDir()
	var first string
	for _, args := range [][]string{{"config"}, {"config", "--json"}, {"source", "list"}, {"publish"}} {
		for _, viaEnv := range []bool{false, true} {
			argv := append([]string{"--home", home, "--store", loc}, args...)
			want := "--store"
			if viaEnv {
				t.Setenv("TIDEMARK_STORE", loc)
				argv, want = append([]string{"--home", home}, args...), "TIDEMARK_STORE"
			} else {
				t.Setenv("TIDEMARK_STORE", "")
			}
			out, code := runCLI(t, argv...)
			line := errorLine(out)
			if code != tidemark.ExitInvalid || !strings.Contains(line, "invalid "+want) || !strings.Contains(line, "carries no credentials") {
				t.Fatalf("%v (env %v): exit %d, want %d refusing %s\n%s", args, viaEnv, code, tidemark.ExitInvalid, want, out)
			}
			if strings.Contains(out, "AKIDEXAMPLE") || strings.Contains(out, "wJalrXUtnFEMI") {
				t.Fatalf("%v: the refusal shows the credentials:\n%s", args, out)
			}
			line = strings.Replace(line, want, "FROM", 1)
			if first == "" {
				first = line
			} else if line != first {
				t.Fatalf("%v (env %v) refuses as %q, another command as %q", args, viaEnv, line, first)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(home, "tidemark.db")); !os.IsNotExist(err) {
		t.Fatalf("a refused command made the database: %v", err)
	}
}

// A database URL every command refuses, config refuses too; a PostgreSQL
// keyword/value string (host=… dbname=…), which the README says is hidden
// like a URL, is accepted by every command.
func TestDatabaseStringFormsAreJudgedAlikeByEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"config"}, {"source", "list"}} {
		out, code := runCLI(t, append([]string{"--home", t.TempDir(), "--db", "mysql://u:hunter2@h/d"}, args...)...)
		if code != tidemark.ExitInvalid || !strings.Contains(errorLine(out), "invalid --db") || strings.Contains(out, "hunter2") {
			t.Fatalf("%v with a mysql:// URL: exit %d, want %d refusing --db\n%s", args, code, tidemark.ExitInvalid, out)
		}
	}

	u, err := url.Parse(sqltest.NewPostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	kv := "host=" + u.Hostname() + " port=" + u.Port() + " user=" + u.User.Username() + " password=" + pw +
		" dbname=" + strings.TrimPrefix(u.Path, "/") + " sslmode=disable search_path=" + u.Query().Get("search_path")
	home := t.TempDir()
	for _, args := range [][]string{{"config"}, {"source", "add", "--name", "d", t.TempDir()}, {"source", "list"}} {
		out, code := runCLI(t, append([]string{"--home", home, "--db", kv}, args...)...)
		if code != 0 {
			t.Fatalf("%v with a keyword/value string: exit %d\n%s", args, code, out)
		}
		if args[0] == "source" && args[1] == "list" && !strings.Contains(out, "d ") {
			t.Fatalf("source list does not list the source added:\n%s", out)
		}
	}
}
