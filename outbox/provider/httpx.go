package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tidemark/tidemark"
)

// MaxResponseBytes bounds every response body a provider reads.
const MaxResponseBytes = 8 << 20

// GetJSON sends a read (GET or HEAD), checks for a 2xx, decodes the JSON
// body into v and returns the response's age headers. Transport failures,
// a non-2xx answer (*StatusError) and an answer that is not the JSON v
// wants are tidemark.ErrUnavailable: the lane's read failed. It refuses
// any other method: a write goes
// through a WriteClient, never through a pooled client that may replay it.
func GetJSON(ctx context.Context, c *http.Client, now func() time.Time, req *http.Request, v any) (Meta, *http.Response, error) {
	meta, resp, body, err := GetBody(ctx, c, now, req)
	if err != nil {
		return meta, resp, err
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			// The receiver's answer, not our failure (a mistyped URL, a
			// proxy's page, a receiver that does not speak the protocol):
			// the lane's read failed, as when a receiver cannot be reached
			// or refuses a write, and the message says what to check.
			return Meta{}, resp, fmt.Errorf("%s %s: the answer (%s) is not the JSON this read expects (%v): check the URL and the receiver: %w",
				req.Method, req.URL.Redacted(), contentType(resp), err, tidemark.ErrUnavailable)
		}
	}
	return meta, resp, nil
}

// GetBody is GetJSON without the decoding: it returns the body as read
// (at most MaxResponseBytes), for answers that are not one JSON value.
func GetBody(ctx context.Context, c *http.Client, now func() time.Time, req *http.Request) (Meta, *http.Response, []byte, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return Meta{}, nil, nil, fmt.Errorf("provider: %s %s: %w", req.Method, req.URL.Redacted(), ErrNotARead)
	}
	req = req.WithContext(ctx)
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	at := now()
	resp, err := c.Do(req)
	if err != nil {
		return Meta{}, nil, nil, fmt.Errorf("%s %s: %w: %w", req.Method, req.URL.Redacted(), tidemark.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	if err != nil {
		return Meta{}, resp, nil, fmt.Errorf("%s %s: read: %w: %w", req.Method, req.URL.Redacted(), tidemark.ErrUnavailable, err)
	}
	if resp.StatusCode/100 != 2 {
		snippet := string(body)
		if len(snippet) > 200 {
			snippet = snippet[:200]
		}
		se := &StatusError{Method: req.Method, URL: req.URL.Redacted(), Status: resp.StatusCode, Body: snippet}
		if s := resp.StatusCode; s == http.StatusTooManyRequests || s == http.StatusServiceUnavailable || s == http.StatusForbidden && rateLimited(resp.Header) {
			// A read asked to wait, as a write would be (ClassifyPost).
			se.Wait, _ = waitHint(resp.Header, body, now())
		}
		return MetaOf(at, resp), resp, nil, se
	}
	return MetaOf(at, resp), resp, body, nil
}

// StatusError is a non-2xx answer to a read.
type StatusError struct {
	Method, URL string
	Status      int
	Body        string
	// Wait is how long the answer asks us to wait before reading again
	// (429, 503 or a rate-limit 403 with a hint; 0: no hint).
	Wait time.Duration
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %s", e.Method, e.URL, e.Status, e.Body)
}

// Is makes every non-2xx answer to a read unavailability: a 5xx or 429
// is an outage, and any other is the receiver refusing the lane's read (a
// mistyped URL, a token it does not take), which fails the lane's read as
// a refused write fails its write, never tidemark's own failure. What the
// status means for a target (Closed) is read from the status itself.
func (e *StatusError) Is(target error) bool { return target == tidemark.ErrUnavailable }

// contentType is an answer's media type as it said it, for a message.
func contentType(resp *http.Response) string {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		return ct
	}
	return "no Content-Type"
}
