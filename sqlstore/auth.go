package sqlstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
)

// AuthStore keeps the server's access tokens and sign-in sessions. A token
// or session secret is shown once, when it is made, and only its SHA-256 is
// stored: a copy of the database signs nobody in.
type AuthStore struct{ db *DB }

// Auth returns the auth store over d.
func (d *DB) Auth() *AuthStore { return &AuthStore{db: d} }

// TokenPrefix starts every access token, so a leaked one is recognisable
// (secret scanners, logs) and a pasted session cookie is not mistaken for
// one.
const TokenPrefix = "tmk_"

func secretHash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// newSecret returns 256 bits from crypto/rand as text. Secrets are never
// drawn from an injected random source: a seeded source would make them
// guessable.
func newSecret() string {
	return strings.ToLower(rand.Text()) + strings.ToLower(rand.Text())
}

func validTokenName(name string) error {
	if name == "" || len(name) > 64 {
		return tidemark.Invalidf("token name", name, "want 1 to 64 characters")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '@') {
			return tidemark.Invalidf("token name", name, "use letters, digits and - _ . @")
		}
	}
	return nil
}

// CreateToken makes a token named name and returns its secret, the only
// time it is ever available. A name is unique among unrevoked tokens.
func (s *AuthStore) CreateToken(ctx context.Context, name string) (string, tidemark.Token, error) {
	if err := validTokenName(name); err != nil {
		return "", tidemark.Token{}, err
	}
	secret := TokenPrefix + newSecret()
	t := tidemark.Token{ID: s.db.IDs.New(), Name: name, CreatedAt: s.db.Clock.Now().UTC().Truncate(time.Millisecond)}
	_, err := s.db.w.ExecContext(ctx, `INSERT INTO auth_tokens (id, name, sha256, created_at) VALUES ($1, $2, $3, $4)`,
		t.ID, t.Name, secretHash(secret), ms(t.CreatedAt))
	if IsUniqueViolation(err) {
		return "", tidemark.Token{}, fmt.Errorf("a token named %q already exists (revoke it first): %w", name, tidemark.ErrConflict)
	}
	if err != nil {
		return "", tidemark.Token{}, fmt.Errorf("create token %q: %w", name, err)
	}
	return secret, t, nil
}

const tokenColumns = `id, name, created_at, last_used_at, revoked_at`

func scanToken(sc scanner) (tidemark.Token, error) {
	var (
		t             tidemark.Token
		created       int64
		used, revoked sql.NullInt64
	)
	if err := sc.Scan(&t.ID, &t.Name, &created, &used, &revoked); err != nil {
		return t, err
	}
	t.CreatedAt, t.LastUsedAt, t.RevokedAt = fromMS(created), fromNullMS(used), fromNullMS(revoked)
	return t, nil
}

// Tokens lists every token, revoked ones included, oldest first.
func (s *AuthStore) Tokens(ctx context.Context) ([]tidemark.Token, error) {
	return queryAll(ctx, s.db.db, scanToken, `SELECT `+tokenColumns+` FROM auth_tokens ORDER BY created_at, id`)
}

// HasTokens reports whether any unrevoked token exists.
func (s *AuthStore) HasTokens(ctx context.Context) (bool, error) {
	var n int
	err := s.db.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM auth_tokens WHERE revoked_at IS NULL`).Scan(&n)
	return n > 0, err
}

// RevokeToken revokes the unrevoked token named name and ends its
// sessions (revokedNow true). Revoking is idempotent: when every token of
// that name is revoked already, nothing changes and the one revoked last
// is returned as it is (revokedNow false). tidemark.ErrNotFound only when
// no token ever had the name.
func (s *AuthStore) RevokeToken(ctx context.Context, name string) (t tidemark.Token, revokedNow bool, err error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return tidemark.Token{}, false, err
	}
	defer tx.Rollback()
	t, err = scanToken(tx.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM auth_tokens WHERE name = $1 AND revoked_at IS NULL`+s.db.Dialect.LockRow, name))
	if errors.Is(err, sql.ErrNoRows) {
		return s.revokedToken(ctx, tx, name)
	}
	if err != nil {
		return tidemark.Token{}, false, err
	}
	now := s.db.Clock.Now()
	if err := exec1(ctx, tx, fmt.Errorf("token %q: revoked meanwhile: %w", name, tidemark.ErrConflict),
		`UPDATE auth_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`, t.ID, ms(now)); err != nil {
		return tidemark.Token{}, false, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM auth_sessions WHERE token_id = $1`, t.ID); err != nil {
		return tidemark.Token{}, false, err
	}
	if err := tx.Commit(); err != nil {
		return tidemark.Token{}, false, err
	}
	r := now.UTC().Truncate(time.Millisecond)
	t.RevokedAt = &r
	return t, true, nil
}

// revokedToken is the token named name that was revoked last.
func (s *AuthStore) revokedToken(ctx context.Context, tx *sql.Tx, name string) (tidemark.Token, bool, error) {
	t, err := scanToken(tx.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM auth_tokens
		WHERE name = $1 AND revoked_at IS NOT NULL ORDER BY revoked_at DESC, id DESC LIMIT 1`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return tidemark.Token{}, false, fmt.Errorf("token %q: %w", name, tidemark.ErrNotFound)
	}
	return t, false, err
}

// Authenticate returns the unrevoked token whose secret is secret, and
// records its use.
func (s *AuthStore) Authenticate(ctx context.Context, secret string) (tidemark.Token, error) {
	if !strings.HasPrefix(secret, TokenPrefix) {
		return tidemark.Token{}, tidemark.ErrUnauthenticated
	}
	t, err := scanToken(s.db.db.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM auth_tokens WHERE sha256 = $1 AND revoked_at IS NULL`, secretHash(secret)))
	if errors.Is(err, sql.ErrNoRows) {
		return tidemark.Token{}, tidemark.ErrUnauthenticated
	}
	if err != nil {
		return tidemark.Token{}, err
	}
	now := ms(s.db.Clock.Now())
	// Last use is for people deciding what to revoke; minute resolution
	// spares a write per request.
	if t.LastUsedAt == nil || now-ms(*t.LastUsedAt) >= time.Minute.Milliseconds() {
		if _, err := s.db.w.ExecContext(ctx, `UPDATE auth_tokens SET last_used_at = $2 WHERE id = $1`, t.ID, now); err != nil {
			return tidemark.Token{}, err
		}
	}
	return t, nil
}

// CreateSession opens a sign-in session for the token whose secret is
// secret, lasting ttl, and returns the session's own secret (the cookie).
// The sign-in is audited in the transaction that opens the session.
func (s *AuthStore) CreateSession(ctx context.Context, secret string, ttl time.Duration) (string, tidemark.Token, error) {
	if ttl <= 0 {
		return "", tidemark.Token{}, tidemark.Invalidf("session lifetime", ttl.String(), "must be positive")
	}
	t, err := s.Authenticate(ctx, secret)
	if err != nil {
		return "", tidemark.Token{}, err
	}
	sess := newSecret()
	now := s.db.Clock.Now()
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return "", tidemark.Token{}, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM auth_sessions WHERE expires_at <= $1`, ms(now)); err != nil {
		return "", tidemark.Token{}, err
	}
	// The token may be revoked between Authenticate and this insert; the
	// insert then matches nothing.
	if err := exec1(ctx, tx, tidemark.ErrUnauthenticated, `INSERT INTO auth_sessions (sha256, token_id, created_at, expires_at)
		SELECT $1, id, $3, $4 FROM auth_tokens WHERE id = $2 AND revoked_at IS NULL`,
		secretHash(sess), t.ID, ms(now), ms(now.Add(ttl))); err != nil {
		return "", tidemark.Token{}, err
	}
	if err := s.insertAudit(ctx, tx, tidemark.AuditEntry{At: now, Actor: t.Name, TokenID: t.ID, Action: "signin",
		Outcome: tidemark.AuditOK, Detail: "session for " + ttl.String()}, true); err != nil {
		return "", tidemark.Token{}, err
	}
	if err := tx.Commit(); err != nil {
		return "", tidemark.Token{}, err
	}
	return sess, t, nil
}

// Session returns the token behind an unexpired session.
func (s *AuthStore) Session(ctx context.Context, session string) (tidemark.Token, error) {
	if session == "" {
		return tidemark.Token{}, tidemark.ErrUnauthenticated
	}
	t, err := scanToken(s.db.db.QueryRowContext(ctx, `SELECT t.id, t.name, t.created_at, t.last_used_at, t.revoked_at
		FROM auth_sessions s JOIN auth_tokens t ON t.id = s.token_id
		WHERE s.sha256 = $1 AND s.expires_at > $2 AND t.revoked_at IS NULL`, secretHash(session), ms(s.db.Clock.Now())))
	if errors.Is(err, sql.ErrNoRows) {
		return tidemark.Token{}, tidemark.ErrUnauthenticated
	}
	return t, err
}

// EndSession ends a session (signing out), audited in the same
// transaction. Ending an unknown session is not an error: the caller is
// signed out either way, and nobody is recorded.
func (s *AuthStore) EndSession(ctx context.Context, session string) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	t, err := scanToken(tx.QueryRowContext(ctx, `SELECT t.id, t.name, t.created_at, t.last_used_at, t.revoked_at
		FROM auth_sessions s JOIN auth_tokens t ON t.id = s.token_id WHERE s.sha256 = $1`+s.db.Dialect.LockRow, secretHash(session)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := exec1(ctx, tx, fmt.Errorf("session ended meanwhile: %w", tidemark.ErrConflict),
		`DELETE FROM auth_sessions WHERE sha256 = $1`, secretHash(session)); err != nil {
		return err
	}
	if err := s.insertAudit(ctx, tx, tidemark.AuditEntry{At: s.db.Clock.Now(), Actor: t.Name, TokenID: t.ID,
		Action: "signout", Outcome: tidemark.AuditOK}, true); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *AuthStore) insertAudit(ctx context.Context, q execer, e tidemark.AuditEntry, ended bool) error {
	if e.ID == "" {
		e.ID = s.db.IDs.New()
	}
	var end any
	if ended {
		end = ms(e.At)
	}
	_, err := q.ExecContext(ctx, `INSERT INTO audit_log (id, at, actor, token_id, action, target, outcome, detail, ended_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, e.ID, ms(e.At), e.Actor, e.TokenID, e.Action, e.Target, e.Outcome, e.Detail, end)
	if err != nil {
		return fmt.Errorf("audit %s by %s: %w", e.Action, e.Actor, err)
	}
	return nil
}

// StartAudit records that the token tok is about to make a write (action
// on target) and returns the entry, outcome "started". It is committed
// before the write runs: a write that cannot be audited is not made.
func (s *AuthStore) StartAudit(ctx context.Context, tok tidemark.Token, action, target string) (tidemark.AuditEntry, error) {
	if tok.ID == "" || action == "" {
		return tidemark.AuditEntry{}, tidemark.Invalidf("audit entry", action, "needs a token and an action")
	}
	e := tidemark.AuditEntry{ID: s.db.IDs.New(), At: s.db.Clock.Now().UTC().Truncate(time.Millisecond), Actor: tok.Name,
		TokenID: tok.ID, Action: action, Target: target, Outcome: tidemark.AuditStarted}
	return e, s.insertAudit(ctx, s.db.db, e, false)
}

// FinishAudit records how a started write ended. An entry is finished
// once: finishing it again is a conflict.
func (s *AuthStore) FinishAudit(ctx context.Context, id, outcome, detail string) error {
	if outcome == "" || outcome == tidemark.AuditStarted {
		return tidemark.Invalidf("audit outcome", outcome, "want ok or an error class")
	}
	return exec1(ctx, s.db.w, fmt.Errorf("audit entry %s: unknown or already finished: %w", id, tidemark.ErrConflict),
		`UPDATE audit_log SET outcome = $2, detail = $3, ended_at = $4 WHERE id = $1 AND ended_at IS NULL`,
		id, outcome, shortText(detail, 1000), ms(s.db.Clock.Now()))
}

// AuditLog lists audit entries, newest first.
func (s *AuthStore) AuditLog(ctx context.Context, f tidemark.AuditFilter) ([]tidemark.AuditEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT id, at, actor, token_id, action, target, outcome, detail FROM audit_log WHERE ($1 = '' OR actor = $1)`
	args := []any{f.Actor, f.Limit}
	if f.BeforeID != "" {
		q += ` AND (at < $3 OR (at = $3 AND id < $4))`
		args = append(args, ms(f.BeforeAt), f.BeforeID)
	}
	q += ` ORDER BY at DESC, id DESC LIMIT $2`
	return queryAll(ctx, s.db.db, func(sc scanner) (e tidemark.AuditEntry, err error) {
		var at int64
		err = sc.Scan(&e.ID, &at, &e.Actor, &e.TokenID, &e.Action, &e.Target, &e.Outcome, &e.Detail)
		e.At = fromMS(at)
		return e, err
	}, q, args...)
}

func shortText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
