package web

import (
	"errors"
	"testing"

	"github.com/tidemark/tidemark"
)

// An address that cannot be one is invalid input; one in use is
// unavailable (the same command may work later).
func TestListen(t *testing.T) {
	for _, addr := range []string{"8080", "127.0.0.1:99999", "127.0.0.1:http2"} {
		if _, err := Listen(addr); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("Listen(%q): %v, want invalid", addr, err)
		}
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Listen(ln.Addr().String()); !errors.Is(err, tidemark.ErrUnavailable) {
		t.Errorf("an address in use: %v, want unavailable", err)
	}
}
