package mastodon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
)

// fakeMastodon mimics the parts of the Mastodon API the provider uses,
// including its HTML rendering of statuses and its Idempotency-Key.
type fakeMastodon struct {
	mu       sync.Mutex
	statuses []status
	keys     map[string]status
	deleted  map[string]bool
	next     int64
	limited  bool
}

var urlRE = regexp.MustCompile(`https?://\S+`)

func render(text string) string {
	var paras []string
	for _, p := range strings.Split(text, "\n\n") {
		esc := html.EscapeString(p)
		esc = urlRE.ReplaceAllStringFunc(esc, func(u string) string {
			scheme, rest, _ := strings.Cut(u, "://")
			return fmt.Sprintf(`<a href="%s" rel="nofollow noopener" target="_blank"><span class="invisible">%s://</span><span class="">%s</span><span class="invisible"></span></a>`, u, scheme, rest)
		})
		paras = append(paras, "<p>"+strings.ReplaceAll(esc, "\n", "<br />")+"</p>")
	}
	return strings.Join(paras, "")
}

func (f *fakeMastodon) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tok" {
				http.Error(w, `{"error":"The access token is invalid"}`, http.StatusUnauthorized)
				return
			}
			w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
			w.Header().Set("Age", "0")
			h(w, r)
		}
	}
	mux.HandleFunc("POST /api/v1/statuses", auth(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.limited {
			w.Header().Set("Retry-After", "120")
			http.Error(w, `{"error":"Too many requests"}`, http.StatusTooManyRequests)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		if s, ok := f.keys[key]; ok && key != "" {
			_ = json.NewEncoder(w).Encode(s)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		f.next++
		s := status{ID: strconv.FormatInt(100+f.next, 10), CreatedAt: time.Now().UTC(), Content: render(r.PostForm.Get("status"))}
		if p := r.PostForm.Get("in_reply_to_id"); p != "" {
			if f.deleted[p] {
				http.Error(w, `{"error":"Record not found"}`, http.StatusNotFound)
				return
			}
			s.InReplyToID = &p
		}
		f.statuses = append(f.statuses, s)
		f.keys[key] = s
		_ = json.NewEncoder(w).Encode(s)
	}))
	mux.HandleFunc("GET /api/v1/accounts/verify_credentials", auth(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "7", "statuses_count": len(f.statuses)})
	}))
	mux.HandleFunc("GET /api/v1/accounts/7/statuses", auth(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		ss := append([]status(nil), f.statuses...)
		sort.Slice(ss, func(i, j int) bool { return ss[i].ID > ss[j].ID })
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		out := []status{}
		for _, s := range ss {
			if m := r.URL.Query().Get("max_id"); m != "" && s.ID >= m {
				continue
			}
			if len(out) < limit {
				out = append(out, s)
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	mux.HandleFunc("GET /api/v1/statuses/{id}", auth(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.deleted[r.PathValue("id")] {
			http.Error(w, `{"error":"Record not found"}`, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": r.PathValue("id")})
	}))
	return mux
}

func newFake(t *testing.T) (*fakeMastodon, *Provider) {
	f := &fakeMastodon{keys: map[string]status{}, deleted: map[string]bool{}}
	srv := httptest.NewServer(f.handler(t))
	t.Cleanup(srv.Close)
	p, err := New(Config{BaseURL: srv.URL, Token: "tok", PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	return f, p
}

func TestMastodonPostListCountAndJoin(t *testing.T) {
	ctx := context.Background()
	_, p := newFake(t)
	bodies := []string{"v2 released\n\nBreaking <change> & more.\n\nhttps://wiki.example/p/1", "second\nline", "third"}
	var intents []outbox.PlanIntent
	for i, b := range bodies {
		id := outbox.NewIdentity("timeline", "", []byte(b))
		key := outbox.IdempotencyKey("masto", id)
		if _, err := p.Post(ctx, provider.Write{Target: "timeline", Body: []byte(b), IdempotencyKey: key}); err != nil {
			t.Fatal(err)
		}
		intents = append(intents, outbox.PlanIntent{ID: fmt.Sprint("i", i), Rank: int64(i + 1), Target: "timeline", HasParent: true, BodySHA256: p.Fingerprint([]byte(b))})
	}
	// A retry with the same key is the same status on Mastodon's side.
	id0 := outbox.NewIdentity("timeline", "", []byte(bodies[0]))
	if _, err := p.Post(ctx, provider.Write{Target: "timeline", Body: []byte(bodies[0]), IdempotencyKey: outbox.IdempotencyKey("masto", id0)}); err != nil {
		t.Fatal(err)
	}
	n, err := p.Count(ctx)
	if err != nil || n != 3 {
		t.Fatalf("statuses_count %d %v, want 3 (the retry reused its key)", n, err)
	}
	var own []outbox.OwnWrite
	pages := 0
	for cursor := ""; ; pages++ {
		pg, err := p.ListOwn(ctx, provider.ListQuery{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if pg.Meta.Date == "" {
			t.Fatal("no Date on the listing")
		}
		for _, w := range pg.Writes {
			own = append(own, outbox.OwnWrite{RemoteID: w.RemoteID, CreatedAt: w.CreatedAt, Target: w.Target, Parent: w.Parent, HasParent: w.HasParent, BodySHA256: w.BodySHA256})
		}
		if pg.Next == "" {
			break
		}
		cursor = pg.Next
	}
	if len(own) != 3 || pages < 1 {
		t.Fatalf("listed %d writes over %d pages", len(own), pages+1)
	}
	plan, err := outbox.MakePlan(outbox.PlanInput{Intents: intents, OwnWrites: own})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Join != outbox.JoinTargetParentBody || len(plan.Landed) != 3 || len(plan.UnmatchedOwnWrites) != 0 {
		t.Fatalf("the rendered statuses do not join their intents: %+v", plan)
	}
	pr, err := p.Probe(ctx, provider.Write{Target: "timeline", Body: []byte("third")})
	if err != nil || !pr.Found {
		t.Fatalf("probe %+v %v", pr, err)
	}
}

func TestMastodonRefusals(t *testing.T) {
	ctx := context.Background()
	f, p := newFake(t)
	f.deleted["55"] = true
	w, err := p.CanWrite(ctx, "timeline", "55")
	if err != nil || w.OK {
		t.Fatalf("reply to a deleted status: %+v %v", w, err)
	}
	if _, err := p.Post(ctx, provider.Write{Target: "timeline", Parent: "55", Body: []byte("x")}); !errors.Is(err, provider.ErrUnexecutable) {
		t.Fatalf("post to a deleted parent: %v", err)
	}
	f.limited = true
	var ra *provider.RetryAfterError
	if _, err := p.Post(ctx, provider.Write{Target: "timeline", Body: []byte("x")}); !errors.As(err, &ra) || ra.After != 2*time.Minute {
		t.Fatalf("rate limited: %v", err)
	}
	var rej *provider.RejectedError
	if _, err := p.Post(ctx, provider.Write{Target: "elsewhere", Body: []byte("x")}); !errors.As(err, &rej) {
		t.Fatalf("foreign target: %v", err)
	}
}

// A status over the instance's limit, counted as Mastodon counts (a link
// 23 characters), is refused before anything is sent: only that intent is
// unexecutable, where Mastodon's 422 would stop the lane.
func TestMastodonRefusesAStatusOverItsLimitUnsent(t *testing.T) {
	ctx := context.Background()
	f, p := newFake(t)
	link := "https://wiki.example.org/" + strings.Repeat("p", 100)
	for _, tc := range []struct {
		body string
		sent bool
	}{
		{strings.Repeat("x", 500), true},
		{strings.Repeat("é", 500), true},
		{strings.Repeat("x", 476) + " " + link, true}, // 476 + 1 + 23
		{strings.Repeat("x", 501), false},
		{strings.Repeat("x", 477) + " " + link, false},
	} {
		before := len(f.statuses)
		_, err := p.Post(ctx, provider.Write{Target: "timeline", Body: []byte(tc.body)})
		var rej *provider.RejectedError
		switch {
		case tc.sent && err != nil:
			t.Errorf("a status of %d runes: %v", len(tc.body), err)
		case !tc.sent && !(errors.As(err, &rej) && rej.Unsendable() && len(f.statuses) == before):
			t.Errorf("a status over the limit: %v, %d sent", err, len(f.statuses)-before)
		}
	}
}

// The account's statuses are listed newest first, so once a page ends
// with a status older than Since, the rest are older too: the listing
// stops there instead of reading a busy account's whole history.
func TestMastodonListingStopsPastSince(t *testing.T) {
	ctx := context.Background()
	f, p := newFake(t) // two statuses a page
	now := time.Now().UTC()
	for i := range 9 {
		f.statuses = append(f.statuses, status{ID: strconv.Itoa(100 + i), CreatedAt: now.Add(time.Duration(i-9) * time.Hour), Content: render(fmt.Sprint("s", i))})
	}
	read := func(since time.Time) (pages, writes int) {
		t.Helper()
		for cursor := ""; ; {
			pg, err := p.ListOwn(ctx, provider.ListQuery{Cursor: cursor, Since: since})
			if err != nil {
				t.Fatal(err)
			}
			pages, writes = pages+1, writes+len(pg.Writes)
			if pg.Next == "" {
				return pages, writes
			}
			cursor = pg.Next
		}
	}
	if pages, writes := read(time.Time{}); pages != 5 || writes != 9 {
		t.Fatalf("without Since: %d pages, %d statuses; want all 9 over 5 pages", pages, writes)
	}
	// The three newest were made 1, 2 and 3 hours ago.
	if pages, writes := read(now.Add(-3*time.Hour - time.Minute)); pages != 2 || writes < 3 {
		t.Fatalf("since 3h ago: %d pages, %d statuses; want the 3 newest in 2 pages", pages, writes)
	}
}
