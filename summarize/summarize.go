// Package summarize turns an event's frozen evidence into a summary draft.
// Summarizers are deterministic where they can be, and every draft records
// the model and prompt version that produced it: with the event and its
// evidence hash they are the summary's identity.
package summarize

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
)

// Draft is a summarizer's output, not yet accepted.
type Draft struct {
	Text          string `json:"text"`
	Model         string `json:"model"`
	PromptVersion string `json:"prompt_version"`
}

// Input is what a summarizer reads: the event, its source's kind and
// location, its current frozen evidence and, for a new revision of the same
// event, the previous revision's evidence (frozen too), so the summary can
// say what changed between revisions.
type Input struct {
	Event    tidemark.Event
	Kind     string
	Location string
	Evidence []byte
	// Previous is nil at the event's first revision.
	Previous []byte
}

// Summarizer summarizes one event from its frozen evidence.
type Summarizer interface {
	Summarize(ctx context.Context, in Input) (Draft, error)
	// Identity is the model and prompt version this summarizer's drafts
	// carry, known before any call, so a caller can tell which events it
	// has already summarized.
	Identity() (model, promptVersion string)
}

// ErrUnusable: the summarizer answered, but with nothing that can be a
// summary (no choices, an empty text). It is a failure of that event's
// summary, not an outage and not a write left unconfirmed.
var ErrUnusable = errors.New("summarize: unusable answer")

// RetryAfterError: the summarizer's endpoint asked to be left alone for
// After before the next request (a 429 or 503 with Retry-After). It wraps
// the failure, which says what kind it is (tidemark.ErrUnavailable).
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (the endpoint asked to wait %s)", e.Err, e.After)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter is how long err asks to wait before the summarizer's next
// request; 0 when it does not ask.
func RetryAfter(err error) time.Duration {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return ra.After
	}
	return 0
}

// MaxTextBytes bounds a summary's text.
const MaxTextBytes = 16 << 10

// Cut returns s cut to at most n bytes, on a rune boundary.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
