// Package redact keeps secrets out of everything tidemark shows: the CLI,
// JSON, the API, the status pages, logs, and the error text it stores.
//
// A secret is replaced by Marker. URLs lose their userinfo password and
// their query values (where tokens travel; a database URL only those whose
// names say they are secrets, see DatabaseURL), and an opaque URL — one whose
// path is itself the credential, as in a chat webhook — keeps only its
// scheme and host. Text from elsewhere (an upstream's error message, which
// may echo what we sent) is cleaned by exact replacement of every known
// secret, and of any URL password it carries.
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Marker stands where a secret was.
const Marker = "•••"

// minSecretLen is the shortest value replaced in free text: replacing a
// one- or two-character "secret" everywhere would garble every message and
// reveal it by the gaps. Such secrets are refused where they are set.
const minSecretLen = 4

// URL returns u as it may be shown: without a userinfo password (or, for
// http(s), any user name), with
// every query value replaced, and, when opaque, without its path. A value
// that does not parse as a URL with a scheme and host is returned as
// Marker when opaque; otherwise, when it has a scheme (scheme://…), it is
// split as the most lenient parser would split it (see splitLoose) and
// shown without its password and query values: a password url.Parse
// refuses (one with a #, ?, /, space, " or ^) is a password all the same,
// and pgx connects with it. Anything else is shown as Text shows it.
//
// The shown form is shown as it is: URL(URL(u)) == URL(u). Whoever hides
// secrets again (a store seals its settings at every open) finds nothing
// new to hide, and never takes a shown form for the secret it stands for.
func URL(u string, opaque bool) string {
	return showURL(u, opaque, func(string) bool { return true })
}

// DatabaseURL returns a database URL as it may be shown: without its
// userinfo password, and with the values of only those query parameters
// that name a secret (password, sslpassword, a token…) replaced. A
// database URL's other parameters (sslmode, connect_timeout) are settings
// an operator needs to see, not secrets, unlike an arbitrary URL's query,
// where tokens travel under any name.
//
// A keyword/value connection string (host=db user=tm password=…), which
// libpq and pgx take too, keeps its keywords and loses the values of those
// that name a secret.
func DatabaseURL(u string) string {
	if !strings.Contains(u, "://") && keywordValue.MatchString(u) {
		var out strings.Builder
		last := 0
		for _, m := range keywordValue.FindAllStringSubmatchIndex(u, -1) {
			if key, value := u[m[4]:m[5]], m[6]; SecretName(key) {
				out.WriteString(u[last:value])
				out.WriteString(Marker)
				last = m[7]
			}
		}
		out.WriteString(u[last:])
		return out.String()
	}
	return showURL(u, false, SecretName)
}

// keywordValue matches one keyword=value pair of a libpq connection
// string: the value bare, or single-quoted with backslash escapes.
var keywordValue = regexp.MustCompile(`(^|\s)\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*('(?:[^'\\]|\\.)*'?|[^\s]*)`)

// SecretName reports whether a parameter called name holds a secret, by
// its name: a password, a secret, a token, a credential or an API key.
func SecretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"pass", "pwd", "secret", "token", "credential", "apikey", "api_key", "auth"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// showURL is URL with the query values hide names replaced.
func showURL(u string, opaque bool, hide func(name string) bool) string {
	p, err := parseShown(u)
	// A URL with no host (postgres:///db?host=/run/pg) still has a query.
	hostless := !opaque && strings.Contains(u, "://")
	if err != nil || p.Scheme == "" || (p.Host == "" && !hostless) {
		if opaque && u != "" {
			return Marker
		}
		l, ok := splitLoose(u)
		if !ok {
			return Text(u)
		}
		shown := l.shown(hide)
		if q, err := parseShown(shown); err == nil && q.Scheme != "" && (q.Host != "" || hostless) {
			// What is left parses: show it as a URL that parsed is shown,
			// so that the shown form is shown as it is.
			return showURL(shown, opaque, hide)
		}
		return shown
	}
	if p.User != nil {
		if _, has := p.User.Password(); has {
			p.User = url.UserPassword(p.User.Username(), Marker)
		} else if p.Scheme == "http" || p.Scheme == "https" {
			// A token rides as the user name: https://TOKEN@host/.
			p.User = url.User(Marker)
		}
	}
	if p.RawQuery != "" {
		q := p.Query()
		for k := range q {
			if hide(k) {
				q[k] = []string{Marker}
			}
		}
		p.RawQuery = encodeKeepMarker(q)
	}
	p.Fragment, p.RawFragment = "", ""
	if opaque && p.Path != "" && p.Path != "/" {
		p.Path, p.RawPath = "/"+Marker, ""
	}
	// url.URL.String escapes the marker; show it as it is.
	s := p.String()
	s = strings.ReplaceAll(s, url.PathEscape(Marker), Marker)
	s = strings.ReplaceAll(s, url.QueryEscape(Marker), Marker)
	return s
}

// parseShown parses u, which may be a shown form: Marker is not a
// character a URL's userinfo may hold, so where u does not parse as it is,
// it is parsed with Marker escaped, as URL writes it before showing it.
func parseShown(u string) (*url.URL, error) {
	p, err := url.Parse(u)
	if err != nil && strings.Contains(u, Marker) {
		if q, qerr := url.Parse(strings.ReplaceAll(u, Marker, url.PathEscape(Marker))); qerr == nil {
			return q, nil
		}
	}
	return p, err
}

// looseURL is a URL split as leniently as any parser may split it: the
// userinfo runs to the last @ (url.Parse, unlike pgx and libpq, stops it
// at the first / ? or #; pgx stops it at the first @), the user name to
// the first colon, and the query from the first ? after it. Every
// character a parser could take for the password is in password, so
// showing it hidden hides the password however it was written.
type looseURL struct {
	scheme                string // with "://"
	user, password        string
	hasUser, hasPassword  bool
	rest                  string // host, port and path
	query, fragment       string
	hasQuery, hasFragment bool
}

var schemePrefix = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://`)

// splitLoose splits u, which has a scheme followed by ://, as looseURL
// says; ok is false for anything else (a path, host:path, free text).
func splitLoose(u string) (l looseURL, ok bool) {
	pre := schemePrefix.FindString(u)
	if pre == "" {
		return l, false
	}
	l.scheme, u = pre, u[len(pre):]
	if at := strings.LastIndex(u, "@"); at >= 0 {
		l.hasUser = true
		l.user, l.password, l.hasPassword = strings.Cut(u[:at], ":")
		u = u[at+1:]
	}
	u, l.fragment, l.hasFragment = strings.Cut(u, "#")
	l.rest, l.query, l.hasQuery = strings.Cut(u, "?")
	return l, true
}

func (l looseURL) web() bool {
	s := strings.ToLower(l.scheme)
	return s == "http://" || s == "https://"
}

// shown is l without its password (or, for http(s), any user name, where
// a token rides), with the values of the query parameters hide names
// replaced, and without its fragment.
func (l looseURL) shown(hide func(name string) bool) string {
	var b strings.Builder
	b.WriteString(l.scheme)
	switch {
	case l.hasPassword:
		b.WriteString(l.user + ":" + Marker + "@")
	case l.hasUser && l.web():
		b.WriteString(Marker + "@")
	case l.hasUser:
		b.WriteString(l.user + "@")
	}
	b.WriteString(l.rest)
	if l.hasQuery {
		b.WriteString("?" + hideQuery(l.query, hide))
	}
	return b.String()
}

// queryPairs splits a raw query into its pairs, at & and at ; (which Go's
// url.ParseQuery refuses but many servers read as &), keeping each pair's
// separator after it.
func queryPairs(raw string) (pairs, seps []string) {
	for raw != "" {
		i := strings.IndexAny(raw, "&;")
		if i < 0 {
			pairs, seps = append(pairs, raw), append(seps, "")
			break
		}
		pairs, seps = append(pairs, raw[:i]), append(seps, raw[i:i+1])
		raw = raw[i+1:]
	}
	return pairs, seps
}

// queryValues returns the values of a raw query's parameters hide names,
// split as queryPairs splits it, unescaped (and as written, when that
// differs).
func queryValues(raw string, hide func(name string) bool) []string {
	var out []string
	pairs, _ := queryPairs(raw)
	for _, pair := range pairs {
		k, v, hasValue := strings.Cut(pair, "=")
		if !hasValue || v == "" || !hide(unescapeQuery(k)) {
			continue
		}
		out = append(out, v)
		if uv := unescapeQuery(v); uv != v {
			out = append(out, uv)
		}
	}
	return out
}

func unescapeQuery(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// hideQuery is a raw query with the values of the parameters hide names
// replaced by Marker, its pairs and separators as they were.
func hideQuery(raw string, hide func(name string) bool) string {
	pairs, seps := queryPairs(raw)
	var b strings.Builder
	for i, pair := range pairs {
		if k, _, hasValue := strings.Cut(pair, "="); hasValue && hide(unescapeQuery(k)) {
			pair = k + "=" + Marker
		}
		b.WriteString(pair + seps[i])
	}
	return b.String()
}

// passwordPieces returns pw and, when it holds a character some parser
// splits a URL at (@ / ? #), each piece between them: pgx takes
// postgres://u:pa@ss@host for the password "pa" and the host "ss@host",
// and echoes the host in its errors.
func passwordPieces(pw string) []string {
	out := []string{pw}
	if pieces := strings.FieldsFunc(pw, func(r rune) bool { return strings.ContainsRune("@/?#", r) }); len(pieces) > 1 {
		out = append(out, pieces...)
	}
	return out
}

func encodeKeepMarker(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		for _, v := range q[k] {
			if v != Marker {
				v = url.QueryEscape(v)
			}
			parts = append(parts, url.QueryEscape(k)+"="+v)
		}
	}
	return strings.Join(parts, "&")
}

// URLSecrets returns the pieces of u that URL hides: its password (and
// its pieces, see passwordPieces), its query values, its fragment, and
// (when opaque) its path segments, so that free text echoing one of them
// alone can be cleaned too.
func URLSecrets(u string, opaque bool) []string {
	all := func(string) bool { return true }
	p, err := url.Parse(u)
	if err != nil {
		out := []string{u}
		if l, ok := splitLoose(u); ok {
			if l.hasPassword {
				out = append(out, passwordPieces(l.password)...)
			}
			out = append(out, queryValues(l.query, all)...)
			if l.fragment != "" {
				out = append(out, l.fragment)
			}
		}
		return out
	}
	var out []string
	if p.User != nil {
		if pw, has := p.User.Password(); has {
			out = append(out, passwordPieces(pw)...)
		}
	}
	out = append(out, queryValues(p.RawQuery, all)...)
	if p.Fragment != "" {
		out = append(out, p.Fragment)
	}
	if opaque {
		out = append(out, strings.TrimPrefix(p.Path, "/"))
		out = append(out, strings.Split(p.Path, "/")...)
	}
	return out
}

// Credentials returns the credentials a URL carries: in its userinfo, the
// password, and for http(s) the user name too, where a token rides
// (https://TOKEN@host/); in its query, the values of the parameters named
// like credentials (CredentialParam), pairs separated by ; as by &. A URL
// url.Parse refuses is split as URL splits it to show it (splitLoose), so
// its password is returned all the same; a password is returned with the
// pieces another parser may split it into (passwordPieces).
func Credentials(u string) []string {
	p, err := url.Parse(u)
	if err != nil {
		l, ok := splitLoose(u)
		if !ok {
			return nil
		}
		out := queryValues(l.query, CredentialParam)
		if l.hasPassword {
			out = append(out, passwordPieces(l.password)...)
		}
		if l.hasPassword || l.hasUser && l.web() {
			out = append(out, l.user)
		}
		return out
	}
	out := queryValues(p.RawQuery, CredentialParam)
	if p.User == nil {
		return out
	}
	pw, has := p.User.Password()
	if has {
		out = append(out, passwordPieces(pw)...)
	}
	if has || p.Scheme == "http" || p.Scheme == "https" {
		out = append(out, p.User.Username())
	}
	return out
}

// DatabaseSecrets returns the secrets a database URL carries, for
// cleaning an error with Text: its password and the pieces a parser may
// split it into (passwordPieces), and the values of the parameters named
// like secrets (SecretName). Its user name is not one: DatabaseURL shows
// it, and the server's errors name it.
func DatabaseSecrets(u string) []string {
	l, ok := splitLoose(u)
	if !ok {
		return nil
	}
	var out []string
	if l.hasPassword {
		out = passwordPieces(l.password)
	}
	if p, err := url.Parse(u); err == nil && p.User != nil {
		if pw, has := p.User.Password(); has {
			out = append(out, passwordPieces(pw)...)
		}
		return append(out, queryValues(p.RawQuery, SecretName)...)
	}
	return append(out, queryValues(l.query, SecretName)...)
}

var (
	// userinfo matches a URL's userinfo with a password in free text:
	// scheme://user:pass@
	userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#@\s"'<>]*:[^/?#@\s"'<>]*@`)
	// webUser matches any userinfo of an http(s) URL: https://TOKEN@
	webUser = regexp.MustCompile(`((?i:https?)://)[^/?#@\s"'<>]+@`)
)

// Text returns s with every secret (longest first) replaced by Marker and
// the userinfo of every URL in it that carries a password, and of every
// http(s) URL, removed.
func Text(s string, secrets ...string) string {
	if s == "" {
		return s
	}
	ss := slices.Clone(secrets)
	var forms []string
	for _, sec := range ss {
		if len(sec) >= minSecretLen {
			forms = append(forms, echoedForms(sec)...)
		}
	}
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	for _, f := range slices.Compact(forms) {
		if len(f) >= minFoldLen {
			s = replaceFold(s, f)
		} else {
			s = strings.ReplaceAll(s, f, Marker)
		}
	}
	s = cleanEncoded(s, ss)
	s = userinfo.ReplaceAllString(s, "${1}"+Marker+"@")
	return webUser.ReplaceAllString(s, "${1}"+Marker+"@")
}

// echoedForms are the forms an upstream (or a Go error) echoes a secret
// in: as it is, URL-encoded (query or path), quoted as Go's %q quotes it,
// and escaped as a JSON string (with < > & as \u escapes, and with / as
// \/, as PHP and many Java stacks write it).
func echoedForms(sec string) []string {
	out := []string{sec, url.QueryEscape(sec), url.PathEscape(sec)}
	if q := strconv.Quote(sec); len(q) >= 2 {
		out = append(out, q[1:len(q)-1])
	}
	if j, err := json.Marshal(sec); err == nil && len(j) >= 2 {
		j = j[1 : len(j)-1]
		out = append(out, string(j), string(bytes.ReplaceAll(j, []byte("/"), []byte(`\/`))))
	}
	return out
}

// minFoldLen is the length from which a secret is cleaned in any letter
// case too: a token that long is spelled by no word by chance, while a
// short password ("post", a user's own name) folded would be masked in
// every word that spells it in any case, making messages unreadable and
// showing where the word stood. Shorter ones are cleaned as they are.
const minFoldLen = 12

// replaceFold replaces every occurrence of old in s, in any ASCII letter
// case (an upstream may echo a token lower-cased), by Marker.
func replaceFold(s, old string) string {
	ls, lo := asciiLower(s), asciiLower(old)
	if !strings.Contains(ls, lo) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(ls, lo)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i] + Marker)
		s, ls = s[i+len(lo):], ls[i+len(lo):]
	}
}

// asciiLower lowers ASCII letters only, so that byte offsets in the
// result are offsets in s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// base64Run matches a run of base64 (standard or URL-safe), its padding
// plain or percent-encoded: where a protocol's encoded credential would be
// echoed (SMTP AUTH PLAIN, HTTP Basic).
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{8,}(?:=|%3[Dd]){0,2}`)

// cleanEncoded replaces every base64 run of s that decodes to bytes
// holding one of secrets: a secret echoed in the form a protocol sent it
// ("\x00user\x00secret", "user:secret", the secret alone), whatever else
// the encoded bytes hold beside it.
func cleanEncoded(s string, secrets []string) string {
	var live []string
	for _, sec := range secrets {
		if len(sec) >= minSecretLen {
			live = append(live, sec)
		}
	}
	if len(live) == 0 {
		return s
	}
	return base64Run.ReplaceAllStringFunc(s, func(run string) string {
		raw := strings.TrimRight(strings.ReplaceAll(strings.ReplaceAll(run, "%3D", "="), "%3d", "="), "=")
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			b, err := enc.DecodeString(raw)
			if err != nil {
				continue
			}
			for _, sec := range live {
				if strings.Contains(string(b), sec) {
					return Marker
				}
			}
		}
		return run
	})
}

// Error is an error whose text is redacted. It unwraps to the original, so
// errors.Is and errors.As still see what it was; only its text changes.
type Error struct {
	Err  error
	Text string
}

func (e *Error) Error() string { return e.Text }
func (e *Error) Unwrap() error { return e.Err }

// Err returns err with its text redacted by Text, or err itself when there
// is nothing to hide.
func Err(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := Text(msg, secrets...)
	if red == msg {
		return err
	}
	return &Error{Err: err, Text: red}
}

// CredentialParam reports whether a URL query parameter called name
// carries a credential, by its name (case-insensitive): a token, a key, a
// password, a secret, a signature, an authorization, a JWT, a session.
// It is narrower than SecretName, which judges a database's parameters: a
// feed's "author" is not "auth". Names feeds use for ordinary values are
// not credentials even where one service uses them for a one-time value:
// "code" (a country's, a product's; OAuth's code is spent at its first
// use), "hash" (a digest, a commit) and "ticket" (Trac's timeline feeds
// take ticket=on; a CAS ticket is spent at its first use).
func CredentialParam(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "key", "sig", "pwd", "auth", "access_key", "accesskey", "private_key":
		return true
	}
	for _, w := range []string{"token", "secret", "passw", "apikey", "api_key", "api-key", "signature", "credential",
		"authoriz", "bearer", "jwt", "sessid", "sessionid", "session_id", "session-id"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	// A session's ID, not a list's kind of sessions (sessions=all) or a
	// session's type.
	return n == "session"
}

// QueryCredential returns the name of the first parameter of a raw query
// named like a credential (CredentialParam), its pairs split at ; as at &
// (many servers read both, where Go's url.ParseQuery drops a pair with a ;).
func QueryCredential(rawQuery string) (name string, ok bool) {
	pairs, _ := queryPairs(rawQuery)
	for _, pair := range pairs {
		k, _, _ := strings.Cut(pair, "=")
		if n := unescapeQuery(k); CredentialParam(n) {
			return n, true
		}
	}
	return "", false
}

// Location returns a source's location as it may be shown: a URL without
// its userinfo password (or, for http(s), any user name, where a token
// rides) and with the values of its credential parameters (CredentialParam)
// replaced; its other parameters choose what a feed lists, and are shown
// as they are. A location with nothing to hide, or that is not a URL (a
// path, git@host:path), is returned unchanged.
func Location(loc string) string {
	p, err := parseShown(loc)
	if err != nil {
		// A password url.Parse refuses is a password all the same.
		if l, ok := splitLoose(loc); ok {
			return l.shown(CredentialParam)
		}
		return loc
	}
	if p.Scheme == "" || p.Host == "" {
		return loc
	}
	out := loc
	if p.User != nil {
		if _, has := p.User.Password(); has || p.Scheme == "http" || p.Scheme == "https" {
			out = Text(out)
		}
	}
	if p.RawQuery == "" {
		return out
	}
	base, query, _ := strings.Cut(out, "?")
	query, frag, hasFrag := strings.Cut(query, "#")
	out = base + "?" + hideQuery(query, CredentialParam)
	if hasFrag {
		out += "#" + frag
	}
	return out
}
