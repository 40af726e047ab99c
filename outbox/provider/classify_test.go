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
