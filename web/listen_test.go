package web

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
)

// An address that cannot be one is invalid input; one in use is
// unavailable (the same command may work later). Each error names the
// setting the address came from (serve's --addr, the daemon's
// TIDEMARK_METRICS_ADDR), never another command's.
func TestListen(t *testing.T) {
	for _, setting := range []string{"--addr", "TIDEMARK_METRICS_ADDR"} {
		for _, addr := range []string{"8080", "127.0.0.1:99999", "127.0.0.1:http2"} {
			_, err := Listen(setting, addr)
			if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), setting) {
				t.Errorf("Listen(%q, %q): %v, want invalid, naming %s", setting, addr, err, setting)
			}
		}
		ln, err := Listen(setting, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Listen(setting, ln.Addr().String())
		ln.Close()
		if !errors.Is(err, tidemark.ErrUnavailable) || !strings.Contains(err.Error(), setting+" "+ln.Addr().String()+" is in use") {
			t.Errorf("an address in use: %v, want unavailable, naming %s", err, setting)
		}
		other := map[string]string{"--addr": "TIDEMARK_METRICS_ADDR", "TIDEMARK_METRICS_ADDR": "--addr"}[setting]
		if strings.Contains(err.Error(), other) || setting != "--addr" && strings.Contains(err.Error(), "tidemark serve") {
			t.Errorf("an address in use of %s: %q names another command's setting", setting, err)
		}
	}
}
