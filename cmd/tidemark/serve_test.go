package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/pipeline"
)

// token create prints a token once; the server takes it until token revoke.
func TestTokenCommands(t *testing.T) {
	home := t.TempDir()
	var out, errb strings.Builder
	if code := run([]string{"--home", home, "token", "create", "ci"}, &out, &errb); code != 0 {
		t.Fatalf("token create: exit %d\n%s%s", code, out.String(), errb.String())
	}
	token := strings.TrimSpace(out.String())
	if !strings.HasPrefix(token, "tmk_") || !strings.Contains(errb.String(), "shown this once") {
		t.Fatalf("token create printed %q / %q", token, errb.String())
	}
	if out, code := runCLI(t, "--home", home, "token", "create", "ci"); code != 4 {
		t.Fatalf("a second token named ci: exit %d\n%s", code, out)
	}
	out2, code := runCLI(t, "--home", home, "token", "list", "--json")
	if code != 0 || !strings.Contains(out2, `"name": "ci"`) || strings.Contains(out2, token) || strings.Contains(out2, strings.TrimPrefix(token, "tmk_")) {
		t.Fatalf("token list: exit %d\n%s", code, out2)
	}
	a := &app{cfg: pipeline.Defaults(), stdout: io.Discard, stderr: io.Discard}
	a.cfg.Home = home
	defer a.close()
	db, err := a.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Auth().Authenticate(context.Background(), token); err != nil {
		t.Fatalf("the printed token does not authenticate: %v", err)
	}
	if out, code := runCLI(t, "--home", home, "token", "revoke", "ci"); code != 0 {
		t.Fatalf("token revoke: exit %d\n%s", code, out)
	}
	if _, err := db.Auth().Authenticate(context.Background(), token); err == nil {
		t.Fatal("a revoked token authenticates")
	}
	// Revoking again is idempotent: exit 0, saying it was revoked already
	// and when, rather than that the token does not exist.
	if out, code := runCLI(t, "--home", home, "token", "revoke", "ci"); code != 0 || !strings.Contains(out, `token "ci" was revoked already, at 20`) || !strings.Contains(out, " UTC; nothing changed") {
		t.Fatalf("revoke a revoked token: exit %d\n%s", code, out)
	}
	if out, code := runCLI(t, "--home", home, "token", "revoke", "nobody"); code != 3 || !strings.Contains(out, `token "nobody"`) {
		t.Fatalf("revoke an unknown token: exit %d\n%s", code, out)
	}
}
