package web

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/tidemark/tidemark"
)

// Listen listens on addr, the value of setting (serve's --addr, the
// daemon's TIDEMARK_METRICS_ADDR), which every error names. An address that
// cannot be one (no port, a port out of range, a host that is not this
// machine's) is invalid input (exit 2); an address in use or refused by the
// system is unavailable (exit 5): the same command may work once the other
// server stops.
func Listen(setting, addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, tidemark.Invalidf(setting, addr, "want HOST:PORT, e.g. 127.0.0.1:8080 or :8080")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return nil, tidemark.Invalidf(setting, addr, "port %q is not a number from 0 to 65535", port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	switch {
	case err == nil:
		return ln, nil
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%s %s is in use (another server, or another tidemark on this host with the same %s?); stop it or choose another address: %w",
			setting, addr, setting, tidemark.ErrUnavailable)
	case errors.Is(err, os.ErrPermission):
		return nil, fmt.Errorf("%s %s: not permitted to listen there (ports below 1024 need privileges): %w", setting, addr, tidemark.ErrUnavailable)
	default:
		return nil, tidemark.Invalidf(setting, addr, "cannot listen there: %v", err)
	}
}
