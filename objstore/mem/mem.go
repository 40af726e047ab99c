// Package mem is an in-memory object store for tests and simulation. Its
// Hooks inject faults and run code in the middle of an operation — for
// example, accepting a newer summary while an older publish is writing.
package mem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tidemark/tidemark/objstore"
)

// Hooks run around the store's operations. An error from BeforePut or
// BeforeGet is returned by the operation, which then changes nothing; an
// error from AfterPut is returned although the body is stored (a write whose
// answer was lost). Hooks run without the store's lock held, so they may
// call the store themselves.
type Hooks struct {
	// BeforePut runs after Put is called and before its condition is
	// decided and the body stored: the middle of a write.
	BeforePut func(ctx context.Context, key string, body []byte, opt objstore.PutOptions) error
	// AfterPut runs after the body is stored, before Put returns.
	AfterPut func(ctx context.Context, key string, info objstore.Info) error
	// BeforeGet runs before a Get or Head reads.
	BeforeGet func(ctx context.Context, key string) error
}

// Store is an in-memory objstore.Store. The zero value is not usable; use New.
type Store struct {
	mu      sync.Mutex
	objects map[string]objstore.Object
	hooks   Hooks
}

// New returns an empty store.
func New() *Store { return &Store{objects: map[string]objstore.Object{}} }

// SetHooks replaces the hooks.
func (s *Store) SetHooks(h Hooks) {
	s.mu.Lock()
	s.hooks = h
	s.mu.Unlock()
}

func (s *Store) getHooks() Hooks {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hooks
}

var _ objstore.Store = (*Store)(nil)

func etag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// Get implements objstore.Store.
func (s *Store) Get(ctx context.Context, key string) (objstore.Object, error) {
	if h := s.getHooks().BeforeGet; h != nil {
		if err := h(ctx, key); err != nil {
			return objstore.Object{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	if !ok {
		return o, fmt.Errorf("get %s: %w", key, objstore.ErrNotFound)
	}
	o.Body = append([]byte(nil), o.Body...)
	return o, nil
}

// Head implements objstore.Store.
func (s *Store) Head(ctx context.Context, key string) (objstore.Info, error) {
	o, err := s.Get(ctx, key)
	return o.Info, err
}

// Put implements objstore.Store.
func (s *Store) Put(ctx context.Context, key string, body []byte, opt objstore.PutOptions) (objstore.Info, error) {
	if err := objstore.CheckKey(key); err != nil {
		return objstore.Info{}, err
	}
	h := s.getHooks()
	if h.BeforePut != nil {
		if err := h.BeforePut(ctx, key, body, opt); err != nil {
			return objstore.Info{}, err
		}
	}
	s.mu.Lock()
	cur, exists := s.objects[key]
	switch {
	case opt.Cond.IfNoneMatch && exists,
		opt.Cond.IfMatch != "" && (!exists || cur.ETag != opt.Cond.IfMatch):
		s.mu.Unlock()
		return objstore.Info{}, fmt.Errorf("put %s: %w", key, objstore.ErrPrecondition)
	}
	info := objstore.Info{Key: key, ETag: etag(body), Generation: opt.Generation, Size: int64(len(body))}
	s.objects[key] = objstore.Object{Info: info, Body: append([]byte(nil), body...)}
	s.mu.Unlock()
	if h.AfterPut != nil {
		if err := h.AfterPut(ctx, key, info); err != nil {
			return objstore.Info{}, err
		}
	}
	return info, nil
}

// Delete implements objstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, key)
	return nil
}

// List implements objstore.Store.
func (s *Store) List(ctx context.Context, prefix string, fn func(objstore.Info) error) error {
	s.mu.Lock()
	var infos []objstore.Info
	for k, o := range s.objects {
		if strings.HasPrefix(k, prefix) {
			infos = append(infos, o.Info)
		}
	}
	s.mu.Unlock()
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	for _, in := range infos {
		if err := fn(in); err != nil {
			return err
		}
	}
	return nil
}
