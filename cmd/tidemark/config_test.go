package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
)

// `tidemark config` shows every setting and where it came from, and never
// a secret or a database password.
func TestConfigShowsSettingsWithoutSecrets(t *testing.T) {
	t.Setenv("TIDEMARK_DB", "postgres://ops:hunter2@db.internal:5432/tidemark")
	t.Setenv("TIDEMARK_OPENAI_API_KEY", "sk-very-secret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-very-secret")
	out, code := runCLI(t, "--home", "/srv/tm", "config")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, secret := range []string{"hunter2", "sk-very-secret", "aws-very-secret"} {
		if strings.Contains(out, secret) {
			t.Fatalf("config shows %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "/srv/tm") || !strings.Contains(out, "--home") || !strings.Contains(out, "TIDEMARK_DB") {
		t.Fatalf("config does not say where values came from:\n%s", out)
	}
	js, code := runCLI(t, "config", "--json")
	var settings []struct{ Name, Value, From string }
	if code != 0 || json.Unmarshal([]byte(js), &settings) != nil || len(settings) < 10 {
		t.Fatalf("config --json: exit %d\n%s", code, js)
	}
}

// A setting that cannot be used is refused when a command starts, naming
// the variable.
func TestBadSettingIsRefusedAtStart(t *testing.T) {
	t.Setenv("TIDEMARK_OUTAGE_SPAN", "forever")
	out, code := runCLI(t, "--home", t.TempDir(), "source", "list")
	if code != tidemark.ExitInvalid || !strings.Contains(out, "TIDEMARK_OUTAGE_SPAN") {
		t.Fatalf("exit %d, want %d naming the variable:\n%s", code, tidemark.ExitInvalid, out)
	}
}

// A database password url.Parse refuses unencoded, which pgx connects
// with, is shown by neither config nor any command's --help default.
func TestHelpHidesADatabasePasswordURLParseRefuses(t *testing.T) {
	for _, pw := range []string{"SEKRET#H171", "SEKRET/SL171", `SEKRET"DQ171`} {
		t.Setenv("TIDEMARK_DB", "postgres://secrole:"+pw+"@127.0.0.1:1/tm?sslmode=disable")
		for _, args := range [][]string{{"source", "list", "--help"}, {"outbox", "lanes", "--help"}, {"config"}} {
			out, _ := runCLI(t, args...)
			if strings.Contains(out, "SEKRET") || strings.Contains(out, "171") {
				t.Errorf("%v with password %q shows it:\n%s", args, pw, out)
			}
		}
	}
}
