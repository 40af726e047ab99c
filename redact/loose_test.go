package redact_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/redact"
)

// Generated passwords hold characters url.Parse refuses unencoded in a
// userinfo (#, ?, /, a space, a quote) or splits at differently from pgx
// (a second @). Whatever the character, the shown form hides the whole
// password, keeps the host and the settings an operator needs, and
// Credentials still returns the password (and every piece another parser
// may split it into), so an error echoing it is cleaned.
func TestPasswordsURLParseRefuses(t *testing.T) {
	for _, pw := range []string{"SECRET#H111", "SECRET?Q111", "SECRET/SL111", "SECRET SP111", `SECRET"DQ111`, "SECRET@AT111", "SECRET%zzPC111", "SE#CR/ET?X@Y111"} {
		pieces := []string{"SECRET", "111"}
		db := "postgres://secrole:" + pw + "@127.0.0.1:5432/tidemark_secrets?sslmode=disable&password=PWQ2222"
		for name, shown := range map[string]string{
			"DatabaseURL": redact.DatabaseURL(db),
			"URL":         redact.URL("http://u:"+pw+"@127.0.0.1:23471/l?key=KEYQ2222", false),
			"s3 URL":      redact.URL("s3://u:"+pw+"@bucket/x", false),
		} {
			for _, leak := range append(pieces, "PWQ2222", "KEYQ2222") {
				if strings.Contains(shown, leak) {
					t.Errorf("%s with password %q: shown %q shows %q", name, pw, shown, leak)
				}
			}
			if !strings.Contains(shown, ":"+redact.Marker+"@") {
				t.Errorf("%s with password %q: shown %q has no hidden password", name, pw, shown)
			}
		}
		if got := redact.DatabaseURL(db); !strings.HasSuffix(got, "@127.0.0.1:5432/tidemark_secrets?sslmode=disable&password="+redact.Marker) &&
			!strings.HasSuffix(got, "@127.0.0.1:5432/tidemark_secrets?password="+redact.Marker+"&sslmode=disable") {
			t.Errorf("DatabaseURL with password %q = %q: want the host, database and sslmode shown", pw, got)
		}
		for _, shown := range []string{redact.DatabaseURL(db), redact.URL("http://u:"+pw+"@127.0.0.1:23471/l?key=K", false)} {
			if again := redact.URL(shown, false); again != shown && !strings.HasPrefix(shown, "postgres") {
				t.Errorf("URL(%q) = %q: the shown form is not shown as it is", shown, again)
			}
			if again := redact.DatabaseURL(shown); strings.HasPrefix(shown, "postgres") && again != shown {
				t.Errorf("DatabaseURL(%q) = %q: the shown form is not shown as it is", shown, again)
			}
		}
		creds := redact.Credentials(db)
		if !slices.Contains(creds, pw) {
			t.Errorf("Credentials(%q) = %q: the password is missing", db, creds)
		}
		// pgx splits at the first @ and echoes the rest as a host; a
		// parse error quotes the URL with %q.
		echoes := []string{fmt.Sprintf("cannot parse %q: invalid port", db), "sqlstore: open " + db}
		if strings.Contains(pw, "@AT111") {
			echoes = append(echoes, "failed to connect to `user=secrole database=tidemark_secrets`: hostname resolving error: lookup AT111@127.0.0.1: no such host")
		}
		for _, echo := range echoes {
			if got := redact.Text(echo, creds...); strings.Contains(got, "SECRET") || strings.Contains(got, "AT111") || strings.Contains(got, "H111") || strings.Contains(got, "DQ111") {
				t.Errorf("Text(%q) with the credentials of %q = %q", echo, db, got)
			}
		}
	}
	// A URL that does not parse has its query values hidden all the same.
	if got := redact.URL("http://u:SECRETCNT2@[::1/x?key=SECRETCNTQ2", false); strings.Contains(got, "SECRET") {
		t.Errorf("URL of an unparsable URL with a query = %q", got)
	}
}

// An upstream echoes what it was sent escaped for JSON (a / as \/), quoted
// as Go's %q does, or in another letter case: each is the secret all the same.
func TestTextCleansEscapedAndFoldedEchoes(t *testing.T) {
	for _, sec := range []string{"SECRET/JSON111", `SECRET"DQ-quote-111`, "SECRETLOWER111", "SE<CR>ET&amp-111", `BACK\SLASH-111`} {
		for _, echo := range []string{
			strings.ReplaceAll(sec, "/", `\/`),
			strconv.Quote(sec),
			strings.ToLower(sec),
			strings.ToUpper(sec),
			jsonString(sec),
		} {
			in := "401: {\"error\":\"bad token " + echo + "\"}"
			if got := redact.Text(in, sec); strings.Contains(strings.ToLower(got), "111") {
				t.Errorf("Text(%q, %q) = %q", in, sec, got)
			}
		}
	}
}

func jsonString(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<', '>', '&':
			fmt.Fprintf(&b, `\u%04x`, r)
		case '"', '\\':
			b.WriteString(`\` + string(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// A query parameter separated by ; is judged as one separated by &: many
// servers read both.
func TestLocationSemicolonPairs(t *testing.T) {
	got := redact.Location("https://example.org/feed?a=1;token=SECRETQ11")
	if strings.Contains(got, "SECRETQ11") {
		t.Errorf("Location = %q", got)
	}
	if got := redact.Credentials("https://example.org/feed?a=1;token=SECRETQ11"); !slices.Contains(got, "SECRETQ11") {
		t.Errorf("Credentials = %q", got)
	}
	for _, name := range []string{"authorization", "Authorization", "jwt", "id_jwt", "session", "sessionid", "session_id", "PHPSESSID", "jsessionid", "bearer"} {
		if !redact.CredentialParam(name) {
			t.Errorf("%s is not taken for a credential", name)
		}
	}
	for _, name := range []string{"code", "hash", "ticket", "lang", "country_code"} {
		if redact.CredentialParam(name) {
			t.Errorf("%s is taken for a credential", name)
		}
	}
}

// URLSecrets returns every piece URL hides, the fragment included: a
// provider's error that prints the URL it read is cleaned of it.
func TestURLSecretsHoldTheFragment(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:23471/probe#SECRETFRAG111", "http://u:p#w@127.0.0.1/probe#SECRETFRAG111"} {
		got := redact.Text("GET "+u+": 500", redact.URLSecrets(u, false)...)
		if strings.Contains(got, "SECRETFRAG111") {
			t.Errorf("Text with URLSecrets(%q) = %q", u, got)
		}
	}
}
