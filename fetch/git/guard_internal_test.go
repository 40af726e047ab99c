package git

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/tidemark/tidemark"
)

func TestParseRemote(t *testing.T) {
	for loc, want := range map[string]remote{
		"https://example.org/r.git":          {scheme: "https", host: "example.org"},
		"http://u@127.0.0.1:8080/r.git":      {scheme: "http", user: "u", host: "127.0.0.1", port: "8080"},
		"ssh://git@example.org:2222/o/r":     {scheme: "ssh", user: "git", host: "example.org", port: "2222"},
		"git+ssh://example.org/o/r":          {scheme: "ssh", host: "example.org"},
		"git://[::1]:9418/r.git":             {scheme: "git", host: "::1", port: "9418"},
		"file:///srv/r.git":                  {scheme: "file"},
		"git@example.org:o/r.git":            {scheme: "ssh", user: "git", host: "example.org"},
		"example.org:r.git":                  {scheme: "ssh", host: "example.org"},
		"me@[fe80::1%eth0]:r.git":            {scheme: "ssh", user: "me", host: "fe80::1%eth0"},
		"user@name@host.example.org:o/r.git": {scheme: "ssh", user: "user@name", host: "host.example.org"},
	} {
		got, err := parseRemote(loc)
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", loc, got, err, want)
		}
	}
	for _, loc := range []string{"ext::sh -c touch% /tmp/x", "fd::17", "ftp://example.org/r.git", "https:///r.git", ":r.git", "@:r"} {
		if _, err := parseRemote(loc); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", loc, err)
		}
	}
}

func TestPinURL(t *testing.T) {
	for _, tc := range []struct{ loc, ip, want string }{
		{"git://example.org/r.git", "93.184.216.34", "git://93.184.216.34/r.git"},
		{"git://example.org:9419/r.git", "93.184.216.34", "git://93.184.216.34:9419/r.git"},
		{"git://example.org/r.git", "2606:2800:220:1::1", "git://[2606:2800:220:1::1]/r.git"},
		{"git://example.org:1/~u/r.git", "2606:2800:220:1::1", "git://[2606:2800:220:1::1]:1/~u/r.git"},
	} {
		got, err := pinURL(tc.loc, netip.MustParseAddr(tc.ip))
		if err != nil || got != tc.want {
			t.Errorf("pin %s to %s: %q %v, want %q", tc.loc, tc.ip, got, err, tc.want)
		}
	}
}
