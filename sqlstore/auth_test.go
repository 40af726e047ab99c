package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A token is shown once and stored as its hash; it signs in until revoked,
// and a session it opened ends with it or when it expires.
func TestAuthTokensAndSessions(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(7)
		db := sqltest.MustOpen(t, b, env)
		auth := db.Auth()
		if ok, err := auth.HasTokens(ctx); err != nil || ok {
			t.Fatalf("HasTokens on a new database: %v %v", ok, err)
		}
		secret, tok, err := auth.CreateToken(ctx, "ops")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, sqlstore.TokenPrefix) || len(secret) < 50 {
			t.Fatalf("token secret %q: want %s and at least 256 bits", secret, sqlstore.TokenPrefix)
		}
		if _, _, err := auth.CreateToken(ctx, "ops"); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("second token named ops: %v, want conflict", err)
		}
		for _, bad := range []string{"", "a b", strings.Repeat("x", 65)} {
			if _, _, err := auth.CreateToken(ctx, bad); !errors.Is(err, tidemark.ErrInvalid) {
				t.Errorf("token name %q: %v, want invalid", bad, err)
			}
		}
		if ok, _ := auth.HasTokens(ctx); !ok {
			t.Fatal("HasTokens after create: false")
		}
		// Only the hash is stored.
		if n, err := db.CountForTest(ctx, "auth_tokens", "sha256", secret); err != nil || n != 0 {
			t.Fatalf("auth_tokens stores the secret itself: %d %v", n, err)
		}
		got, err := auth.Authenticate(ctx, secret)
		if err != nil || got.ID != tok.ID || got.Name != "ops" {
			t.Fatalf("Authenticate: %+v %v", got, err)
		}
		for _, bad := range []string{"", secret + "x", strings.TrimPrefix(secret, sqlstore.TokenPrefix)} {
			if _, err := auth.Authenticate(ctx, bad); !errors.Is(err, tidemark.ErrUnauthenticated) {
				t.Errorf("Authenticate(%q): %v, want unauthenticated", bad, err)
			}
		}
		sess, _, err := auth.CreateSession(ctx, secret, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := db.CountForTest(ctx, "auth_sessions", "sha256", sess); err != nil || n != 0 {
			t.Fatalf("auth_sessions stores the session itself: %d %v", n, err)
		}
		if _, _, err := auth.CreateSession(ctx, "tmk_nope", time.Hour); !errors.Is(err, tidemark.ErrUnauthenticated) {
			t.Fatalf("session for an unknown token: %v", err)
		}
		if got, err := auth.Session(ctx, sess); err != nil || got.Name != "ops" {
			t.Fatalf("Session: %+v %v", got, err)
		}
		env.Clock.Advance(2 * time.Hour)
		if _, err := auth.Session(ctx, sess); !errors.Is(err, tidemark.ErrUnauthenticated) {
			t.Fatalf("expired session: %v", err)
		}
		sess, _, err = auth.CreateSession(ctx, secret, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		revoked, now, err := auth.RevokeToken(ctx, "ops")
		if err != nil || !now || revoked.RevokedAt == nil {
			t.Fatalf("revoke: %v %v %+v", err, now, revoked)
		}
		if _, err := auth.Authenticate(ctx, secret); !errors.Is(err, tidemark.ErrUnauthenticated) {
			t.Fatalf("revoked token: %v", err)
		}
		if _, err := auth.Session(ctx, sess); !errors.Is(err, tidemark.ErrUnauthenticated) {
			t.Fatalf("session of a revoked token: %v", err)
		}
		// Revoking is idempotent: a second revocation changes nothing and
		// answers the token with the time it was revoked first.
		env.Clock.Advance(time.Hour)
		again, now, err := auth.RevokeToken(ctx, "ops")
		if err != nil || now || again.ID != revoked.ID || again.RevokedAt == nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
			t.Fatalf("revoke twice: %v %v %+v, want the first revocation %+v", err, now, again, revoked)
		}
		if _, _, err := auth.RevokeToken(ctx, "nobody"); !errors.Is(err, tidemark.ErrNotFound) || !strings.Contains(err.Error(), `"nobody"`) {
			t.Fatalf("revoke an unknown token: %v", err)
		}
		// The name is free again; the revoked token stays listed.
		if _, _, err := auth.CreateToken(ctx, "ops"); err != nil {
			t.Fatal(err)
		}
		ts, err := auth.Tokens(ctx)
		if err != nil || len(ts) != 2 || ts[0].RevokedAt == nil || ts[1].RevokedAt != nil {
			t.Fatalf("Tokens: %+v %v", ts, err)
		}
	})
}

// A database URL's password is never repeated in an error about it.
func TestOpenErrorHidesThePassword(t *testing.T) {
	for _, u := range []string{"mysql://bob:hunter22@db.example/x", "postgres://bob:hunter22@127.0.0.1:1/x?connect_timeout=1"} {
		_, err := sqlstore.Open(context.Background(), u, sqlstore.Options{})
		if err == nil || strings.Contains(err.Error(), "hunter22") {
			t.Errorf("Open(%s): %v", u, err)
		}
	}
}
