package tidemark

import "time"

// AuditEntry is one write made through the server (the console or the
// API), with who made it: the name of the token that signed the request.
// An entry is recorded before the write runs (Outcome "started") and
// finished with its outcome, so a write whose process died in between is
// still on record, as attempted.
type AuditEntry struct {
	ID      string    `json:"id"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`    // the token's name
	TokenID string    `json:"token_id"` // the token's ID (names are reused after a revocation)
	Action  string    `json:"action"`   // what was done: signin, signout, or the write's name
	Target  string    `json:"target"`   // what it was done to, e.g. the path written
	// Outcome is "started" until the write ends, then "ok" or the error
	// class of ExitClass ("invalid", "conflict", …).
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
}

// Audit outcomes besides the error classes.
const (
	AuditStarted = "started"
	AuditOK      = "ok"
)

// AuditFilter pages through the audit, newest first: entries strictly
// before (BeforeAt, BeforeID) when BeforeID is set. Limit 0 means 100.
type AuditFilter struct {
	Actor    string
	BeforeAt time.Time
	BeforeID string
	Limit    int
}
