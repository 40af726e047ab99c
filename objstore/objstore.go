// Package objstore is tidemark's object storage behind a small interface:
// whole-object Get, Head, conditional Put, Delete and List. Three
// implementations pass one conformance suite (objstoretest): a local
// directory (objstore/dir), S3-compatible storage (objstore/s3) and an
// in-memory store whose hooks inject faults (objstore/mem).
//
// Every stored object carries a generation (metadata set by the writer) and
// an ETag (an opaque version chosen by the store). Put's conditions are the
// store's own compare-and-swap: create-only (If-None-Match: *) and
// replace-this-version (If-Match). PutGeneration builds on them the rule
// publication needs: an older generation never replaces a newer body.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark"
)

var (
	// ErrNotFound: no object under the key.
	ErrNotFound = fmt.Errorf("objstore: no such object: %w", tidemark.ErrNotFound)
	// ErrPrecondition: a conditional write lost: the object exists when it
	// had to be created, or is not the version it had to be. Stores that
	// answer 404 to If-Match on a missing key report this too.
	ErrPrecondition = fmt.Errorf("objstore: precondition failed: %w", tidemark.ErrConflict)
	// ErrNewerGeneration: the store holds a body of a newer generation; the
	// write was refused and changed nothing.
	ErrNewerGeneration = fmt.Errorf("objstore: a newer generation is stored: %w", tidemark.ErrConflict)
	// ErrNoBucket: the store's bucket does not exist (deleted under a
	// running worker, or never made). It is not ErrNotFound: a key in a
	// bucket that is not there is not an object known to be absent. It
	// matches tidemark.ErrUnavailable: the bucket may be made again, and
	// what it then holds decides (a publisher checks the store's marker).
	ErrNoBucket = fmt.Errorf("objstore: no such bucket: %w", tidemark.ErrUnavailable)
	// ErrDenied: the store refused our credentials, or their rights over
	// the key (a wrong secret, an unknown access key, a policy that does
	// not allow the operation). It is configuration the user must fix, so
	// it matches tidemark.ErrRefused, and so tidemark.ErrInvalid: no retry
	// can change the answer.
	ErrDenied = fmt.Errorf("objstore: access denied: %w", tidemark.ErrRefused)
)

// Info describes a stored object.
type Info struct {
	Key string `json:"key"`
	// ETag identifies this version of the object; it changes with every
	// write of different bytes.
	ETag string `json:"etag"`
	// Generation is the writer's generation; 0 when unknown (List on a
	// store that does not return metadata in listings).
	Generation int64 `json:"generation"`
	Size       int64 `json:"size"`
}

// Object is a stored body with its Info.
type Object struct {
	Info
	Body []byte
}

// Cond is a Put's precondition. The zero Cond writes unconditionally.
type Cond struct {
	// IfNoneMatch creates the object only if no object has the key.
	IfNoneMatch bool
	// IfMatch replaces the object only if its ETag is this one.
	IfMatch string
}

// PutOptions are a Put's condition and metadata.
type PutOptions struct {
	Cond        Cond
	Generation  int64
	ContentType string
}

// Store is an object store. Keys are slash-separated relative paths
// ("changes/01J….html"); they never start with "/" or contain "..".
type Store interface {
	Get(ctx context.Context, key string) (Object, error)
	Head(ctx context.Context, key string) (Info, error)
	// Put writes body at key if opt.Cond holds, else returns
	// ErrPrecondition and changes nothing.
	Put(ctx context.Context, key string, body []byte, opt PutOptions) (Info, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn for every object whose key starts with prefix, in key
	// order.
	List(ctx context.Context, prefix string, fn func(Info) error) error
}

// MaxCASAttempts bounds PutGeneration's compare-and-swap loop.
const MaxCASAttempts = 8

// PutGeneration writes body at key as generation gen, using the store's
// compare-and-swap so that a body of a newer generation is never replaced:
// it reads the stored version, refuses with ErrNewerGeneration when that is
// newer, and otherwise writes on the condition that the version is still
// the one it read; a lost condition is re-read and re-decided. Writing the
// generation that is already stored changes nothing (a replay of the same
// writer: generations are allocated once).
//
// Generation 1 is the first any writer of key is given, so the object is
// expected to be absent: the first attempt creates it on that condition
// without reading first (one request instead of two), and if an object is
// there after all, the condition fails and the read-and-decide loop
// follows, exactly as for any other generation.
func PutGeneration(ctx context.Context, s Store, key string, body []byte, gen int64, contentType string) (Info, error) {
	if gen <= 0 {
		return Info{}, tidemark.Invalidf("generation", fmt.Sprint(gen), "must be positive")
	}
	if gen == 1 {
		info, err := s.Put(ctx, key, body, PutOptions{Cond: Cond{IfNoneMatch: true}, Generation: gen, ContentType: contentType})
		if !errors.Is(err, ErrPrecondition) {
			return info, err
		}
	}
	for range MaxCASAttempts {
		cur, err := s.Head(ctx, key)
		var cond Cond
		switch {
		case errors.Is(err, ErrNotFound):
			cond.IfNoneMatch = true
		case err != nil:
			return Info{}, err
		case cur.Generation > gen:
			return cur, fmt.Errorf("put %s generation %d over %d: %w", key, gen, cur.Generation, ErrNewerGeneration)
		case cur.Generation == gen:
			return cur, nil
		default:
			cond.IfMatch = cur.ETag
		}
		info, err := s.Put(ctx, key, body, PutOptions{Cond: cond, Generation: gen, ContentType: contentType})
		if errors.Is(err, ErrPrecondition) {
			continue // someone wrote between our read and our write: decide again
		}
		return info, err
	}
	return Info{}, fmt.Errorf("put %s generation %d: %d attempts lost the compare-and-swap: %w", key, gen, MaxCASAttempts, ErrPrecondition)
}

// CheckKey refuses keys that could escape a store's root (empty, dot or
// hidden segments) and keys with control characters, which no page has.
func CheckKey(key string) error {
	if key == "" || key[0] == '/' || key[len(key)-1] == '/' {
		return tidemark.Invalidf("object key", key, "must be a non-empty relative path")
	}
	if strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return tidemark.Invalidf("object key", key, "has a control character")
	}
	start := 0
	for i := 0; i <= len(key); i++ {
		if i == len(key) || key[i] == '/' {
			seg := key[start:i]
			if seg == "" || seg == "." || seg == ".." || seg[0] == '.' {
				return tidemark.Invalidf("object key", key, "has an empty, dot or hidden segment")
			}
			start = i + 1
		}
	}
	return nil
}
