package providers_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox/providers"
)

// A lane's settings that its remote would refuse (a Mastodon visibility it
// does not have, a GitHub since that is not ISO 8601, a Slack channel's
// name for its id, a Matrix alias for a room id) are refused when the lane
// is added or changed, naming the setting; a lane whose secret is held in
// an environment variable of another machine is not: its settings are
// checked as if the secret were there.
func TestCheckSettingsRefusesWhatTheRemoteWouldRefuse(t *testing.T) {
	for _, tc := range []struct {
		kind     string
		settings map[string]string
		field    string // "": accepted
	}{
		{"mastodon", map[string]string{"base_url": "https://m.example", "token": "t", "visibility": "friends"}, "visibility"},
		{"mastodon", map[string]string{"base_url": "https://m.example", "token": "t", "visibility": "private"}, ""},
		{"mastodon", map[string]string{"base_url": "https://m.example", "token_env": "TIDEMARK_TEST_UNSET_TOKEN", "visibility": "friends"}, "visibility"},
		{"mastodon", map[string]string{"base_url": "https://m.example", "token_env": "TIDEMARK_TEST_UNSET_TOKEN"}, ""},
		{"github", map[string]string{"token": "t", "since": "yesterday"}, "since"},
		{"github", map[string]string{"token": "t", "since": "2026-01-02T03:04:05Z"}, ""},
		{"github", map[string]string{"since": "2026-13-02"}, "since"},
		{"slack", map[string]string{"token": "t", "channels": "general"}, "channels"},
		{"slack", map[string]string{"channels": "C0AAAA1"}, ""},
		{"matrix", map[string]string{"homeserver_url": "https://mx.example", "token": "t", "rooms": "#room:mx.example"}, "rooms"},
		{"ntfy", map[string]string{"topics": "tm changes"}, "topics"},
		{"discord", map[string]string{"url": "https://discord.com/api/webhooks/1/tok", "bot_token_env": "TIDEMARK_TEST_UNSET_TOKEN"}, ""},
	} {
		err := providers.CheckSettings(tc.kind, tc.settings)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s %v: %v", tc.kind, tc.settings, err)
			}
			continue
		}
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s %v: want a refusal naming %s, got %v", tc.kind, tc.settings, tc.field, err)
		}
	}
}
