package tidemark

import (
	"io"
	"time"

	"github.com/tidemark/tidemark/internal/fieldtext"
)

// Token is an access token to the server as stored: never its secret, only
// who it is, for the audit of what it did.
type Token struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// ErrUnauthenticated: the presented token or session is unknown, revoked
// or expired. It matches ErrNotFound so that nothing tells a guesser which
// of those it was.
// Its text says only that: not also "not found".
var ErrUnauthenticated error = notSignedIn{}

type notSignedIn struct{}

func (notSignedIn) Error() string        { return "tidemark: not signed in" }
func (notSignedIn) Is(target error) bool { return target == ErrNotFound }

// Tokens is a listing of tokens.
type Tokens []Token

// WriteText writes a table of the tokens: who, and when each was created,
// last used and revoked (never a secret: none is stored).
func (l Tokens) WriteText(w io.Writer) error {
	return fieldtext.Columns(w, l, "name", "created_at", "last_used_at", "revoked_at")
}
