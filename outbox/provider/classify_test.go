package provider_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox/provider"
)

func answer(status int, header ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return &http.Response{StatusCode: status, Header: h}
}

// A redirect answering a write says the resource is elsewhere: the write
// was not made here, and every attempt will be answered the same until
// the lane's target is changed, so it is a refusal of the lane's request
// that names where to (not an outcome unknown, which would be reconciled
// and sent again forever). 303 See Other is the exception: it points to
// the result of a request that was carried out, so the write may have
// been made.
func TestARedirectedWriteIsRefusedWithWhereTo(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		err := provider.ClassifyPost(answer(s, "Location", "https://api.example/repositories/42/issues/1/comments"), []byte(`{"message":"Moved Permanently"}`), now)
		var rej *provider.RejectedError
		if !errors.As(err, &rej) || rej.Unsendable() || !strings.Contains(rej.Body, "https://api.example/repositories/42/issues/1/comments") {
			t.Errorf("status %d: %v; want a refusal of the lane's request naming the new location", s, err)
		}
	}
	var unk *provider.UnknownError
	if err := provider.ClassifyPost(answer(http.StatusSeeOther, "Location", "/comments/7"), nil, now); !errors.As(err, &unk) {
		t.Errorf("303: %v; want outcome unknown", err)
	}
}

// GitHub answers its rate limits (the secondary one, and the primary one
// for some endpoints) with 403 and Retry-After or X-RateLimit-Remaining:
// 0. That is "later", as 429 is, never "the target cannot take it": the
// write did not land, and the lane waits rather than post into the limit.
func TestA403RateLimitIsLater(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	body := []byte(`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`)
	for _, c := range []struct {
		name string
		resp *http.Response
		want time.Duration
	}{
		{"Retry-After", answer(http.StatusForbidden, "Retry-After", "60"), time.Minute},
		{"Retry-After and remaining 0", answer(http.StatusForbidden, "Retry-After", "60", "X-RateLimit-Remaining", "0"), time.Minute},
		{"remaining 0 until the reset", answer(http.StatusForbidden, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1796084100"), 15 * time.Minute},
		{"remaining 0, no reset", answer(http.StatusForbidden, "X-RateLimit-Remaining", "0"), time.Minute},
		{"429 until the reset", answer(http.StatusTooManyRequests, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1796084100"), 15 * time.Minute},
	} {
		err := provider.ClassifyPost(c.resp, body, now)
		var ra *provider.RetryAfterError
		if !errors.As(err, &ra) || ra.After != c.want {
			t.Errorf("%s: %v; want retry after %s", c.name, err, c.want)
		}
	}
	// A 403 without them is still the target's verdict.
	if err := provider.ClassifyPost(answer(http.StatusForbidden, "X-RateLimit-Remaining", "4999"), []byte(`{"message":"locked"}`), now); !errors.Is(err, provider.ErrUnexecutable) {
		t.Errorf("a plain 403: %v", err)
	}
}

// The wait a 429 asks for is read from what each server sends when it
// sends no Retry-After: Matrix's retry_after_ms in the body
// (M_LIMIT_EXCEEDED), Mastodon's X-RateLimit-Reset as an ISO 8601 time.
func TestRateLimitWaitHints(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		resp *http.Response
		body string
		want time.Duration
	}{
		{"matrix retry_after_ms", answer(http.StatusTooManyRequests), `{"errcode":"M_LIMIT_EXCEEDED","error":"Too Many Requests","retry_after_ms":2500}`, 2500 * time.Millisecond},
		{"Retry-After wins", answer(http.StatusTooManyRequests, "Retry-After", "7"), `{"errcode":"M_LIMIT_EXCEEDED","retry_after_ms":2000}`, 7 * time.Second},
		{"mastodon reset", answer(http.StatusTooManyRequests, "X-RateLimit-Limit", "300", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "2026-12-01T03:00:00.000Z"), `{"error":"Too many requests"}`, 3 * time.Hour},
		{"no hint", answer(http.StatusTooManyRequests), `slow down`, time.Minute},
	} {
		err := provider.ClassifyPost(c.resp, []byte(c.body), now)
		var ra *provider.RetryAfterError
		if !errors.As(err, &ra) || ra.After != c.want {
			t.Errorf("%s: %v; want retry after %s", c.name, err, c.want)
		}
	}
}
