package sqlstore

import (
	"context"
	"strings"
	"testing"
)

// Nothing sqlstore prints shows a database password: not the URL the
// daemons' start lines and run's "data:" line show, not the error of a
// URL it refuses or of a server it cannot reach, whatever form the
// password takes (userinfo, a password= or sslpassword= parameter, a
// keyword/value connection string).
func TestDatabaseURLNeverShowsAPassword(t *testing.T) {
	const pw, sslpw = "SEKRET-dbpass-74", "SEKRET-sslpass-75"
	for _, u := range []string{
		"postgres://tm:" + pw + "@127.0.0.1:1/tm?connect_timeout=1",
		"postgres://127.0.0.1:1/tm?password=" + pw + "&sslpassword=" + sslpw + "&connect_timeout=1",
		"host=127.0.0.1 port=1 user=tm password=" + pw + " dbname=tm",
	} {
		if got := (&DB{url: u}).URL(); strings.Contains(got, pw) || strings.Contains(got, sslpw) {
			t.Errorf("URL() = %q", got)
		}
		_, err := Open(context.Background(), u, Options{})
		if err == nil {
			t.Fatalf("open %s: no error", u)
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), sslpw) {
			t.Errorf("open: %v", err)
		}
	}
}

// A password with characters url.Parse refuses unencoded, or a raw @ that
// pgx splits at (taking the password's tail for the host, and echoing it
// in a lookup error), is hidden in the shown URL and in every error, whole
// and in pieces.
func TestDatabasePasswordsURLParseRefuses(t *testing.T) {
	for _, pw := range []string{"SEKRET#H7411", "SEKRET?Q7411", "SEKRET/SL7411", "SEKRET SP7411", `SEKRET"DQ7411`, "SEKRET@AT7411"} {
		u := "postgres://tm:" + pw + "@127.0.0.1:1/tm?connect_timeout=1"
		if got := (&DB{url: u}).URL(); strings.Contains(got, "SEKRET") || strings.Contains(got, "7411") {
			t.Errorf("URL() = %q", got)
		}
		_, err := Open(context.Background(), u, Options{})
		if err == nil {
			t.Fatalf("open %s: no error", u)
		}
		if strings.Contains(err.Error(), "SEKRET") || strings.Contains(err.Error(), "7411") {
			t.Errorf("open %q: %v", u, err)
		}
	}
}

// An error that names the database's user keeps it: a user name is not a
// secret, and DatabaseURL shows it.
func TestDatabaseErrorsKeepTheUserName(t *testing.T) {
	_, err := Open(context.Background(), "postgres://tmuser191:SEKRET?Q191@127.0.0.1:1/tm?connect_timeout=1", Options{})
	if err == nil || !strings.Contains(err.Error(), "tmuser191") || strings.Contains(err.Error(), "SEKRET") {
		t.Errorf("open: %v", err)
	}
}
