package tidemark_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
)

func TestParseKeyValues(t *testing.T) {
	m, err := tidemark.ParseKeyValues("--config", []string{"branch=main", "expr=a=b", " depth = 3 "})
	if err != nil || len(m) != 3 || m["branch"] != "main" || m["expr"] != "a=b" || m["depth"] != "3" {
		t.Fatalf("%v, %v", m, err)
	}
	_, err = tidemark.ParseKeyValues("--config", []string{"token-s3cret"})
	if !errors.Is(err, tidemark.ErrInvalid) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a pair without '=' is refused without repeating it: %v", err)
	}
	_, err = tidemark.ParseKeyValues("--config", []string{" =s3cret"})
	if !errors.Is(err, tidemark.ErrInvalid) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a pair without '=' is refused without repeating it: %v", err)
	}
}
