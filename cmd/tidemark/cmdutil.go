package main

import (
	"io"
	"os"
	"os/user"

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
