// Package providertest is a local provider for tests: an HTTP server on
// 127.0.0.1 speaking the generic webhook protocol (signed POSTs plus the
// read endpoints the webhook provider uses), that can misbehave the way real
// providers do. It can serve stale cached answers with an Age header, drop
// or garble the age headers, emit writes out of order, moderate targets so
// they cannot be written, rate-limit, lose the answer to a write that
// landed, and count every write — by identity too — so tests verify "zero
// duplicates" through the provider's own count, not ours.
package providertest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tidemark/tidemark/clock"
)

// SignatureHeader carries hex HMAC-SHA256 of the request body, as
// "sha256=<hex>".
const SignatureHeader = "X-Tidemark-Signature"

// Write is one write the server accepted.
type Write struct {
	ID             string    `json:"id"`
	CreatedAt      time.Time `json:"created_at"`
	Target         string    `json:"target"`
	Parent         string    `json:"parent,omitempty"`
	Body           string    `json:"-"`
	BodySHA256     string    `json:"body_sha256"`
	IdempotencyKey string    `json:"-"`
	seq            int
}

// Server is a misbehaving provider. Its methods are safe for concurrent
// use with the requests it serves.
type Server struct {
	*httptest.Server
	// Dropper loses answers to writes on demand (DropEvery).
	*Dropper
	Secret []byte
	clock  clock.Clock

	mu         sync.Mutex
	writes     []Write
	seq        int
	moderated  map[string]string
	frozen     []Write // the stale copy served by reads, when frozenAt is set
	frozenAt   *time.Time
	omitAge    bool
	badDate    bool
	reorder    bool
	loseAnswer int
	failWrites int // the next POSTs answer 500 and write nothing
	retryAfter time.Duration
	readWait   time.Duration // the next listing read answers 429 with it
	honourKeys bool
	holdNext   bool
	held       []Write // accepted, still being processed: not in any read yet
	posts      int
	reads      map[string]int
}

// New starts a server on 127.0.0.1 whose Date headers and write times
// come from clk. It stops when the test ends.
func New(tb interface {
	Helper()
	Cleanup(func())
}, clk clock.Clock, secret []byte) *Server {
	tb.Helper()
	s := &Server{Secret: secret, clock: clk, moderated: map[string]string{}, reads: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hook", s.post)
	mux.HandleFunc("GET /writes", s.list)
	mux.HandleFunc("GET /probe", s.probe)
	mux.HandleFunc("GET /count", s.count)
	mux.HandleFunc("GET /target", s.target)
	s.Server, s.Dropper = NewDropServer(tb, mux)
	return s
}

// Settings returns the webhook lane settings that point at this server.
func (s *Server) Settings() map[string]string {
	return map[string]string{
		"url":        s.URL + "/hook",
		"list_url":   s.URL + "/writes",
		"probe_url":  s.URL + "/probe",
		"count_url":  s.URL + "/count",
		"target_url": s.URL + "/target",
	}
}

// Moderate makes target refuse writes (reason says why); "" reason lifts it.
func (s *Server) Moderate(target, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if reason == "" {
		delete(s.moderated, target)
		return
	}
	s.moderated[target] = reason
}

// Freeze makes every read serve a copy of the writes as they are now, with
// an Age header counting from now, as a cache in front of the provider
// would, until Thaw.
func (s *Server) Freeze() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.frozenAt = &now
	s.frozen = append([]Write(nil), s.writes...)
}

// Thaw serves fresh reads again (Age: 0).
func (s *Server) Thaw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozenAt, s.frozen = nil, nil
}

// OmitAge drops the Age header from reads; BadDate garbles Date.
func (s *Server) OmitAge(v bool) { s.mu.Lock(); s.omitAge = v; s.mu.Unlock() }
func (s *Server) BadDate(v bool) { s.mu.Lock(); s.badDate = v; s.mu.Unlock() }

// ReorderNext makes the next write appear before the previous one in the
// listing (its creation time is set a second before the previous write's),
// as a provider that emits out of order does.
func (s *Server) ReorderNext() { s.mu.Lock(); s.reorder = true; s.mu.Unlock() }

// LoseAnswers makes the next n writes land but answer 502, as a connection
// lost after the provider committed would.
func (s *Server) LoseAnswers(n int) { s.mu.Lock(); s.loseAnswer = n; s.mu.Unlock() }

// FailWrites makes the next n POSTs answer 500 without writing anything:
// a receiver that is up but broken.
func (s *Server) FailWrites(n int) { s.mu.Lock(); s.failWrites = n; s.mu.Unlock() }

// RetryAfterNext makes the next POST answer 429 with Retry-After.
func (s *Server) RetryAfterNext(d time.Duration) { s.mu.Lock(); s.retryAfter = d; s.mu.Unlock() }

// RetryAfterNextRead makes the next read of the listing answer 429 with
// Retry-After, as a rate-limited provider refuses a reconciliation's read.
func (s *Server) RetryAfterNextRead(d time.Duration) { s.mu.Lock(); s.readWait = d; s.mu.Unlock() }

// HonourIdempotencyKeys makes a repeated key return the first write
// instead of writing again. Off by default, so tests prove tidemark sends
// once on its own.
func (s *Server) HonourIdempotencyKeys(v bool) { s.mu.Lock(); s.honourKeys = v; s.mu.Unlock() }

// Writes returns every write, in emission order.
// HoldNext makes the next write one the server is still processing when
// the client gives up on it: its answer is lost (502) and no read shows it
// until Land.
func (s *Server) HoldNext() { s.mu.Lock(); s.holdNext = true; s.mu.Unlock() }

// Land finishes the held writes: from now on reads show them, created now.
func (s *Server) Land() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.held {
		w.CreatedAt = s.clock.Now().UTC()
		s.writes = append(s.writes, w)
	}
	s.held = nil
}

func (s *Server) Writes() []Write {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedWrites(s.writes)
}

// Count is the number of writes made.
func (s *Server) Count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.writes) }

// Posts is the number of POST requests received (accepted or not).
func (s *Server) Posts() int { s.mu.Lock(); defer s.mu.Unlock(); return s.posts }

// Reads is the number of read requests of a kind: writes, probe, count, target.
func (s *Server) Reads(kind string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.reads[kind] }

// Duplicates returns, per identity written more than once, how many times.
func (s *Server) Duplicates() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[string]int{}
	for _, w := range s.writes {
		n[w.Target+"|"+w.Parent+"|"+w.BodySHA256]++
	}
	for k, c := range n {
		if c < 2 {
			delete(n, k)
		}
	}
	return n
}

// CountOf is the number of writes with this identity.
func (s *Server) CountOf(target, parent, bodySHA256 string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := 0
	for _, w := range s.writes {
		if w.Target == target && w.Parent == parent && w.BodySHA256 == bodySHA256 {
			c++
		}
	}
	return c
}

func sortedWrites(ws []Write) []Write {
	out := append([]Write(nil), ws...)
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].seq < out[j].seq
	})
	return out
}

type postBody struct {
	Target string `json:"target"`
	Parent string `json:"parent"`
	Body   string `json:"body"`
}

func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	mac := hmac.New(sha256.New, s.Secret)
	mac.Write(raw)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posts++
	if !hmac.Equal([]byte(r.Header.Get(SignatureHeader)), []byte(want)) {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var pb postBody
	if err := json.Unmarshal(raw, &pb); err != nil || pb.Target == "" {
		http.Error(w, "want {target, parent, body}", http.StatusBadRequest)
		return
	}
	if reason, ok := s.moderated[pb.Target]; ok {
		http.Error(w, "target moderated: "+reason, http.StatusForbidden)
		return
	}
	if s.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.retryAfter/time.Second)))
		s.retryAfter = 0
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	}
	if s.failWrites > 0 {
		s.failWrites--
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if s.honourKeys && key != "" {
		for _, old := range s.writes {
			if old.IdempotencyKey == key {
				writeJSON(w, http.StatusOK, old)
				return
			}
		}
	}
	s.seq++
	now := s.clock.Now().UTC()
	if s.reorder && len(s.writes) > 0 {
		now = sortedWrites(s.writes)[len(s.writes)-1].CreatedAt.Add(-time.Second)
		s.reorder = false
	}
	sum := sha256.Sum256([]byte(pb.Body))
	nw := Write{ID: fmt.Sprintf("w%06d", s.seq), CreatedAt: now, Target: pb.Target, Parent: pb.Parent,
		Body: pb.Body, BodySHA256: hex.EncodeToString(sum[:]), IdempotencyKey: key, seq: s.seq}
	if s.holdNext {
		s.holdNext = false
		s.held = append(s.held, nw)
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	s.writes = append(s.writes, nw)
	if s.loseAnswer > 0 {
		s.loseAnswer--
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	writeJSON(w, http.StatusCreated, nw)
}

// view returns the writes a read sees and sets the age headers.
func (s *Server) view(w http.ResponseWriter, kind string) []Write {
	s.reads[kind]++
	now := s.clock.Now()
	date := now.UTC().Format(http.TimeFormat)
	if s.badDate {
		date = "yesterday-ish"
	}
	w.Header().Set("Date", date)
	ws, age := s.writes, time.Duration(0)
	if s.frozenAt != nil {
		ws, age = s.frozen, now.Sub(*s.frozenAt)
	}
	if !s.omitAge {
		w.Header().Set("Age", strconv.Itoa(int(age/time.Second)))
	}
	return ws
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readWait > 0 {
		s.reads["writes"]++
		w.Header().Set("Retry-After", strconv.Itoa(int(s.readWait/time.Second)))
		s.readWait = 0
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	}
	ws := sortedWrites(s.view(w, "writes"))
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	if start < 0 || start > len(ws) {
		http.Error(w, "bad cursor", http.StatusBadRequest)
		return
	}
	end := min(start+limit, len(ws))
	next := ""
	if end < len(ws) {
		next = strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, map[string]any{"writes": nonNil(ws[start:end]), "next": next})
}

func (s *Server) probe(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	for _, x := range s.view(w, "probe") {
		if x.Target == q.Get("target") && x.Parent == q.Get("parent") && x.BodySHA256 == q.Get("body_sha256") {
			writeJSON(w, http.StatusOK, map[string]any{"found": true, "id": x.ID})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"found": false})
}

func (s *Server) count(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads["count"]++
	writeJSON(w, http.StatusOK, map[string]any{"count": len(s.writes)})
}

func (s *Server) target(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads["target"]++
	reason, moderated := s.moderated[r.URL.Query().Get("target")]
	writeJSON(w, http.StatusOK, map[string]any{"writable": !moderated, "reason": reason})
}

func nonNil(ws []Write) []Write {
	if ws == nil {
		return []Write{}
	}
	return ws
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
