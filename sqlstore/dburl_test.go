package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// keywordValue is a postgres:// URL as the keyword/value string libpq and
// pgx read just as well: host=… port=… user=… password=… dbname=… and its
// parameters.
func keywordValue(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := p.User.Password()
	kv := fmt.Sprintf("host=%s port=%s user=%s password='%s' dbname=%s", p.Hostname(), p.Port(), p.User.Username(), pw, strings.TrimPrefix(p.Path, "/"))
	for k, vs := range p.Query() {
		kv += " " + k + "=" + vs[0]
	}
	return kv
}

// A PostgreSQL connection string in keyword/value form (host=… dbname=…)
// is a database URL as a postgres:// one is: checked alike, opened alike,
// and its password never shown in a refusal.
func TestKeywordValueDatabaseString(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		url, want string // want: "" accepted, else a word of the refusal
	}{
		{"host=127.0.0.1 user=tidemark password=hunter2 dbname=d sslmode=disable", ""},
		{"  dbname=d host=/run/postgresql", ""},
		{"postgres://u:hunter2@h/d", ""},
		{"sqlite:x.db", ""},
		{"mysql://u:hunter2@h/d", "want sqlite:PATH"},
		{"x.db", "want sqlite:PATH"},
		{"sqlite:", "needs a file path"},
		{"host=h password=hunter2 sslmode=bogus", "sslmode"},
		{"host=h password='hunter2", "hunter2"}, // an unclosed quote is refused, not echoed
	} {
		err := sqlstore.CheckURL("--db", tc.url)
		var inv *tidemark.InvalidError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckURL(%q): %v, want it accepted", tc.url, err)
		case tc.want == "hunter2":
			if err == nil || !errors.As(err, &inv) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("CheckURL(%q): %v, want it refused without its password", tc.url, err)
			}
		case tc.want != "" && (err == nil || !errors.As(err, &inv) || inv.Field != "--db" || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2")):
			t.Errorf("CheckURL(%q): %v, want invalid --db saying %q without the password", tc.url, err, tc.want)
		}
	}

	// A server that is not there is an outage, not a form refused.
	_, err := sqlstore.Open(ctx, "host=127.0.0.1 port=1 user=u password=hunter2 dbname=d sslmode=disable connect_timeout=5", sqlstore.Options{})
	if !errors.Is(err, tidemark.ErrUnavailable) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("open with no server behind: %v, want unavailable without the password", err)
	}

	// With a server, it opens and migrates as the URL form does.
	kv := keywordValue(t, sqltest.NewPostgresURL(t))
	db, err := sqlstore.Open(ctx, kv, sqlstore.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", strings.Split(kv, " ")[0], err)
	}
	defer db.Close()
	if db.Dialect.Name != "postgres" {
		t.Fatalf("dialect %q, want postgres", db.Dialect.Name)
	}
	if _, err := db.Ingest().Sources(ctx); err != nil {
		t.Fatalf("list sources: %v", err)
	}
}

// A PostgreSQL server that refuses tidemark's credentials (a wrong
// password, an unknown role) is configuration to fix, as an object store
// or an LLM endpoint refusing them is: ErrRefused (exit 2), not an outage
// to wait out, and its message never shows the password.
func TestOpenWithWrongPasswordIsRefused(t *testing.T) {
	u, err := url.Parse(sqltest.NewPostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "not-the-password-1234")
	_, err = sqlstore.Open(context.Background(), u.String(), sqlstore.Options{})
	if !errors.Is(err, tidemark.ErrRefused) || tidemark.ExitCode(err) != tidemark.ExitInvalid || errors.Is(err, tidemark.ErrUnavailable) ||
		strings.Contains(err.Error(), "not-the-password-1234") {
		t.Fatalf("open with a wrong password: %v (exit %d), want refused credentials (exit %d) without the password",
			err, tidemark.ExitCode(err), tidemark.ExitInvalid)
	}
}
