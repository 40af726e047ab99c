package redact_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/redact"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct {
		in     string
		opaque bool
		want   string
	}{
		{"https://example.org/feed", false, "https://example.org/feed"},
		{"https://bob:hunter22@example.org/feed", false, "https://bob:•••@example.org/feed"},
		{"https://example.org/x?token=abcd&page=2", false, "https://example.org/x?page=•••&token=•••"},
		{"https://hooks.example.com/services/T000/B000/XXXXSECRET", true, "https://hooks.example.com/•••"},
		{"https://hooks.example.com/", true, "https://hooks.example.com/"},
		{"https://TOKEN1234@example.org/x", false, "https://•••@example.org/x"},
		{"http://u6:PW6@127.0.0.1:9/hook", true, "http://u6:•••@127.0.0.1:9/•••"},
		{"https://TOKEN1234@hooks.example.com/T0/SECRET", true, "https://•••@hooks.example.com/•••"},
		{"https://bob:hunter22@example.org/x?token=abcd", false, "https://bob:•••@example.org/x?token=•••"},
		{"ssh://git@example.org/x.git", false, "ssh://git@example.org/x.git"},
		// A password url.Parse refuses in userinfo is hidden all the same.
		{"https://bob:pa^ss@example.org/x", false, "https://bob:•••@example.org/x"},
		{"https://bob:pa^ss@example.org/x", true, "•••"},
		{"not a url", true, "•••"},
		{"not a url", false, "not a url"},
	} {
		if got := redact.URL(tc.in, tc.opaque); got != tc.want {
			t.Errorf("URL(%q, %v) = %q, want %q", tc.in, tc.opaque, got, tc.want)
		}
		// The shown form is shown as it is: a store that hides a lane's
		// secrets again (each process does at open) must find nothing new
		// to hide, or it keeps the shown form in the secret's place.
		if again := redact.URL(tc.want, tc.opaque); again != tc.want {
			t.Errorf("URL(%q, %v) = %q: the shown form is not shown as it is", tc.want, tc.opaque, again)
		}
	}
}

func TestText(t *testing.T) {
	in := `upstream said: bad signature s3cr3t (escaped s3cr%2Bt) for https://bob:hunter22@example.org/x and git://u:p@h/r; also "tok" stays`
	got := redact.Text(in, "s3cr3t", "s3cr+t", "tok", "")
	for _, leak := range []string{"s3cr3t", "s3cr%2Bt", "hunter22", "u:p@"} {
		if strings.Contains(got, leak) {
			t.Errorf("Text left %q in %q", leak, got)
		}
	}
	if !strings.Contains(got, `"tok" stays`) || !strings.Contains(got, "https://•••@example.org/x") {
		t.Errorf("Text(%q) = %q", in, got)
	}
}

var errRoot = errors.New("root")

func TestErrKeepsTheChain(t *testing.T) {
	err := redact.Err(fmt.Errorf("call with s3cr3t: %w", errRoot), "s3cr3t")
	if strings.Contains(err.Error(), "s3cr3t") || !errors.Is(err, errRoot) {
		t.Fatalf("Err: %q, is root %v", err, errors.Is(err, errRoot))
	}
	plain := errors.New("nothing to hide")
	if redact.Err(plain, "s3cr3t") != plain {
		t.Fatal("Err wrapped an error with nothing to hide")
	}
}

func TestCredentials(t *testing.T) {
	for u, want := range map[string]string{
		"https://bob:pw12@example.org/x":  "pw12,bob",
		"https://TOKEN1234@example.org/x": "TOKEN1234",
		"ssh://git@example.org/x.git":     "",
		"ssh://git:pw12@example.org/x":    "pw12,git",
		"/local/path":                     "",
	} {
		if got := strings.Join(redact.Credentials(u), ","); got != want {
			t.Errorf("Credentials(%q) = %q, want %q", u, got, want)
		}
	}
	if got := redact.Text("clone https://TOKEN1234@example.org/x and ssh://git@example.org/y"); strings.Contains(got, "TOKEN1234") || !strings.Contains(got, "ssh://git@example.org/y") {
		t.Errorf("Text: %s", got)
	}
}

// A database URL keeps what is not a secret: its host, database and
// settings (sslmode, connect_timeout); only a password, in the userinfo or
// among the parameters, is hidden.
func TestDatabaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://ops:hunter2@db.internal:5432/tidemark?sslmode=require":                "postgres://ops:•••@db.internal:5432/tidemark?sslmode=require",
		"postgres://db.internal/t?password=hunter2&sslmode=verify-full&connect_timeout=5": "postgres://db.internal/t?connect_timeout=5&password=•••&sslmode=verify-full",
		"postgres://db.internal/t?sslpassword=k3yp4ss&application_name=tide+mark":         "postgres://db.internal/t?application_name=tide+mark&sslpassword=•••",
		"sqlite:/srv/tidemark/tidemark.db":                                                "sqlite:/srv/tidemark/tidemark.db",
	} {
		got := redact.DatabaseURL(in)
		if got != want {
			t.Errorf("DatabaseURL(%q) = %q, want %q", in, got, want)
		}
		if again := redact.DatabaseURL(got); again != got {
			t.Errorf("DatabaseURL(%q) = %q: the shown form is not shown as it is", got, again)
		}
	}
}

// A database URL in any form libpq and pgx take keeps its settings and
// loses its passwords: a URL with no host (a socket), and a keyword/value
// connection string, quoted values included.
func TestDatabaseURLInEveryForm(t *testing.T) {
	for in, want := range map[string]string{
		"postgres:///tidemark?host=/run/pg&password=hunter2":                       "postgres:///tidemark?host=%2Frun%2Fpg&password=•••",
		"host=127.0.0.1 port=5432 user=tm password=hunter2 dbname=tm":              "host=127.0.0.1 port=5432 user=tm password=••• dbname=tm",
		"host=db user=tm password='two words' sslpassword=k3yp4ss sslmode=require": "host=db user=tm password=••• sslpassword=••• sslmode=require",
		`user=tm password='it\'s' dbname=tm`:                                       "user=tm password=••• dbname=tm",
		"dbname=tm":                                                                "dbname=tm",
	} {
		got := redact.DatabaseURL(in)
		if got != want {
			t.Errorf("DatabaseURL(%q) = %q, want %q", in, got, want)
		}
		if again := redact.DatabaseURL(got); again != got {
			t.Errorf("DatabaseURL(%q) = %q: the shown form is not shown as it is", got, again)
		}
	}
}

// A source location is shown with its credentials hidden (a userinfo
// password or an http(s) user name, and the values of query parameters
// named like credentials) and everything else as it is: a feed's other
// parameters choose what it lists.
func TestLocation(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.org/feed?token=SEKRET":                         "https://example.org/feed?token=•••",
		"https://example.org/feed?category=go&API_Key=SEKRET&author=me": "https://example.org/feed?category=go&API_Key=•••&author=me",
		"https://example.org/cal.ics?key=SEKRET&sig=S2&X-Amz-Signature=S3&access_token=S4&private_token=S5&password=S6&secret=S7":
		//
		"https://example.org/cal.ics?key=•••&sig=•••&X-Amz-Signature=•••&access_token=•••&private_token=•••&password=•••&secret=•••",
		"https://u:SEKRET@example.org/x.git":   "https://•••@example.org/x.git",
		"https://SEKRET@example.org/x.git":     "https://•••@example.org/x.git",
		"https://example.org/feed?page=2&sort": "https://example.org/feed?page=2&sort",
		"git@github.com:o/r.git":               "git@github.com:o/r.git",
		"ssh://git@example.org/r.git":          "ssh://git@example.org/r.git",
		"/srv/docs":                            "/srv/docs",
	} {
		got := redact.Location(in)
		if got != want {
			t.Errorf("Location(%q) = %q, want %q", in, got, want)
		}
		if again := redact.Location(got); again != got {
			t.Errorf("Location(%q) = %q: the shown form is not shown as it is", got, again)
		}
	}
	for _, name := range []string{"token", "Token", "access_token", "api_key", "apikey", "key", "password", "secret", "sig", "signature", "X-Amz-Credential", "auth"} {
		if !redact.CredentialParam(name) {
			t.Errorf("%s is not taken for a credential", name)
		}
	}
	for _, name := range []string{"session", "PHPSESSID", "jsessionid", "session_id"} {
		if !redact.CredentialParam(name) {
			t.Errorf("%s is not taken for a credential", name)
		}
	}
	for _, name := range []string{"author", "category", "page", "monkey", "keyword", "q", "format", "sessions", "session_type"} {
		if redact.CredentialParam(name) {
			t.Errorf("%s is taken for a credential", name)
		}
	}
}

// An upstream that echoes a credential in the encoded form a protocol sent
// it (SMTP AUTH PLAIN's base64 of "\x00user\x00secret", HTTP Basic's
// base64 of "user:secret", or the secret's own base64, padded or not,
// URL-safe or percent-encoded) is cleaned as one that echoes it plain.
func TestTextCleansEncodedEchoes(t *testing.T) {
	const secret = "SEKRET-smtp-190"
	b64 := base64.StdEncoding.EncodeToString
	for name, echoed := range map[string]string{
		"AUTH PLAIN":              b64([]byte("\x00bob\x00" + secret)),
		"AUTH PLAIN with authzid": b64([]byte("bob\x00bob\x00" + secret)),
		"Basic":                   b64([]byte("u:" + secret)),
		"plain b64":               b64([]byte(secret)),
		"raw url b64":             base64.RawURLEncoding.EncodeToString([]byte("u:" + secret + "?>")),
		"percent":                 url.QueryEscape(b64([]byte("u:" + secret + "x"))),
	} {
		in := "535 5.7.8 auth failed for " + echoed + " (plain: |bob|x)"
		got := redact.Text(in, secret)
		if strings.Contains(got, echoed) || !strings.Contains(got, "535 5.7.8 auth failed for "+redact.Marker) {
			t.Errorf("%s: %q cleaned to %q", name, in, got)
		}
	}
	// Base64 that does not hide a secret is left alone.
	other := "ETag " + b64([]byte("just some bytes here"))
	if got := redact.Text(other, secret); got != other {
		t.Errorf("%q cleaned to %q", other, got)
	}
}

// A secret is cleaned in another letter case only when it is long enough
// to be a token nobody's words spell by chance: a short password (or a
// lane secret "post") masked wherever a word spells it in any case would
// make every message unreadable, and show where the word stood.
func TestTextFoldsTheCaseOfLongSecretsOnly(t *testing.T) {
	if got := redact.Text("POST https://hooks.example/x: 500, post again later", "post"); got != "POST https://hooks.example/x: 500, ••• again later" {
		t.Errorf("a short secret: %q", got)
	}
	const token = "xoxb-SEKRET-Token-1234567"
	if got := redact.Text("echo: bearer "+strings.ToLower(token), token); strings.Contains(strings.ToLower(got), "sekret") {
		t.Errorf("a long secret echoed lower-cased: %q", got)
	}
}
