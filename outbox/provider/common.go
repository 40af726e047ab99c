package provider

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/fetch/httpx"
)

// DefaultTimeout bounds every request of a provider whose config names no
// client.
const DefaultTimeout = 30 * time.Second

// HTTPDefaults fills what an HTTP provider's config leaves unset (a client
// with DefaultTimeout, the system clock) and returns the WriteClient its
// writes go through, built from that client: the one place a provider's
// New gets them, so none can send a write on its pooled client. The
// client the provider reads with is a copy of the one given whose
// redirects never carry the provider's token to another origin
// (httpx.CredentialsStayOnOrigin); the caller's client is not changed.
func HTTPDefaults(client **http.Client, clk *clock.Clock) *WriteClient {
	c := http.Client{Timeout: DefaultTimeout}
	if *client != nil {
		c = **client
	}
	c.CheckRedirect = httpx.CredentialsStayOnOrigin(c.CheckRedirect)
	*client = &c
	if *clk == nil {
		*clk = clock.System{}
	}
	return NewWriteClient(*client)
}

// NoProbe is embedded by a provider that cannot look one write up (its
// listing is the read): Probe answers ErrUnsupported. Its value is the
// provider's name, for the error.
type NoProbe string

// Probe implements Provider.
func (n NoProbe) Probe(context.Context, Write) (Probed, error) {
	return Probed{}, fmt.Errorf("%s: %w", string(n), ErrUnsupported)
}

// NoCount is embedded by a provider that has no counter of our writes:
// Count answers ErrUnsupported. Its value is the provider's name.
type NoCount string

// Count implements Provider.
func (n NoCount) Count(context.Context) (int64, error) {
	return 0, fmt.Errorf("%s: %w", string(n), ErrUnsupported)
}

// PageTargets is where a listing that reads several targets (rooms,
// channels, repositories) one after another, each page by page, stands:
// target Index, at the provider's page Token ("": its first page). As a
// cursor it is "" (the first target's first page), "i" or "i|token".
type PageTargets struct {
	Index int
	Token string
	n     int
}

// ParsePageTargets reads a cursor over n targets; kind names the provider
// in the error about a cursor it did not make.
func ParsePageTargets(kind, cursor string, n int) (PageTargets, error) {
	pt := PageTargets{n: n}
	if cursor == "" {
		return pt, nil
	}
	i, rest, _ := strings.Cut(cursor, "|")
	idx, err := strconv.Atoi(i)
	if err != nil || idx < 0 || idx >= n {
		return pt, fmt.Errorf("%s: bad cursor %q", kind, cursor)
	}
	pt.Index, pt.Token = idx, rest
	return pt, nil
}

// Next is the cursor after this page: the same target at token when it has
// more, else the next target's first page, else "" (the listing is done).
func (pt PageTargets) Next(more bool, token string) string {
	switch {
	case more:
		return strconv.Itoa(pt.Index) + "|" + token
	case pt.Index+1 < pt.n:
		return strconv.Itoa(pt.Index + 1)
	}
	return ""
}
