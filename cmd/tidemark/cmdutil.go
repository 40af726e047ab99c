package main

import (
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/tidemark/tidemark"
)

// Helpers that many commands share.

// actor names the person behind an operator action, for the audit trail.
func actor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "operator"
}

// parseKeyValues reads the key=value pairs of a repeatable flag.
func parseKeyValues(flag string, kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			// Not repeated: a mistyped --setting may be a secret.
			return nil, tidemark.Invalidf(flag, "", "want key=value, got an argument of %d characters without a key and '=' (not shown: it may hold a secret)", len(kv))
		}
		m[k] = v
	}
	return m, nil
}

// openInput opens the file a command names, or stdin for "-".
func openInput(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, tidemark.Invalidf("FILE", path, "%v", err)
	}
	return fh, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
