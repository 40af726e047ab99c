package tidemark

import (
	"errors"
	"fmt"
	"time"
)

// Outcome is the typed result of an ingest run. Outcomes are never
// conflated: a source that could not be reached is not a source with
// nothing to report.
type Outcome string

const (
	// OutcomeItems: reached, new data admitted.
	OutcomeItems Outcome = "items"
	// OutcomeEmpty: reached, nothing new.
	OutcomeEmpty Outcome = "empty"
	// OutcomeUnreachable: could not reach (DNS, connect, timeout, 5xx, 429).
	OutcomeUnreachable Outcome = "unreachable"
	// OutcomeInvalid: reached, but the answer is unusable.
	OutcomeInvalid Outcome = "invalid"
	// OutcomeError: our own failure.
	OutcomeError Outcome = "error"
	// OutcomeLost: the holder never came back before its lease expired.
	OutcomeLost Outcome = "lost"
)

// Outcomes lists every outcome in a stable order.
var Outcomes = []Outcome{OutcomeItems, OutcomeEmpty, OutcomeUnreachable, OutcomeInvalid, OutcomeError, OutcomeLost}

// Advances reports whether a run with this outcome may move the cursor.
// Only items and empty may.
func (o Outcome) Advances() bool { return o == OutcomeItems || o == OutcomeEmpty }

// Valid reports whether o is one of the defined outcomes.
func (o Outcome) Valid() bool {
	for _, x := range Outcomes {
		if o == x {
			return true
		}
	}
	return false
}

// FetchError is a classified fetch failure. Fetchers return it so that the
// run records the right outcome; an unclassified error is OutcomeError.
type FetchError struct {
	Outcome    Outcome       // unreachable or invalid (or error)
	Reason     string        // short, for people: "HTTP 503", "empty body"
	RetryAfter time.Duration // the upstream's Retry-After, if it sent one
	Err        error
}

func (e *FetchError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Outcome, e.Reason, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Outcome, e.Reason)
}

func (e *FetchError) Unwrap() error { return e.Err }

// Unreachable classifies err as the source being out of reach.
func Unreachable(reason string, retryAfter time.Duration, err error) error {
	return &FetchError{Outcome: OutcomeUnreachable, Reason: reason, RetryAfter: retryAfter, Err: err}
}

// Unusable classifies err as the source answering with something unusable.
func Unusable(reason string, err error) error {
	return &FetchError{Outcome: OutcomeInvalid, Reason: reason, Err: err}
}

// Classify returns the outcome, reason and Retry-After an error stands for.
// Anything that is not a *FetchError is our own failure (OutcomeError).
func Classify(err error) (Outcome, string, time.Duration) {
	var fe *FetchError
	if errors.As(err, &fe) {
		o := fe.Outcome
		if !o.Valid() || o.Advances() || o == OutcomeLost {
			o = OutcomeError
		}
		// The reason without the outcome, which is recorded beside it.
		reason := fe.Reason
		if fe.Err != nil {
			reason = fmt.Sprintf("%s: %v", fe.Reason, fe.Err)
		}
		return o, reason, fe.RetryAfter
	}
	if errors.Is(err, ErrShortRead) {
		return OutcomeInvalid, err.Error(), 0
	}
	return OutcomeError, err.Error(), 0
}

// ErrCannotServe: this worker cannot serve the source (a local path it
// cannot see, a kind it was not built with), though another worker may.
// The run records OutcomeError, tidemark's own, without spending the
// window's retry budget, and the source is left for other workers.
var ErrCannotServe = errors.New("tidemark: this worker cannot serve the source")

// CannotServeError says why this worker cannot serve a source. It matches
// ErrCannotServe.
type CannotServeError struct {
	Reason string
	Err    error
}

func (e *CannotServeError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("this worker cannot serve the source: %s: %v", e.Reason, e.Err)
	}
	return "this worker cannot serve the source: " + e.Reason
}

func (e *CannotServeError) Is(target error) bool { return target == ErrCannotServe }

func (e *CannotServeError) Unwrap() error { return e.Err }

// CannotServe returns a *CannotServeError.
func CannotServe(reason string, err error) error { return &CannotServeError{Reason: reason, Err: err} }
