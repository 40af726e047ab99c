package providers_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/redact"
)

// Every kind's secrets are split off its settings, the shown form says
// they are set, splitting the shown form again finds nothing, and merging
// gives back what was given.
func TestSplitSecrets(t *testing.T) {
	for _, tc := range []struct {
		kind       string
		settings   map[string]string
		secretKeys []string
	}{
		{"webhook", map[string]string{"url": "https://hooks.example.com/services/T0/B0/XYZSECRET", "secret": "s3cr3t",
			"list_url": "https://x.example/list?key=abcd1234", "count_url": "https://x.example/count", "page_size": "50",
			"secret_env": "HOOK_SECRET"}, []string{"url", "secret", "list_url"}},
		{"mastodon", map[string]string{"base_url": "https://bob:pw1234@social.example", "token": "tok1234", "visibility": "public"},
			[]string{"base_url", "token"}},
		{"github", map[string]string{"api_url": "https://api.github.com", "token": "ghp_abcd", "token_env": "GH", "repos": "a/b"},
			[]string{"token"}},
		{"discord", map[string]string{"url": "https://discord.com/api/webhooks/42/HOOKTOKEN", "bot_token": "bot1234", "channel_id": "7"},
			[]string{"url", "bot_token"}},
		{"webhook", map[string]string{"url": "http://u6:PW6pass@127.0.0.1:9/hook", "secret": "s3cr3t",
			"probe_url": "https://bob:pr0bepw@x.example/probe"}, []string{"url", "secret", "probe_url"}},
		{"webhook", map[string]string{"url": "https://TOKEN1234@hooks.example.com/T0/SECRET"}, []string{"url"}},
		{"webhook", map[string]string{"url": "https://x.example/", "list_url": "https://bob:pa^ss@x.example/list"}, []string{"list_url"}},
		{"email", map[string]string{"smtp_url": "smtps://mail.example:465", "from": "a@b.example", "username": "a", "password": "pw1234"}, []string{"password"}},
		{"email", map[string]string{"smtp_url": "smtps://mail.example:465", "from": "a@b.example", "imap_url": "imaps://u:imappw99@mail.example",
			"imap_username": "u", "imap_password": "imap1234"}, []string{"imap_url", "imap_password"}},
		{"matrix", map[string]string{"homeserver_url": "https://matrix.example", "token": "syt_1234", "rooms": "!a:b"}, []string{"token"}},
		{"slack", map[string]string{"token": "xoxb-1234", "channels": "C0TIDE"}, []string{"token"}},
		{"ntfy", map[string]string{"base_url": "https://ntfy.sh", "token": "tk_abcd", "topics": "a,b"}, []string{"token"}},
		{"webhook", map[string]string{"url": "https://x.example/", "my_password": "hunter22", "api_key": "k1234"},
			[]string{"my_password", "api_key"}},
		// Passwords url.Parse refuses unencoded, in every URL setting,
		// declared or only named like one; a value that is no URL at all
		// is hidden whole.
		{"webhook", map[string]string{"url": "https://x.example/", "list_url": "http://u:SECRET/SL111@127.0.0.1:23471/l",
			"probe_url": "http://u:SECRET#H111@127.0.0.1:23471/p", "count_url": "notaurl SECRETCNT1",
			"target_url": "http://u:SECRET\"DQ111@127.0.0.1/t?key=SECRETQ111", "extra_url": "https://u:SECRET SP111@x.example/e"},
			[]string{"list_url", "probe_url", "count_url", "target_url", "extra_url"}},
		{"github", map[string]string{"api_url": "::SECRETGHBAD1", "token": "ghp_abcd"}, []string{"api_url", "token"}},
		{"discord", map[string]string{"url": "https://discord.com/api/webhooks/42/HOOKTOKEN", "api_url": "https://u:SECRET?Q111@discord.example/api"},
			[]string{"url", "api_url"}},
		{"webhook", map[string]string{"url": "https://x.example/", "count_url": "http://u:SECRETCNT2@[::1/x?key=SECRETCNTQ2"}, []string{"count_url"}},
	} {
		shown, secret := providers.Split(tc.kind, tc.settings)
		if got := sortedKeys(secret); strings.Join(got, ",") != strings.Join(sortedStrings(tc.secretKeys), ",") {
			t.Errorf("%s: secret keys %v, want %v", tc.kind, got, tc.secretKeys)
		}
		for k, v := range secret {
			if shown[k] == v || !strings.Contains(shown[k], redact.Marker) {
				t.Errorf("%s: shown %s = %q for secret %q", tc.kind, k, shown[k], v)
			}
		}
		if all := strings.Join(mapsValues(shown), " "); strings.Contains(all, "111") || strings.Contains(all, "SECRETCNT") {
			t.Errorf("%s: shown settings %q", tc.kind, all)
		}
		for _, v := range providers.Secrets(tc.kind).Values(tc.settings) {
			if len(v) >= 4 && strings.Contains(strings.Join(mapsValues(shown), " "), v) {
				t.Errorf("%s: shown settings contain %q", tc.kind, v)
			}
		}
		if again, more := providers.Split(tc.kind, shown); len(more) != 0 || !maps.Equal(again, shown) {
			t.Errorf("%s: splitting the shown form again: %v %v", tc.kind, again, more)
		}
		if back := provider.Merge(shown, secret); !maps.Equal(back, tc.settings) {
			t.Errorf("%s: merge %v, want %v", tc.kind, back, tc.settings)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sortedStrings(out)
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func mapsValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// A secret given with white space around it (which a receiver trims) is
// cleaned from an echo without it too.
func TestValuesHoldSecretsTrimmed(t *testing.T) {
	vals := providers.Secrets("slack").Values(map[string]string{"token": "  SEKRET-ws-111 ", "channels": "C0TIDE"})
	if got := redact.Text("auth failed for Bearer SEKRET-ws-111", vals...); strings.Contains(got, "SEKRET") {
		t.Errorf("Text = %q with %q", got, vals)
	}
}

// A URL setting whose value does not parse as an absolute URL is refused
// when a lane is added or changed, and the refusal shows it hidden.
func TestCheckSettingsRefusesAURLThatDoesNotParse(t *testing.T) {
	for _, tc := range []struct{ kind, key, value string }{
		{"webhook", "list_url", "http://u:SECRET/SL111@127.0.0.1:23471/l"},
		{"webhook", "probe_url", "http://u:SECRET#H111@127.0.0.1:23471/p"},
		{"webhook", "count_url", "notaurl SECRETCNT1"},
		{"webhook", "url", `https://u:SECRET"APIDQ111@hooks.example.com/x`},
		{"github", "api_url", "::SECRETGHBAD1"},
		{"slack", "api_url", "https://u:SECRET SP111@slack.example/api"},
	} {
		settings := map[string]string{"url": "https://hooks.example.com/x", "secret": "s3cr3t", "token": "tok1234", "channels": "C0TIDE", tc.key: tc.value}
		err := providers.CheckSettings(tc.kind, settings)
		if !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%s %s=%q: %v, want a refusal", tc.kind, tc.key, tc.value, err)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s %s=%q refused with %q", tc.kind, tc.key, tc.value, err)
		}
	}
}

// A lane whose secrets are kept apart builds only with them: the shown
// form never reaches a provider.
func TestNewNeedsTheSecretsKeptApart(t *testing.T) {
	shown, secret := providers.Split("webhook", map[string]string{"url": "https://hooks.example.com/T0/SECRETPATH", "secret": "s3cr3t"})
	l := outbox.Lane{LaneConfig: outbox.LaneConfig{Name: "hook", Provider: "webhook", Settings: shown}}
	if _, err := providers.New(l, nil); !errors.Is(err, tidemark.ErrInvalid) || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("New without the secrets: %v", err)
	}
	if _, err := providers.NewWithSecrets(l, secret, nil); err != nil {
		t.Fatalf("NewWithSecrets: %v", err)
	}
}

// The provider a lane gets is wrapped (redacting its errors, carrying its
// guarantee); the wrapper must not hide what the deliverer asks of the
// provider: how long a write may take, and which targets its listing reads.
func TestTheWrapperHidesNothingTheDelivererAsks(t *testing.T) {
	t.Setenv("TIDEMARK_WEBHOOK_SECRET", "s3cr3t")
	build := func(kind string, settings map[string]string) provider.Provider {
		t.Helper()
		shown, secrets := providers.Split(kind, settings)
		p, err := providers.NewWithSecrets(outbox.Lane{LaneConfig: outbox.LaneConfig{Name: "l", Provider: kind, Settings: shown}}, secrets, nil)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		return p
	}
	hook := build("webhook", map[string]string{"url": "https://x.example/hook", "timeout": "45s"})
	if b, ok := hook.(provider.Bounded); !ok || b.WriteBound() != 45*time.Second {
		t.Errorf("a webhook lane with timeout=45s: bound %v (forwarded: %v)", b, ok)
	}
	// The scope a server keeps idempotency keys in: the token (Matrix) or
	// the account (Mastodon) a lane sends with.
	for _, tc := range []struct {
		kind  string
		a, b  map[string]string // two lanes whose keys live apart
		same  map[string]string // a lane whose keys live with a's
		token string
	}{
		{"matrix", map[string]string{"homeserver_url": "https://m.example", "token": "tok-1"}, map[string]string{"homeserver_url": "https://m.example", "token": "tok-2"},
			map[string]string{"homeserver_url": "https://m.example/", "token": "tok-1", "rooms": "!a:m.example"}, "tok-1"},
		{"mastodon", map[string]string{"base_url": "https://social.example", "token": "tok-1"}, map[string]string{"base_url": "https://other.example", "token": "tok-1"},
			map[string]string{"base_url": "https://social.example", "token": "tok-1", "visibility": "unlisted"}, "tok-1"},
	} {
		scope := func(settings map[string]string) string {
			t.Helper()
			k, ok := build(tc.kind, settings).(provider.KeyScoped)
			if !ok {
				t.Fatalf("%s: the lane's provider does not name the scope its keys are kept in", tc.kind)
			}
			return k.KeyScope()
		}
		a, b, same := scope(tc.a), scope(tc.b), scope(tc.same)
		if a == "" || a == b || a != same {
			t.Errorf("%s: scopes %q, %q and %q: want the first two apart and the first and third equal", tc.kind, a, b, same)
		}
		if strings.Contains(a, tc.token) {
			t.Errorf("%s: scope %q shows the token", tc.kind, a)
		}
	}
	for _, tc := range []struct {
		kind          string
		settings      map[string]string
		read, notRead [][2]string // target, parent
	}{
		{"slack", map[string]string{"token": "xoxb-1", "channels": "C0AAAA1,C0AAAA2"}, [][2]string{{"C0AAAA1", ""}, {"C0AAAA2", "1.2"}}, [][2]string{{"C0AAAA3", ""}}},
		{"github", map[string]string{"token": "ghp_1", "repos": "acme/widgets"}, [][2]string{{"acme/widgets#1", ""}, {"Acme/Widgets#2", ""}}, [][2]string{{"acme/other#1", ""}}},
		{"ntfy", map[string]string{"topics": "changes"}, [][2]string{{"changes", ""}}, [][2]string{{"other", ""}}},
		{"matrix", map[string]string{"homeserver_url": "https://m.example", "token": "t", "rooms": "!a:m.example"}, [][2]string{{"!a:m.example", ""}}, [][2]string{{"!b:m.example", ""}}},
		{"webhook", map[string]string{"url": "https://x.example/hook", "list_url": "https://x.example/list"}, [][2]string{{"anything", ""}}, nil},
	} {
		p := build(tc.kind, tc.settings)
		cv, ok := p.(provider.Covering)
		if !ok {
			t.Errorf("%s: the lane's provider does not say which targets its listing reads", tc.kind)
			continue
		}
		for _, x := range tc.read {
			if !cv.Covers(x[0], x[1]) {
				t.Errorf("%s %v: says its listing does not read %q", tc.kind, tc.settings, x[0])
			}
		}
		for _, x := range tc.notRead {
			if cv.Covers(x[0], x[1]) {
				t.Errorf("%s %v: says its listing reads %q", tc.kind, tc.settings, x[0])
			}
		}
	}
}

// A reconciliation's read stopped part-way is gone on from in a later
// pass only where the provider's cursor is a keyset that writes made or
// removed since cannot move (provider.Resumable): Mastodon's status id,
// Discord's message id, Matrix's pagination token, ntfy's topic index,
// IMAP's UID, the ts of the oldest Slack message read. GitHub's page
// numbers would skip a comment when one before it is deleted between
// passes, and a webhook receiver's cursor is its own: those read from the
// head every pass. The scope names the server, the account and
// the targets listed, and shows no secret.
func TestAListingIsResumedOnlyWhereItsCursorIsAKeyset(t *testing.T) {
	build := func(kind string, settings map[string]string) string {
		t.Helper()
		shown, secrets := providers.Split(kind, settings)
		p, err := providers.NewWithSecrets(outbox.Lane{LaneConfig: outbox.LaneConfig{Name: "l", Provider: kind, Settings: shown}}, secrets, nil)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		rs, ok := p.(provider.Resumable)
		if !ok {
			t.Fatalf("%s: the wrapper hides whether the listing can be resumed", kind)
		}
		return rs.ListScope()
	}
	email := func(extra map[string]string) map[string]string {
		m := map[string]string{"smtp_url": "smtp://mail.example:587", "from": "bot@example.org", "username": "bot", "password": "pw-1", "imap_url": "imaps://mail.example:993"}
		maps.Copy(m, extra)
		return m
	}
	for _, tc := range []struct {
		kind       string
		a, b, same map[string]string // b reads another listing than a; same reads a's
		secret     string
	}{
		{"mastodon", map[string]string{"base_url": "https://social.example", "token": "tok-1"}, map[string]string{"base_url": "https://social.example", "token": "tok-2"},
			map[string]string{"base_url": "https://social.example", "token": "tok-1", "visibility": "public"}, "tok-1"},
		{"discord", map[string]string{"url": "https://discord.example/api/webhooks/1/hook-1", "bot_token": "bot-1"}, map[string]string{"url": "https://discord.example/api/webhooks/1/hook-1", "bot_token": "bot-2"},
			map[string]string{"url": "https://discord.example/api/webhooks/1/hook-1", "bot_token": "bot-1", "target": "news"}, "bot-1"},
		{"matrix", map[string]string{"homeserver_url": "https://m.example", "token": "tok-1", "rooms": "!a:m.example"}, map[string]string{"homeserver_url": "https://m.example", "token": "tok-1", "rooms": "!a:m.example,!b:m.example"},
			map[string]string{"homeserver_url": "https://m.example", "token": "tok-1", "rooms": "!a:m.example"}, "tok-1"},
		{"ntfy", map[string]string{"topics": "changes", "token": "tk_1"}, map[string]string{"topics": "changes,other", "token": "tk_1"},
			map[string]string{"topics": "changes", "token": "tk_1", "title": "News"}, "tk_1"},
		{"email", email(nil), email(map[string]string{"sent_mailbox": "Archive"}), email(map[string]string{"from": "news@example.org"}), "pw-1"},
		{"slack", map[string]string{"token": "xoxb-1", "channels": "C0AAAA1"}, map[string]string{"token": "xoxb-1", "channels": "C0AAAA1,C0AAAA2"},
			map[string]string{"token": "xoxb-1", "channels": "C0AAAA1"}, "xoxb-1"},
	} {
		a, b, same := build(tc.kind, tc.a), build(tc.kind, tc.b), build(tc.kind, tc.same)
		if a == "" || a == b || a != same {
			t.Errorf("%s: listing scopes %q, %q and %q: want one, the first two apart and the first and third equal", tc.kind, a, b, same)
		}
		if strings.Contains(a, tc.secret) {
			t.Errorf("%s: scope %q shows a secret", tc.kind, a)
		}
	}
	for kind, settings := range map[string]map[string]string{
		"github":  {"token": "ghp_1", "repos": "acme/widgets"},
		"slack":   {"token": "xoxb-1"}, // no channels: no listing
		"webhook": {"url": "https://x.example/hook", "list_url": "https://x.example/list", "secret": "s"},
		"email":   {"smtp_url": "smtp://mail.example:587", "from": "bot@example.org", "password": "pw"}, // no sent mailbox: no listing
		"discord": {"url": "https://discord.example/api/webhooks/1/hook-1"},                             // no bot token: no listing
	} {
		if s := build(kind, settings); s != "" {
			t.Errorf("%s %v: listing scope %q; want none (read from the head every pass)", kind, settings, s)
		}
	}
}

// A lane's remote that echoes the Basic credentials it was sent (the
// base64 of a URL's user:password) has them cleaned from the error, as a
// plain echo is.
func TestProviderErrorsHideAnEchoedBasicCredential(t *testing.T) {
	const secret = "SEKRET-b64-180"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "ECHO auth=%s", r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	list := strings.Replace(srv.URL, "http://", "http://u:"+secret+"@", 1) + "/list"
	shown, secret2 := providers.Split("webhook", map[string]string{"url": srv.URL + "/hook", "list_url": list, "secret": "hmac-secret"})
	l := outbox.Lane{LaneConfig: outbox.LaneConfig{Name: "hook", Provider: "webhook", Settings: shown}}
	p, err := providers.NewWithSecrets(l, secret2, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.ListOwn(context.Background(), provider.ListQuery{})
	if err == nil || !strings.Contains(err.Error(), "ECHO auth=Basic "+redact.Marker) {
		t.Fatalf("list: %v; want the echo with its credential cleaned", err)
	}
	if b64 := base64.StdEncoding.EncodeToString([]byte("u:" + secret)); strings.Contains(err.Error(), b64) {
		t.Errorf("the error shows the Basic credential: %v", err)
	}
}
