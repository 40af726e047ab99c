package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox/provider"
)

type ghComment struct {
	ID        int64     `json:"id"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	IssueURL  string    `json:"issue_url"`
	User      struct {
		Login string `json:"login"`
	} `json:"user"`
}

// fakeGitHub mimics the REST endpoints the provider uses, with Link
// pagination and comments by other users mixed in.
type fakeGitHub struct {
	mu       sync.Mutex
	base     string
	comments map[string][]ghComment // by repo
	locked   map[string]bool        // "repo#n"
	next     int64
	linkBase string // when set, Link URLs use it instead of base
	requests int
}

func (f *fakeGitHub) add(repo string, n int, login, body string) ghComment {
	f.next++
	at := time.Date(2026, 1, 1, 0, 0, int(f.next), 0, time.UTC)
	c := ghComment{ID: 1000 + f.next, Body: body, CreatedAt: at, UpdatedAt: at,
		IssueURL: fmt.Sprintf("%s/repos/%s/issues/%d", f.base, repo, n)}
	c.User.Login = login
	f.comments[repo] = append(f.comments[repo], c)
	return c
}

func (f *fakeGitHub) handler() http.Handler {
	mux := http.NewServeMux()
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer gh" || r.Header.Get("X-GitHub-Api-Version") == "" {
				http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
				return
			}
			w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
			f.mu.Lock()
			defer f.mu.Unlock()
			f.requests++
			h(w, r)
		}
	}
	mux.HandleFunc("GET /user", auth(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"login": "tidemark-bot"})
	}))
	mux.HandleFunc("POST /repos/{o}/{r}/issues/{n}/comments", auth(func(w http.ResponseWriter, r *http.Request) {
		repo := r.PathValue("o") + "/" + r.PathValue("r")
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n > 100 {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		var in struct {
			Body string `json:"body"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(f.add(repo, n, "tidemark-bot", in.Body))
	}))
	list := func(w http.ResponseWriter, r *http.Request, cs []ghComment) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		if page == 0 {
			page = 1
		}
		per := 2 // small pages, to exercise Link
		start := (page - 1) * per
		end := min(start+per, len(cs))
		if start > len(cs) {
			start = len(cs)
		}
		if end < len(cs) {
			q := r.URL.Query()
			q.Set("page", strconv.Itoa(page+1))
			base := f.base
			if f.linkBase != "" {
				base = f.linkBase
			}
			w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next", <%s>; rel="last"`, base, r.URL.Path, q.Encode(), base))
		}
		_ = json.NewEncoder(w).Encode(append([]ghComment{}, cs[start:end]...))
	}
	mux.HandleFunc("GET /repos/{o}/{r}/issues/comments", auth(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("sort") != "created" || r.URL.Query().Get("direction") != "asc" {
			http.Error(w, "want sort=created&direction=asc", 400)
			return
		}
		list(w, r, f.comments[r.PathValue("o")+"/"+r.PathValue("r")])
	}))
	mux.HandleFunc("GET /repos/{o}/{r}/issues/{n}/comments", auth(func(w http.ResponseWriter, r *http.Request) {
		var cs []ghComment
		var since time.Time
		if v := r.URL.Query().Get("since"); v != "" {
			var err error
			if since, err = time.Parse(time.RFC3339, v); err != nil {
				http.Error(w, `{"message":"bad since"}`, http.StatusUnprocessableEntity)
				return
			}
		}
		for _, c := range f.comments[r.PathValue("o")+"/"+r.PathValue("r")] {
			if c.UpdatedAt.Before(since) {
				continue
			}
			if c.IssueURL == fmt.Sprintf("%s/repos/%s/%s/issues/%s", f.base, r.PathValue("o"), r.PathValue("r"), r.PathValue("n")) {
				cs = append(cs, c)
			}
		}
		list(w, r, cs)
	}))
	mux.HandleFunc("GET /repos/{o}/{r}/issues/{n}", auth(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n > 100 {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"number": n, "locked": f.locked[r.PathValue("o")+"/"+r.PathValue("r")+"#"+r.PathValue("n")]})
	}))
	return mux
}

func newFake(t *testing.T) (*fakeGitHub, *Provider) {
	f := &fakeGitHub{comments: map[string][]ghComment{}, locked: map[string]bool{}}
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	f.base = srv.URL
	p, err := New(Config{APIURL: srv.URL, Token: "gh", Repos: []string{"acme/app", "acme/lib"}})
	if err != nil {
		t.Fatal(err)
	}
	return f, p
}

func TestGitHubListsOnlyOurCommentsInOrder(t *testing.T) {
	ctx := context.Background()
	f, p := newFake(t)
	f.add("acme/app", 1, "someone", "first!")
	if _, err := p.Post(ctx, provider.Write{Target: "acme/app#1", Body: []byte("ours one")}); err != nil {
		t.Fatal(err)
	}
	f.add("acme/app", 1, "someone", "+1")
	if _, err := p.Post(ctx, provider.Write{Target: "acme/app#2", Body: []byte("ours two")}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Post(ctx, provider.Write{Target: "acme/lib#9", Body: []byte("ours three")}); err != nil {
		t.Fatal(err)
	}
	var got []provider.OwnWrite
	requests := 0
	for cursor := ""; ; {
		pg, err := p.ListOwn(ctx, provider.ListQuery{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		requests++
		got = append(got, pg.Writes...)
		if pg.Next == "" {
			break
		}
		cursor = pg.Next
	}
	if len(got) != 3 || got[0].Target != "acme/app#1" || got[1].Target != "acme/app#2" || got[2].Target != "acme/lib#9" {
		t.Fatalf("own writes %+v", got)
	}
	if got[0].BodySHA256 != provider.BodySHA256([]byte("ours one")) {
		t.Fatal("body hash does not match the body as sent")
	}
	if requests != 3 { // acme/app has 4 comments in pages of 2, acme/lib 1
		t.Fatalf("%d list requests", requests)
	}
	pr, err := p.Probe(ctx, provider.Write{Target: "acme/app#2", Body: []byte("ours two")})
	if err != nil || !pr.Found {
		t.Fatalf("probe %+v %v", pr, err)
	}
	pr, err = p.Probe(ctx, provider.Write{Target: "acme/app#1", Body: []byte("+1")})
	if err != nil || pr.Found {
		t.Fatalf("someone else's comment was taken for ours: %+v %v", pr, err)
	}
}

func TestGitHubRefusals(t *testing.T) {
	ctx := context.Background()
	f, p := newFake(t)
	f.locked["acme/app#3"] = true
	if w, err := p.CanWrite(ctx, "acme/app#3", ""); err != nil || w.OK {
		t.Fatalf("locked issue: %+v %v", w, err)
	}
	if w, err := p.CanWrite(ctx, "acme/app#404", ""); err != nil || w.OK {
		t.Fatalf("missing issue: %+v %v", w, err)
	}
	if w, err := p.CanWrite(ctx, "acme/app#4", ""); err != nil || !w.OK {
		t.Fatalf("open issue: %+v %v", w, err)
	}
	if _, err := p.Post(ctx, provider.Write{Target: "acme/app#404", Body: []byte("x")}); !errors.Is(err, provider.ErrUnexecutable) {
		t.Fatalf("post to a missing issue: %v", err)
	}
	if _, err := p.Count(ctx); !errors.Is(err, provider.ErrUnsupported) {
		t.Fatalf("count: %v", err)
	}
	var rej *provider.RejectedError
	if _, err := p.Post(ctx, provider.Write{Target: "not a target", Body: []byte("x")}); !errors.As(err, &rej) {
		t.Fatalf("bad target: %v", err)
	}
}

// A probe that could not read the whole issue cannot say the comment is
// not there: an issue longer than the probe's page budget, or a next page
// that leaves api_url, is "cannot tell" (an error), never Found false.
func TestGitHubProbeThatStopsEarlyCannotTell(t *testing.T) {
	ctx := context.Background()
	f, p := newFake(t)
	for i := 0; i < 2*probePages+1; i++ { // pages of 2: one comment past the budget
		f.add("acme/app", 5, "someone", fmt.Sprintf("chatter %d", i))
	}
	f.add("acme/app", 5, "tidemark-bot", "ours, last")
	pr, err := p.Probe(ctx, provider.Write{Target: "acme/app#5", Body: []byte("ours, last")})
	if err == nil && !pr.Found {
		t.Fatal("a probe that read only part of the issue answered not found")
	}
	pr, err = p.Probe(ctx, provider.Write{Target: "acme/app#5", Body: []byte("never posted")})
	if err == nil {
		t.Fatalf("an exhausted page budget answered %+v, want cannot tell", pr)
	}

	f.add("acme/app", 6, "someone", "one")
	f.add("acme/app", 6, "someone", "two")
	f.add("acme/app", 6, "someone", "three")
	f.mu.Lock()
	f.linkBase = "http://elsewhere.example"
	f.mu.Unlock()
	pr, err = p.Probe(ctx, provider.Write{Target: "acme/app#6", Body: []byte("never posted")})
	if err == nil {
		t.Fatalf("a next page off api_url answered %+v, want cannot tell", pr)
	}
}

// Given when the write in doubt could have been made at the earliest, the
// probe reads only comments made or edited since then (since=), so the
// write is on its first page however long the issue.
func TestGitHubProbeReadsSinceTheAttempt(t *testing.T) {
	ctx := context.Background()
	f, p := newFake(t)
	for i := 0; i < 2*probePages+5; i++ {
		f.add("acme/app", 5, "someone", fmt.Sprintf("chatter %d", i))
	}
	f.mu.Lock()
	notBefore := f.comments["acme/app"][len(f.comments["acme/app"])-1].CreatedAt.Add(time.Second)
	f.mu.Unlock()
	f.add("acme/app", 5, "someone", "later")
	f.add("acme/app", 5, "tidemark-bot", "ours, in doubt")
	f.requests = 0
	pr, err := p.Probe(ctx, provider.Write{Target: "acme/app#5", Body: []byte("ours, in doubt"), NotBefore: notBefore})
	if err != nil || !pr.Found {
		t.Fatalf("probe since the attempt: %+v %v", pr, err)
	}
	pr, err = p.Probe(ctx, provider.Write{Target: "acme/app#5", Body: []byte("never posted"), NotBefore: notBefore})
	if err != nil || pr.Found {
		t.Fatalf("probe since the attempt for a write never made: %+v %v", pr, err)
	}
	if f.requests > 4 { // one page each, and GET /user
		t.Fatalf("%d requests: the probe did not read from the attempt on", f.requests)
	}
	// A comment edited after the attempt is still one the probe reads.
	f.mu.Lock()
	cs := f.comments["acme/app"]
	cs[0].Body, cs[0].UpdatedAt = "edited", notBefore.Add(time.Hour)
	f.mu.Unlock()
	pr, err = p.Probe(ctx, provider.Write{Target: "acme/app#5", Body: []byte("edited"), NotBefore: notBefore})
	if err != nil || pr.Found { // someone else's
		t.Fatalf("edited comment: %+v %v", pr, err)
	}
}

// A comment over GitHub's limit (65,536 characters, as GitHub counts them:
// code points) is refused before anything is sent: only that intent is
// unexecutable, where GitHub's 422 would stop the lane.
func TestGitHubRefusesACommentOverItsLimitUnsent(t *testing.T) {
	ctx := context.Background()
	f, p := newFake(t)
	for _, tc := range []struct {
		body string
		sent bool
	}{
		{strings.Repeat("x", MaxCommentCharacters), true},
		{strings.Repeat("é", MaxCommentCharacters), true},
		{strings.Repeat("x", MaxCommentCharacters+1), false},
		{strings.Repeat("é", MaxCommentCharacters+1), false},
	} {
		before := len(f.comments["acme/app"])
		_, err := p.Post(ctx, provider.Write{Target: "acme/app#1", Body: []byte(tc.body)})
		sent := len(f.comments["acme/app"]) > before
		if sent != tc.sent {
			t.Fatalf("%d bytes: sent %v, want %v (%v)", len(tc.body), sent, tc.sent, err)
		}
		if tc.sent {
			if err != nil {
				t.Fatalf("%d bytes: %v", len(tc.body), err)
			}
			continue
		}
		var rej *provider.RejectedError
		if !errors.As(err, &rej) || !rej.Unsendable() || !strings.Contains(err.Error(), "65536") {
			t.Fatalf("%d bytes: want a refusal before sending naming the limit, got %v", len(tc.body), err)
		}
	}
}
