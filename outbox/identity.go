package outbox

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/tidemark/tidemark"
)

// Identity is what a provider can tell two writes apart by: where the write
// goes, what it answers, and what it says. It is unique per lane.
type Identity struct {
	Target     string `json:"target"`
	Parent     string `json:"parent,omitempty"`
	BodySHA256 string `json:"body_sha256"`
}

// Key is the identity as one comparable string.
func (id Identity) Key() string {
	return id.Target + "\x00" + id.Parent + "\x00" + id.BodySHA256
}

// BodySHA256 returns the lowercase hex SHA-256 of body.
func BodySHA256(body []byte) string { return tidemark.HashEvidence(body) }

// NewIdentity returns the identity of a write of body to target under parent.
func NewIdentity(target, parent string, body []byte) Identity {
	return Identity{Target: target, Parent: parent, BodySHA256: BodySHA256(body)}
}

// Validate checks an identity is complete.
func (id Identity) Validate() error {
	if strings.TrimSpace(id.Target) == "" {
		return tidemark.Invalidf("target", id.Target, "an intent needs a target")
	}
	if !isHexSHA256(id.BodySHA256) {
		return tidemark.Invalidf("body_sha256", id.BodySHA256, "want 64 lowercase hex digits")
	}
	return nil
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// IdempotencyKey is the key sent to providers that accept one. It is derived
// from the lane and the intent's identity only, so every attempt at the same
// intent — after a crash, by another process, a week later — presents the
// same key, and two intents never share one.
func IdempotencyKey(lane string, id Identity) string {
	return idempotencyKey(lane, id)
}

// CollisionKey is the idempotency key of an intent in StateCollision: its
// origin is part of it, so that, revived, it is not taken by the provider
// for the earlier intent with the same identity.
func CollisionKey(lane string, id Identity, channelID, pageID, summaryID string) string {
	return idempotencyKey(lane, id, "origin", channelID, pageID, summaryID)
}

func idempotencyKey(lane string, id Identity, origin ...string) string {
	h := sha256.New()
	for _, part := range append([]string{"tidemark-outbox-v1", lane, id.Target, id.Parent, id.BodySHA256}, origin...) {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "tm-" + hex.EncodeToString(h.Sum(nil))[:40]
}
