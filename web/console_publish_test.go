package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore/s3"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize"
	"github.com/tidemark/tidemark/web"
)

// fakePublish is web.PublishOps (and web.PublishStats) over summaries in
// memory, newest first; it records what it was asked.
type fakePublish struct {
	sums  []publish.Summary
	round publish.Round
	// roundErr is what Publish returns beside round.
	roundErr error
	sweep    publish.SweepReport
	sweepErr error
	calls    []string
}

var (
	_ web.PublishOps   = (*fakePublish)(nil)
	_ web.PublishOps   = (*pipeline.Pipeline)(nil)
	_ web.PublishStats = (*fakePublish)(nil)
)

func newFakePublish() *fakePublish {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	pub := at.Add(time.Minute)
	return &fakePublish{sums: []publish.Summary{
		{ID: "s3", EventID: "e1", Model: "extractive", PromptVersion: "p1", Text: "Widget <b>2.0</b> syncs.", Current: true, PublishedAt: &pub, CreatedAt: at},
		{ID: "s2", EventID: "e2", Model: "extractive", PromptVersion: "p1", Text: "Bad summary.", RejectedReason: "made up", CreatedAt: at},
		{ID: "s1", EventID: "e1", Model: "extractive", PromptVersion: "p0", Text: "Old summary.", CreatedAt: at.Add(-time.Hour)},
	}}
}

func (f *fakePublish) Publish(_ context.Context, summarizer string, limit int) (publish.Round, error) {
	f.calls = append(f.calls, fmt.Sprintf("publish %q %d", summarizer, limit))
	return f.round, f.roundErr
}

func (f *fakePublish) Sweep(context.Context) (publish.SweepReport, error) {
	f.calls = append(f.calls, "sweep")
	return f.sweep, f.sweepErr
}

func (f *fakePublish) Summaries(_ context.Context, flt publish.SummaryFilter) (publish.SummaryList, error) {
	var out publish.SummaryList
	for _, s := range f.sums {
		if flt.EventID != "" && s.EventID != flt.EventID {
			continue
		}
		if flt.BeforeID != "" && !(s.CreatedAt.Before(flt.BeforeCreatedAt) || s.CreatedAt.Equal(flt.BeforeCreatedAt) && s.ID < flt.BeforeID) {
			continue
		}
		if len(out) < flt.Limit {
			out = append(out, s)
		}
	}
	return out, nil
}

func (f *fakePublish) UnrejectSummary(_ context.Context, id, reason string) (publish.Summary, error) {
	return publish.Summary{}, fmt.Errorf("unreject %s: %w", id, tidemark.ErrNotFound)
}

func (f *fakePublish) RejectSummary(_ context.Context, id, reason string) (publish.Summary, error) {
	if strings.TrimSpace(reason) == "" {
		return publish.Summary{}, tidemark.Invalidf("reason", "", "a rejection needs a reason")
	}
	for i := range f.sums {
		if s := &f.sums[i]; s.ID == id {
			f.calls = append(f.calls, "reject "+id+": "+reason)
			if !s.Rejected() {
				s.RejectedReason, s.Current = reason, false
			}
			return *s, nil
		}
	}
	return publish.Summary{}, fmt.Errorf("summary %s: %w", id, tidemark.ErrNotFound)
}

func (f *fakePublish) PublishStats(context.Context) (publish.Stats, error) {
	return publish.Stats{Pages: 7, Published: 5, Behind: 2, Summaries: map[string]int64{"current": 6, "rejected": 1, "superseded": 3}}, nil
}

func (f *fakePublish) lastCall(t *testing.T) string {
	t.Helper()
	if len(f.calls) == 0 {
		t.Fatal("no call was made")
	}
	return f.calls[len(f.calls)-1]
}

// The API publishes one bounded round, sweeps, pages through summaries
// and rejects one with a reason; an outage reads as one.
func TestPublishAPI(t *testing.T) {
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(3))
	token, _, err := db.Auth().CreateToken(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	f := newFakePublish()
	do := mustServe(t, db, func(s *web.Server) { s.PublishOps = f })
	jsonBody := func(s string) func(*http.Request) { return withBody("application/json", s) }

	if r := do("POST", "/api/publish", "", nil); r.Code != 401 {
		t.Fatalf("POST /api/publish without a token: %d", r.Code)
	}
	f.round = publish.Round{Published: publish.PublishReport{Published: 2, Pages: 2}, Index: "file:///w/index.html", More: true}
	r := do("POST", "/api/publish", token, nil)
	if r.Code != 200 || !strings.Contains(r.Body, `"more": true`) || f.lastCall(t) != `publish "" 1000` {
		t.Fatalf("POST /api/publish: %d %s (%v)", r.Code, r.Body, f.calls)
	}
	// The index is where this server serves it, not where the server's
	// store keeps it (a path of the server's disk).
	if !strings.Contains(r.Body, `"index": "/index.html"`) || strings.Contains(r.Body, "file://") {
		t.Errorf("POST /api/publish names the index as %s", r.Body)
	}
	f.round, f.roundErr = publish.Round{Published: publish.PublishReport{Published: 1}}, fmt.Errorf("summarizing stopped after 1 of 3 events: openai: %w\n(1 pages published now)", tidemark.ErrUnavailable)
	r = do("POST", "/api/publish", token, nil)
	mustErrorClass(t, "a summarizer outage", r, 503, "unavailable", tidemark.ExitUnavailable)
	if msg := mustJSONError(t, "a summarizer outage", r); !strings.Contains(msg, "1 pages published now") {
		t.Errorf("the outage does not say what was published: %s", msg)
	}
	// The store refused the server's own credentials: not the request's
	// fault (400) but the gateway's refusal; the class says what to fix.
	f.round, f.roundErr = publish.Round{}, fmt.Errorf("publish: %w", &s3.DeniedError{Op: "PUT", Key: "index.html", Status: 403, Code: "SignatureDoesNotMatch"})
	r = do("POST", "/api/publish", token, nil)
	mustErrorClass(t, "a refused store", r, 502, "invalid", tidemark.ExitInvalid)
	if msg := mustJSONError(t, "a refused store", r); !strings.Contains(msg, "refused our credentials") {
		t.Errorf("the refusal does not say what was refused: %s", msg)
	}
	f.round, f.roundErr = publish.Round{}, nil

	f.sweep = publish.SweepReport{Pages: 3, Withdrawn: 1}
	if r := do("POST", "/api/publish/sweep", token, nil); r.Code != 200 || !strings.Contains(r.Body, `"withdrawn": 1`) {
		t.Fatalf("POST /api/publish/sweep: %d %s", r.Code, r.Body)
	}
	// Pages that failed to converge are in the report, not an internal error.
	f.sweep, f.sweepErr = publish.SweepReport{Pages: 3, Failed: 1, Errors: []string{"page p1: store down"}}, fmt.Errorf("sweep: 1 pages failed to converge: %w", tidemark.ErrUnconfirmed)
	if r := do("POST", "/api/publish/sweep", token, nil); r.Code != 200 || !strings.Contains(r.Body, `"failed": 1`) || !strings.Contains(r.Body, "store down") {
		t.Fatalf("a sweep with a failed page: %d %s", r.Code, r.Body)
	}

	var walked []string
	next := "/api/summaries?limit=2"
	for next != "" {
		r := do("GET", next, token, nil)
		var page struct {
			Items []publish.Summary
			Next  string
		}
		if r.Code != 200 || json.Unmarshal([]byte(r.Body), &page) != nil {
			t.Fatalf("GET %s: %d %s", next, r.Code, r.Body)
		}
		for _, s := range page.Items {
			walked = append(walked, s.ID)
		}
		next = ""
		if page.Next != "" {
			next = "/api/summaries?limit=2&cursor=" + url.QueryEscape(page.Next)
		}
	}
	if strings.Join(walked, " ") != "s3 s2 s1" {
		t.Fatalf("summaries walked by pages of 2: %v", walked)
	}
	if r := do("GET", "/api/summaries?event=e1", token, nil); r.Code != 200 || strings.Contains(r.Body, `"s2"`) || !strings.Contains(r.Body, `"s1"`) {
		t.Fatalf("summaries of event e1: %d %s", r.Code, r.Body)
	}
	if r := do("GET", "/api/summaries?cursor=nonsense", token, nil); r.Code != 400 {
		t.Fatalf("a cursor that is none: %d %s", r.Code, r.Body)
	}

	if r := do("POST", "/api/summaries/s3/reject", token, jsonBody(`{}`)); r.Code != 400 {
		t.Fatalf("reject without a reason: %d %s", r.Code, r.Body)
	}
	if r := do("POST", "/api/summaries/nope/reject", token, jsonBody(`{"reason":"x"}`)); r.Code != 404 {
		t.Fatalf("reject no such summary: %d %s", r.Code, r.Body)
	}
	r = do("POST", "/api/summaries/s3/reject", token, jsonBody(`{"reason":"wrong version"}`))
	if r.Code != 200 || !strings.Contains(r.Body, `"rejected_reason": "wrong version"`) || f.lastCall(t) != "reject s3: wrong version" {
		t.Fatalf("reject: %d %s (%v)", r.Code, r.Body, f.calls)
	}
	if r := do("GET", "/api/audit?actor=ops", token, nil); !strings.Contains(r.Body, "publish summary reject") || !strings.Contains(r.Body, "publish round") || !strings.Contains(r.Body, "publish sweep") {
		t.Errorf("the writes are not audited under their names: %s", r.Body)
	}
}

// The console shows what is published and what is behind, publishes and
// sweeps on a press, lists the latest summaries with their events, and
// rejects a current one with a reason; an outage says what was kept.
func TestPublishConsole(t *testing.T) {
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(3))
	token, _, err := db.Auth().CreateToken(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	f := newFakePublish()
	do := mustServe(t, db, func(s *web.Server) { s.PublishOps, s.Publish = f, f })
	flashed := func(r response, path string) string {
		t.Helper()
		if r.Code != 303 || r.Header.Get("Location") != path {
			t.Fatalf("a form's write: %d %s, want 303 to %s", r.Code, r.Header.Get("Location"), path)
		}
		cookie := strings.Split(r.Header.Get("Set-Cookie"), ";")[0]
		return do("GET", path, token, func(req *http.Request) { req.Header.Set("Cookie", cookie) }).Body
	}

	r := do("GET", "/console/publish", token, nil)
	for _, want := range []string{`href="/console/publish"`, `<strong>5</strong> of 7 pages published`, `>2</strong> behind their current summary`,
		"6 current, 1 rejected, 3 superseded", `action="/console/publish"`, `action="/console/publish/sweep"`,
		`<a href="/status/events/e1">`, `<a href="/status/events/e2">`, "made up", "superseded", "Widget &lt;b&gt;2.0&lt;/b&gt; syncs.",
		`action="/console/publish/summaries/s3/reject"`, "the next publishing round withdraws its page", `name="reason" required`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("/console/publish lacks %s", want)
		}
	}
	for _, not := range []string{`summaries/s2/reject`, `summaries/s1/reject`, "<script"} {
		if strings.Contains(r.Body, not) {
			t.Errorf("/console/publish has %s (only a current summary can be rejected here)", not)
		}
	}
	if t.Failed() {
		t.Fatal(r.Body)
	}
	r = do("GET", "/console/publish?limit=1", token, nil)
	if !strings.Contains(r.Body, "Older summaries") || strings.Contains(r.Body, "made up") {
		t.Fatalf("the first page of 1:\n%s", r.Body)
	}

	f.round = publish.Round{Summarized: publish.SummarizeReport{Accepted: 3}, Published: publish.PublishReport{Published: 3, Pages: 3}, Index: "x", More: true}
	body := flashed(do("POST", "/console/publish", token, form(url.Values{})), "/console/publish")
	if !strings.Contains(body, `class="notice"`) || !strings.Contains(body, "3 pages published") || !strings.Contains(body, "More is pending") {
		t.Errorf("no notice of the round:\n%s", body)
	}
	f.round.More = false
	if body := flashed(do("POST", "/console/publish", token, form(url.Values{})), "/console/publish"); !strings.Contains(body, "Nothing more is pending") {
		t.Errorf("a round that emptied the queue:\n%s", body)
	}
	// Events another worker is summarizing, or held, are not summarized by
	// this round: the notice says whose claims and until when.
	until := time.Date(2026, 12, 2, 3, 5, 0, 0, time.UTC)
	f.round = publish.Round{Summarized: publish.SummarizeReport{Accepted: 1, ClaimedElsewhere: 1,
		Elsewhere: []publish.Elsewhere{{EventID: "e2", Holder: "worker-b", Until: until}}}, Published: publish.PublishReport{Published: 1}, Index: "x"}
	if body := flashed(do("POST", "/console/publish", token, form(url.Values{})), "/console/publish"); !strings.Contains(body, "Left undone: 1 event not summarized: another worker was summarizing it (worker-b until 2026-12-02 03:05:00 UTC)") {
		t.Errorf("a round that passed over another worker's event:\n%s", body)
	}
	f.round = publish.Round{Summarized: publish.SummarizeReport{Accepted: 1, Failed: 1}, Published: publish.PublishReport{Published: 1}, Index: "x"}
	f.roundErr = fmt.Errorf("summarizing stopped after 2 of 5 events: openai: connection refused: %w\n(1 pages published now; the events not summarized wait for the next `tidemark publish`)", tidemark.ErrUnavailable)
	body = flashed(do("POST", "/console/publish", token, form(url.Values{})), "/console/publish")
	if !strings.Contains(body, `class="problem"`) || !strings.Contains(body, "connection refused") || !strings.Contains(body, "1 page published") ||
		!strings.Contains(body, "did not answer") || strings.Contains(body, "internal error") {
		t.Errorf("a summarizer outage does not read as one:\n%s", body)
	}

	f.sweep = publish.SweepReport{Pages: 3, Withdrawn: 1, Republished: 2}
	if body := flashed(do("POST", "/console/publish/sweep", token, form(url.Values{})), "/console/publish"); !strings.Contains(body, "2 republished, 1 withdrawn") {
		t.Errorf("no notice of the sweep:\n%s", body)
	}
	f.sweep, f.sweepErr = publish.SweepReport{Pages: 3, Failed: 1, Missing: 1, Errors: []string{"page p1: store down"}}, fmt.Errorf("sweep: 1 pages failed to converge: %w", tidemark.ErrUnconfirmed)
	if body := flashed(do("POST", "/console/publish/sweep", token, form(url.Values{})), "/console/publish"); !strings.Contains(body, `class="problem"`) ||
		!strings.Contains(body, "1 failed") || !strings.Contains(body, "store down") || !strings.Contains(body, "1 missing from the object store") {
		t.Errorf("a sweep with a failed page:\n%s", body)
	}

	if body := flashed(do("POST", "/console/publish/summaries/s3/reject", token, form(url.Values{"reason": {" "}})), "/console/publish"); !strings.Contains(body, "needs a reason") {
		t.Errorf("reject without a reason:\n%s", body)
	}
	body = flashed(do("POST", "/console/publish/summaries/s3/reject", token, form(url.Values{"reason": {"wrong version"}, "event": {"e1"}})), "/console/publish?event=e1")
	if !strings.Contains(body, "Rejected summary s3 of event e1: wrong version") || !strings.Contains(body, "the next publishing round withdraws its page") ||
		f.lastCall(t) != "reject s3: wrong version" || strings.Contains(body, "summaries/s3/reject") {
		t.Errorf("reject:\n%s", body)
	}
}

// Over a real pipeline: a round publishes the event's page, the summary
// is listed as current and published, a rejection needs a reason and a
// summary that exists, and the next sweep (a publishing round too) withdraws the rejected page.
func TestPublishAPIOnAPipeline(t *testing.T) {
	p, db, _, token := mustPublishPipeline(t, nil, "Widget 2.0 syncs in the background.")
	do := mustServe(t, db, func(s *web.Server) { s.PublishOps, s.Publish = p, db.Publish() })

	var round publish.Round
	r := do("POST", "/api/publish", token, nil)
	if r.Code != 200 || json.Unmarshal([]byte(r.Body), &round) != nil || round.Published.Published != 1 || round.More {
		t.Fatalf("POST /api/publish: %d %s", r.Code, r.Body)
	}
	var page struct{ Items []publish.Summary }
	r = do("GET", "/api/summaries", token, nil)
	if r.Code != 200 || json.Unmarshal([]byte(r.Body), &page) != nil || len(page.Items) != 1 || !page.Items[0].Current || page.Items[0].PublishedAt == nil {
		t.Fatalf("GET /api/summaries: %d %s", r.Code, r.Body)
	}
	id := page.Items[0].ID
	// Recorded missing from the store (a sweep that could not republish
	// it): the console says so, until a sweep finds the page there.
	if n := mustRecordMissing(t, db.Publish()); n != 1 {
		t.Fatalf("%d pages recorded missing, want 1", n)
	}
	if r := do("GET", "/console/publish", token, nil); !strings.Contains(r.Body, "1</strong> missing from the object store") {
		t.Fatalf("the console with a page missing:\n%s", r.Body)
	}
	if r := do("POST", "/api/publish/sweep", token, nil); r.Code != 200 {
		t.Fatalf("sweep: %d %s", r.Code, r.Body)
	}
	if r := do("GET", "/console/publish", token, nil); strings.Contains(r.Body, "missing from the object store") {
		t.Fatalf("the console after a sweep found the page:\n%s", r.Body)
	}
	jsonBody := func(s string) func(*http.Request) { return withBody("application/json", s) }
	mustErrorClass(t, "reject without a reason", do("POST", "/api/summaries/"+id+"/reject", token, jsonBody(`{"reason":""}`)), 400, "invalid", tidemark.ExitInvalid)
	mustErrorClass(t, "reject no such summary", do("POST", "/api/summaries/nope/reject", token, jsonBody(`{"reason":"x"}`)), 404, "not_found", tidemark.ExitNotFound)
	if r := do("POST", "/api/summaries/"+id+"/reject", token, jsonBody(`{"reason":"wrong"}`)); r.Code != 200 || !strings.Contains(r.Body, `"rejected_reason": "wrong"`) {
		t.Fatalf("reject: %d %s", r.Code, r.Body)
	}
	if r := do("GET", "/console/publish", token, nil); !strings.Contains(r.Body, "1</strong> to be withdrawn by the next publishing round") {
		t.Fatalf("the console before the sweep:\n%s", r.Body)
	}
	var rep publish.SweepReport
	if r := do("POST", "/api/publish/sweep", token, nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &rep) != nil || rep.Withdrawn != 1 {
		t.Fatalf("sweep after the rejection: %d %s", r.Code, r.Body)
	}
	if r := do("GET", "/console/publish", token, nil); !strings.Contains(r.Body, "0</strong> of 1 pages published") || !strings.Contains(r.Body, `rejected</span>: <span class="wrap">wrong</span>`) ||
		strings.Contains(r.Body, "to be withdrawn") {
		t.Fatalf("the console after the sweep:\n%s", r.Body)
	}
	// The way back: lifting the rejection (with a reason) makes the
	// summary current again, and the next round publishes its page.
	mustErrorClass(t, "unreject without a reason", do("POST", "/api/summaries/"+id+"/unreject", token, jsonBody(`{"reason":" "}`)), 400, "invalid", tidemark.ExitInvalid)
	mustErrorClass(t, "unreject no such summary", do("POST", "/api/summaries/nope/unreject", token, jsonBody(`{"reason":"x"}`)), 404, "not_found", tidemark.ExitNotFound)
	var back publish.Summary
	if r := do("POST", "/api/summaries/"+id+"/unreject", token, jsonBody(`{"reason":"it was right"}`)); r.Code != 200 || json.Unmarshal([]byte(r.Body), &back) != nil ||
		!back.Current || back.Rejected() || len(back.Lifted) != 1 || back.Lifted[0].RejectedReason != "wrong" || back.Lifted[0].Reason != "it was right" {
		t.Fatalf("unreject: %d %s", r.Code, r.Body)
	}
	mustErrorClass(t, "unreject a summary not rejected", do("POST", "/api/summaries/"+id+"/unreject", token, jsonBody(`{"reason":"x"}`)), 409, "conflict", tidemark.ExitConflict)
	if r := do("POST", "/api/publish", token, nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &round) != nil || round.Published.Published != 1 {
		t.Fatalf("POST /api/publish after the unreject: %d %s", r.Code, r.Body)
	}
	if r := do("GET", "/console/publish", token, nil); !strings.Contains(r.Body, "1</strong> of 1 pages published") {
		t.Fatalf("the console after the unreject:\n%s", r.Body)
	}
}

// mustRecordMissing records every published page missing from the wiki's
// store, as a sweep that could not republish them does, and returns how
// many it recorded.
func mustRecordMissing(t *testing.T, st *sqlstore.PublishStore) int {
	t.Helper()
	ctx := context.Background()
	bound, ok, err := st.BoundStore(ctx)
	if err != nil || !ok {
		t.Fatalf("the wiki's store: %v bound %v", err, ok)
	}
	var found []publish.Absence
	if err := st.PageStates(ctx, func(ps publish.PageState) error {
		if ps.PublishedSummaryID != "" {
			found = append(found, publish.Absence{PageID: ps.PageID, Generation: ps.PublishedGeneration, Absent: true})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordAbsence(ctx, bound, found); err != nil {
		t.Fatal(err)
	}
	return len(found)
}

// mustPublishPipeline opens a real pipeline (configured by edit) with one
// source whose run froze an event for each of evidence, and a token.
func mustPublishPipeline(t *testing.T, edit func(*pipeline.Config), evidence ...string) (*pipeline.Pipeline, *sqlstore.DB, []tidemark.Event, string) {
	t.Helper()
	ctx := context.Background()
	env := sqltest.NewEnv(5)
	dbURL := sqltest.Backends()[0].NewURL(t)
	db := sqltest.MustOpenURL(t, dbURL, env)
	cfg := pipeline.Defaults()
	cfg.Home, cfg.Database = t.TempDir(), dbURL
	if edit != nil {
		edit(&cfg)
	}
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if _, err := db.Ingest().AddSource(ctx, ingest.NewSource{Name: "src", Kind: "feed", Location: "http://x/", Interval: time.Minute, RetryBudget: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := db.Ingest().Claim(ctx, "src", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var items []tidemark.Item
	for i, e := range evidence {
		items = append(items, tidemark.Item{Key: fmt.Sprint(i), Title: fmt.Sprintf("Widget %d", i), OccurredAt: env.Clock.Now().Add(time.Duration(i) * time.Minute), Evidence: []byte(e)})
	}
	if _, err := db.Ingest().Settle(ctx, c, ingest.Settlement{Cursor: "1", NextDueAt: env.Clock.Now(), Items: items}); err != nil {
		t.Fatal(err)
	}
	evs, err := db.Ingest().Events(ctx, ingest.EventFilter{})
	if err != nil || len(evs) != len(evidence) {
		t.Fatalf("events %+v %v", evs, err)
	}
	token, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	return p, db, evs, token
}

// A summarizer that does not answer stops Publish now with a notice that
// says so and keeps what the round published: the summary accepted
// before the outage is on its page.
func TestPublishNowSummarizerOutage(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	p, db, evs, token := mustPublishPipeline(t, func(c *pipeline.Config) {
		c.Summarizer = "openai"
		c.OpenAI.BaseURL, c.OpenAI.APIKey, c.OpenAI.Model = down.URL+"/v1", "k", "m-down"
	}, "First evidence.", "Second evidence.")
	// One event has a summary already (under another model): pending.
	if _, _, err := db.Publish().Accept(context.Background(), publish.NewSummary{EventID: evs[0].ID, EvidenceHash: evs[0].EvidenceHash,
		Draft: summarize.Draft{Text: "Accepted before the outage.", Model: "m-up", PromptVersion: "p"}}); err != nil {
		t.Fatal(err)
	}
	do := mustServe(t, db, func(s *web.Server) { s.PublishOps, s.Publish = p, db.Publish() })

	r := do("POST", "/console/publish", token, form(url.Values{}))
	if r.Code != 303 || r.Header.Get("Location") != "/console/publish" {
		t.Fatalf("Publish now: %d %s", r.Code, r.Header.Get("Location"))
	}
	cookie := strings.Split(r.Header.Get("Set-Cookie"), ";")[0]
	body := do("GET", "/console/publish", token, func(req *http.Request) { req.Header.Set("Cookie", cookie) }).Body
	for _, want := range []string{`class="problem"`, "did not answer", "status code: 503", "What it did is kept: 0 summaries accepted, 1 page published. The rest waits", "<strong>1</strong> of 1 pages published"} {
		if !strings.Contains(body, want) {
			t.Errorf("after an outage the page lacks %q", want)
		}
	}
	if strings.Contains(body, "internal error") {
		t.Error("an outage reads as an internal error")
	}
	if t.Failed() {
		t.Fatal(body)
	}
	mustErrorClass(t, "POST /api/publish in an outage", do("POST", "/api/publish", token, nil), 503, "unavailable", tidemark.ExitUnavailable)
}

// The console lifts a rejection as publish unreject and the API do: a
// rejected summary has an Unreject form (a reason required), the lift
// needs a reason, is refused from another site, is audited under the
// same name as the API's, and the summary is current again for the next
// round, which publishes its page.
func TestPublishConsoleUnrejects(t *testing.T) {
	p, db, _, token := mustPublishPipeline(t, nil, "Widget 2.0 syncs in the background.")
	do := mustServe(t, db, func(s *web.Server) { s.PublishOps, s.Publish = p, db.Publish() })
	if r := do("POST", "/api/publish", token, nil); r.Code != 200 {
		t.Fatalf("POST /api/publish: %d %s", r.Code, r.Body)
	}
	sums, err := p.Summaries(context.Background(), publish.SummaryFilter{Limit: 10})
	if err != nil || len(sums) != 1 {
		t.Fatalf("summaries %+v %v", sums, err)
	}
	id := sums[0].ID
	unrejectPath := "/console/publish/summaries/" + id + "/unreject"
	if r := do("GET", "/console/publish", token, nil); strings.Contains(r.Body, unrejectPath) {
		t.Fatalf("a current summary is offered an Unreject:\n%s", r.Body)
	}
	if r := do("POST", "/console/publish/summaries/"+id+"/reject", token, form(url.Values{"reason": {"wrong version"}})); r.Code != 303 {
		t.Fatalf("reject: %d %s", r.Code, r.Body)
	}
	var round publish.Round
	if r := do("POST", "/api/publish", token, nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &round) != nil || round.Published.Withdrawn != 1 {
		t.Fatalf("the round after the rejection withdraws nothing: %d %s", r.Code, r.Body)
	}
	r := do("GET", "/console/publish", token, nil)
	for _, want := range []string{`action="` + unrejectPath + `"`, `aria-label="why unreject summary ` + id + `"`, ">Unreject</button>"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("the rejected summary's row lacks %s", want)
		}
	}
	if strings.Contains(r.Body, "summaries/"+id+"/reject") {
		t.Error("a rejected summary is offered Reject again")
	}
	if t.Failed() {
		t.Fatal(r.Body)
	}
	cross := func(r *http.Request) {
		form(url.Values{"reason": {"it was right"}})(r)
		r.Header.Set("Origin", "https://evil.example")
		r.Header.Set("Sec-Fetch-Site", "cross-site")
	}
	if r := do("POST", unrejectPath, token, cross); r.Code != 403 {
		t.Fatalf("an unreject posted from another site: %d %s", r.Code, r.Body)
	}
	flashed := func(r response, path string) string {
		t.Helper()
		if r.Code != 303 || r.Header.Get("Location") != path {
			t.Fatalf("a form's write: %d %s, want 303 to %s", r.Code, r.Header.Get("Location"), path)
		}
		cookie := strings.Split(r.Header.Get("Set-Cookie"), ";")[0]
		return do("GET", path, token, func(req *http.Request) { req.Header.Set("Cookie", cookie) }).Body
	}
	if body := flashed(do("POST", unrejectPath, token, form(url.Values{"reason": {" "}})), "/console/publish"); !strings.Contains(body, "reason") || !strings.Contains(body, `class="problem"`) {
		t.Errorf("unreject without a reason:\n%s", body)
	}
	if s, _ := p.Summaries(context.Background(), publish.SummaryFilter{Limit: 10}); !s[0].Rejected() {
		t.Fatal("an unreject without a reason lifted the rejection")
	}
	body := flashed(do("POST", unrejectPath, token, form(url.Values{"reason": {"it was right"}, "event": {sums[0].EventID}})), "/console/publish?event="+sums[0].EventID)
	if want := "Lifted the rejection of summary " + id + " of event " + sums[0].EventID + ": it is current again"; !strings.Contains(body, want) {
		t.Errorf("the notice lacks %q:\n%s", want, body)
	}
	back, err := p.Summaries(context.Background(), publish.SummaryFilter{Limit: 10})
	if err != nil || !back[0].Current || back[0].Rejected() || len(back[0].Lifted) != 1 || back[0].Lifted[0].Reason != "it was right" {
		t.Fatalf("after the console's unreject: %+v %v", back, err)
	}
	if r := do("GET", "/api/audit?actor=ops", token, nil); !strings.Contains(r.Body, "publish summary unreject") {
		t.Errorf("the unreject is not audited as publish summary unreject:\n%s", r.Body)
	}
	if r := do("POST", "/api/publish", token, nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &round) != nil || round.Published.Published != 1 {
		t.Fatalf("the round after the unreject: %d %s", r.Code, r.Body)
	}
}
