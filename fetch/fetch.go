// Package fetch holds what the source kinds under it share beyond HTTP
// (which is fetch/httpx): reading the bounds a source's config sets, and
// bounding item keys. Each
// kind lives in its own package (feed, page, jsonsrc, dir, git) and
// implements tidemark.Fetcher.
package fetch

import (
	"strconv"
	"strings"

	"github.com/tidemark/tidemark"
)

// DefaultMaxItems is the default bound on the items of one document for
// the kinds that read many (feed, json): a larger answer is invalid
// rather than half-read.
const DefaultMaxItems = 20000

// IntConfig reads a positive integer from a source's config, or def when
// the key is unset. Anything else is an *tidemark.InvalidError.
func IntConfig(cfg map[string]string, key string, def int64) (int64, error) {
	v := strings.TrimSpace(cfg[key])
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, tidemark.Invalidf("config "+key, v, "want a positive integer")
	}
	return n, nil
}

// MaxKeyBytes bounds an item key; ItemKey hashes longer identities.
const MaxKeyBytes = 512

// ItemKey is the item key for an upstream identity: the identity itself,
// or "sha256:" and its hash when it is longer than MaxKeyBytes.
func ItemKey(id string) string {
	if len(id) > MaxKeyBytes {
		return "sha256:" + tidemark.HashEvidence([]byte(id))
	}
	return id
}
