package main

import (
	"encoding/json"
	"testing"
)

// token create --json gives every field the README lists for a token,
// those without a value as null, and the token itself.
func TestTokenCreateJSONHasEveryField(t *testing.T) {
	out, code := runCLI(t, "--home", t.TempDir(), "token", "create", "ci", "--json")
	var m map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
		t.Fatalf("token create --json: exit %d\n%s", code, out)
	}
	for _, k := range []string{"id", "name", "created_at", "last_used_at", "revoked_at", "token"} {
		if _, ok := m[k]; !ok {
			t.Errorf("token create --json lacks %q:\n%s", k, out)
		}
	}
	if m["last_used_at"] != nil || m["revoked_at"] != nil {
		t.Errorf("a new token: %v, want last_used_at and revoked_at null", m)
	}
}
