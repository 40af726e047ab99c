package tidemark

import "strings"

// ParseKeyValues reads settings given as key=value arguments of the flag
// named flag (for the error), keys and values trimmed. A malformed argument
// is refused without repeating it: a mistyped setting may hold a secret.
func ParseKeyValues(flag string, kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			return nil, Invalidf(flag, "", "want key=value, got an argument of %d characters without a key and '=' (not shown: it may hold a secret)", len(kv))
		}
		m[k] = strings.TrimSpace(v)
	}
	return m, nil
}
