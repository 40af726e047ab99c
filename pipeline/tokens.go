package pipeline

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tidemark/tidemark"
)

// Issued is a token just created, with its secret: the only time the
// secret is known (only its SHA-256 is stored). It has every field a
// listed token has (tidemark.Token), never used and not revoked yet.
type Issued struct {
	Name       string     `json:"name"`
	ID         string     `json:"id"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	Token      string     `json:"token"`
}

// WriteText writes the secret alone on its line, for a script to take.
func (t Issued) WriteText(w io.Writer) error {
	_, err := fmt.Fprintln(w, t.Token)
	return err
}

// CreateToken creates an access token named name (who or what uses it).
func (p *Pipeline) CreateToken(ctx context.Context, name string) (Issued, error) {
	if err := p.checkOpen(ctx); err != nil {
		return Issued{}, err
	}
	secret, t, err := p.db.Auth().CreateToken(ctx, name)
	return Issued{Name: t.Name, ID: t.ID, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt, Token: secret}, err
}

// Tokens lists the access tokens (never their secrets).
func (p *Pipeline) Tokens(ctx context.Context) (tidemark.Tokens, error) {
	if err := p.checkOpen(ctx); err != nil {
		return tidemark.Tokens{}, err
	}
	return p.db.Auth().Tokens(ctx)
}

// RevokeToken revokes the named token and ends the browser sessions it
// opened. Revoking is idempotent: a token revoked already is returned as
// it is, with revokedNow false.
func (p *Pipeline) RevokeToken(ctx context.Context, name string) (t tidemark.Token, revokedNow bool, err error) {
	if err := p.checkOpen(ctx); err != nil {
		return tidemark.Token{}, false, err
	}
	return p.db.Auth().RevokeToken(ctx, name)
}
