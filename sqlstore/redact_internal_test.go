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
