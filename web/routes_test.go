package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/internal/jsontest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize"
)

type noSearch struct{}

func (noSearch) Search(context.Context, publish.SearchQuery) (publish.SearchResult, error) {
	return publish.SearchResult{}, nil
}

// mustFullServer is a Server with every part set, so every route exists.
func mustFullServer(t *testing.T) (*Server, *sqlstore.DB) {
	t.Helper()
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(11))
	return &Server{Ingest: db.Ingest(), Outbox: db.Outbox(), Migrations: db.Content(), Publish: db.Publish(),
		Auth: db.Auth(), Search: noSearch{}, Wiki: http.NotFoundHandler(), Pipeline: NewPipelineMetrics(),
		Docs: struct{ DocOps }{}, Sources: struct{ SourceOps }{}, OutboxOps: struct{ OutboxOps }{}, PublishOps: struct{ PublishOps }{}}, db
}

type openAPIDoc struct {
	Paths map[string]map[string]struct {
		Security *[]map[string][]string `json:"security"`
	} `json:"paths"`
}

// The OpenAPI document names every API route the router has, and nothing
// else: checked against the table the router is built from and against
// the router itself (which pattern answers each documented path).
func TestOpenAPIMatchesRoutes(t *testing.T) {
	s, _ := mustFullServer(t)
	var doc openAPIDoc
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	var head struct{ OpenAPI string }
	_ = json.Unmarshal(openAPIDocument, &head)
	if head.OpenAPI != "3.1.0" {
		t.Errorf("openapi.json is version %q, want 3.1.0", head.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
			// Public operations say so (security: []); private ones
			// inherit the document's bearer requirement.
			isPublic := op.Security != nil && len(*op.Security) == 0
			found := false
			for _, rt := range s.routes() {
				if rt.Pattern == path && rt.Method == strings.ToUpper(method) {
					found = true
					if (rt.Access == public) != isPublic {
						t.Errorf("%s %s: the document says public=%v, the route is not", method, path, isPublic)
					}
				}
			}
			if !found {
				t.Errorf("the document names %s %s, which no route serves", strings.ToUpper(method), path)
			}
		}
	}
	for _, rt := range s.routes() {
		if rt.api() && !documented[rt.Method+" "+rt.Pattern] {
			t.Errorf("route %s %s is missing from openapi.json", rt.Method, rt.Pattern)
		}
	}
	// The router itself: each documented path, its parameters filled in,
	// is answered by the pattern the document names, not by the /api/
	// fallback.
	mux := s.mux()
	for key := range documented {
		method, path, _ := strings.Cut(key, " ")
		concrete := strings.NewReplacer("{name}", "x", "{collection}", "c", "{id}", "i", "{action}", "abort", "{run}", "r", "{event}", "e").Replace(path)
		if strings.Contains(concrete, "{") {
			t.Errorf("%s: fill in its path parameters in this test", path)
			continue
		}
		_, pattern := mux.mux.Handler(httptest.NewRequest(method, concrete, nil))
		if pattern != method+" "+path {
			t.Errorf("%s %s is answered by pattern %q, not %q", method, concrete, pattern, path)
		}
	}
}

// The document is served without a token, and is the document.
func TestOpenAPIServedPublicly(t *testing.T) {
	s, _ := mustFullServer(t)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/api/openapi.json", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") || rec.Body.String() != string(openAPIDocument) {
		t.Fatalf("/api/openapi.json: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
}

// Every write the site accepts is audited, by the store in the write's
// transaction or through Server.Write.
func TestEveryWriteIsAudited(t *testing.T) {
	s, _ := mustFullServer(t)
	writes := 0
	for _, rt := range s.routes() {
		if rt.Method == "" && rt.Pattern != "/" && rt.Pattern != "/api/" {
			t.Errorf("route %s answers every method; only the wiki and the /api/ fallback may", rt.Pattern)
		}
		if !rt.write() {
			continue
		}
		writes++
		// The audit names what was done: one action, never a list of
		// the route's verbs; a {wildcard} in it is the path's, filled in
		// per request.
		if strings.Contains(rt.Action, "|") {
			t.Errorf("write %s %s is audited as %q: a list of actions, not the one done", rt.Method, rt.Pattern, rt.Action)
		}
		for _, m := range regexp.MustCompile(`\{[a-z]+\}`).FindAllString(rt.Action, -1) {
			if !strings.Contains(rt.Pattern, m) {
				t.Errorf("write %s %s is audited as %q, whose %s is no wildcard of its path", rt.Method, rt.Pattern, rt.Action, m)
			}
		}
		if rt.Audit == auditStore && rt.Pattern != "/signin" && rt.Pattern != "/signout" {
			t.Errorf("write %s %s says the store audits it; only sign-in and sign-out are", rt.Method, rt.Pattern)
		}
	}
	if writes == 0 {
		t.Fatal("no write routes: the table is not what this test expects")
	}
}

// A write in the table is audited by construction: the site wraps it.
func TestTableWritesAreWrapped(t *testing.T) {
	ctx := context.Background()
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(14))
	s := &Server{Ingest: db.Ingest(), Auth: db.Auth()}
	secret, _, err := db.Auth().CreateToken(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	h := s.requireAuth(s.audited(route{Method: http.MethodPost, Pattern: "/api/sources/{name}/pause", Access: private,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })}))
	req := httptest.NewRequest("POST", "http://127.0.0.1/api/sources/x/pause", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	log, err := db.Auth().AuditLog(ctx, tidemark.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Code != 204 || len(log) != 1 || log[0].Actor != "alice" || log[0].Action != "POST /api/sources/{name}/pause" ||
		log[0].Target != "/api/sources/x/pause" || log[0].Outcome != tidemark.AuditOK {
		t.Fatalf("%d, audit %+v", rec.Code, log)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a public write was accepted into the site")
		}
	}()
	s.audited(route{Method: http.MethodPost, Pattern: "/api/x", Access: public, Handler: http.NotFoundHandler()})
}

// failingAuditor is an Authenticator whose audit cannot be written.
type failingAuditor struct{ Authenticator }

func (failingAuditor) StartAudit(context.Context, tidemark.Token, string, string) (tidemark.AuditEntry, error) {
	return tidemark.AuditEntry{}, errors.New("disk full")
}

// Server.Write records who made a write before it runs and how it ended
// after; a write that cannot be audited is refused and never runs.
func TestWriteIsAuditedWithWhoDidIt(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := sqltest.MustOpen(t, b, sqltest.NewEnv(12))
		s := &Server{Ingest: db.Ingest(), Auth: db.Auth()}
		secret, tok, err := db.Auth().CreateToken(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		ran := 0
		var seen string
		mux := http.NewServeMux()
		mux.Handle("POST /w/ok", s.requireAuth(s.Write("poke", func(w http.ResponseWriter, r *http.Request) {
			ran++
			seen = Actor(r.Context())
			w.WriteHeader(http.StatusNoContent)
		})))
		mux.Handle("POST /w/conflict", s.requireAuth(s.Write("poke", func(w http.ResponseWriter, r *http.Request) {
			ran++
			s.fail(w, r, fmt.Errorf("already poked: %w", tidemark.ErrConflict))
		})))
		post := func(h http.Handler, path string) *httptest.ResponseRecorder {
			req := httptest.NewRequest("POST", "http://127.0.0.1"+path, nil)
			req.Header.Set("Authorization", "Bearer "+secret)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		if rec := post(mux, "/w/ok"); rec.Code != 204 || seen != "alice" {
			t.Fatalf("write: %d, actor %q", rec.Code, seen)
		}
		if rec := post(mux, "/w/conflict"); rec.Code != 409 {
			t.Fatalf("conflicting write: %d", rec.Code)
		}
		log, err := db.Auth().AuditLog(ctx, tidemark.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range log {
			if e.Actor != "alice" || e.TokenID != tok.ID || e.Action != "poke" {
				t.Errorf("entry %+v: want alice's poke", e)
			}
			got = append(got, e.Target+" "+e.Outcome)
		}
		slices.Sort(got)
		if want := []string{"/w/conflict conflict", "/w/ok ok"}; !slices.Equal(got, want) {
			t.Fatalf("audit %q, want %q", got, want)
		}

		// An audit that cannot be written refuses the write.
		s.Auth = failingAuditor{db.Auth()}
		ran = 0
		refused := http.NewServeMux()
		refused.Handle("POST /w/ok", s.requireAuth(s.Write("poke", func(w http.ResponseWriter, r *http.Request) { ran++ })))
		if rec := post(refused, "/w/ok"); rec.Code != http.StatusServiceUnavailable || ran != 0 {
			t.Fatalf("write without an audit: %d, ran %d times", rec.Code, ran)
		}
	})
}

// The documented response schemas hold for real answers: every property
// a schema requires is in every object the route returns.
func TestOpenAPISchemasMatchAnswers(t *testing.T) {
	ctx := context.Background()
	env := sqltest.NewEnv(13)
	url := sqltest.Backends()[0].NewURL(t)
	db := sqltest.MustOpenURL(t, url, env)
	cfg := pipeline.Defaults()
	cfg.Home, cfg.Database = t.TempDir(), url
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s := &Server{Ingest: db.Ingest(), Outbox: db.Outbox(), Migrations: db.Content(), Auth: db.Auth(), Search: noSearch{}, Docs: p, OutboxOps: p, PublishOps: p}
	if _, err := db.Ingest().AddSource(ctx, ingest.NewSource{Name: "src", Kind: "git", Location: "/x", Interval: time.Minute, RetryBudget: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := db.Ingest().Claim(ctx, "src", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest().Settle(ctx, c, ingest.Settlement{Cursor: "1", NextDueAt: env.Clock.Now(),
		Items: []tidemark.Item{{Key: "1", Title: "t", OccurredAt: env.Clock.Now(), Evidence: []byte("e")}}}); err != nil {
		t.Fatal(err)
	}
	evs, err := db.Ingest().Events(ctx, ingest.EventFilter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %+v %v", evs, err)
	}
	if _, _, err := db.Publish().Accept(ctx, publish.NewSummary{EventID: evs[0].ID, EvidenceHash: evs[0].EvidenceHash,
		Draft: summarize.Draft{Text: "A summary.", Model: "m", PromptVersion: "p"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Outbox().AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "l", Provider: "webhook", Settings: map[string]string{"url": "http://127.0.0.1:1/"}}}); err != nil {
		t.Fatal(err)
	}
	ch, err := db.Outbox().AddChannel(ctx, "src", "l", "room", "")
	if err != nil {
		t.Fatal(err)
	}
	in, err := db.Outbox().Draft(ctx, outbox.Draft{Lane: "l", Target: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Outbox().AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "src", Provider: "webhook", Settings: map[string]string{"url": "http://127.0.0.1:1/"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Content().CreateCollection(ctx, "notes", []content.Field{{Name: "n", Type: content.Text}}); err != nil {
		t.Fatal(err)
	}
	note, err := db.Content().Put(ctx, "notes", content.Put{Set: content.Fields{"n": json.RawMessage(`"1"`)}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := db.Content().StartRun(ctx, "notes", "n", content.Number, 10)
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Auth().CreateSession(ctx, secret, time.Hour); err != nil { // an audit entry
		t.Fatal(err)
	}

	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct{ Schema json.RawMessage } `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Ref        string                     `json:"$ref"`
		Required   []string                   `json:"required"`
		AllOf      []json.RawMessage          `json:"allOf"`
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
	}
	var resolve func(raw json.RawMessage) schema
	resolve = func(raw json.RawMessage) schema {
		var sc schema
		if err := json.Unmarshal(raw, &sc); err != nil {
			t.Fatalf("schema %s: %v", raw, err)
		}
		if name, ok := strings.CutPrefix(sc.Ref, "#/components/schemas/"); ok {
			def, found := doc.Components.Schemas[name]
			if !found {
				t.Fatalf("$ref %s names no schema", sc.Ref)
			}
			return resolve(def)
		}
		for _, part := range sc.AllOf {
			p := resolve(part)
			sc.Required = append(sc.Required, p.Required...)
			if sc.Properties == nil {
				sc.Properties = map[string]json.RawMessage{}
			}
			for k, v := range p.Properties {
				sc.Properties[k] = v
			}
		}
		return sc
	}
	var check func(where string, sc schema, v any)
	check = func(where string, sc schema, v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, req := range sc.Required {
				if _, ok := v[req]; !ok {
					t.Errorf("%s: required property %q missing from the answer", where, req)
				}
			}
			for k, raw := range sc.Properties {
				x, ok := v[k]
				switch {
				case ok && x == nil:
					if !allowsNull(doc.Components.Schemas, raw) {
						t.Errorf("%s.%s: the answer has null, the schema does not allow it: %s", where, k, raw)
					}
				case ok:
					check(where+"."+k, resolve(raw), x)
				}
			}
		case []any:
			if sc.Items == nil {
				return
			}
			item := resolve(sc.Items)
			for i, x := range v {
				check(fmt.Sprintf("%s[%d]", where, i), item, x)
			}
		}
	}
	h := s.Handler()
	checked := 0
	for path, ops := range doc.Paths {
		op, ok := ops["get"]
		if !ok || path == "/api/openapi.json" {
			continue
		}
		concrete := strings.NewReplacer("{name}", "src", "{collection}", "notes", "{run}", c.RunID, "{event}", evs[0].ID).Replace(path)
		if strings.HasPrefix(path, "/api/migrations/") {
			concrete = strings.Replace(concrete, "{id}", run.ID, 1)
		}
		if strings.HasPrefix(path, "/api/outbox/intents/") {
			concrete = strings.Replace(concrete, "{id}", in.ID, 1)
		}
		if strings.HasPrefix(path, "/api/outbox/channels/") {
			concrete = strings.Replace(concrete, "{id}", ch.ID, 1)
		}
		concrete = strings.Replace(concrete, "{id}", note.ID, 1)
		req := httptest.NewRequest("GET", "http://127.0.0.1"+concrete+"?q=x", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("GET %s: %d %s", concrete, rec.Code, rec.Body)
			continue
		}
		var v any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Errorf("GET %s: %v", concrete, err)
			continue
		}
		check(path, resolve(op.Responses["200"].Content["application/json"].Schema), v)
		checked++
	}
	if checked < 9 {
		t.Fatalf("checked %d answers", checked)
	}
}

// A console write whose form fails answers with a redirect that says why;
// its audit records the failure, not a success.
func TestAFailedConsoleWriteIsAuditedAsFailed(t *testing.T) {
	ctx := context.Background()
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(15))
	s := &Server{Ingest: db.Ingest(), Auth: db.Auth()}
	secret, _, err := db.Auth().CreateToken(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	h := s.requireAuth(s.audited(route{Method: http.MethodPost, Pattern: "/console/sources/{name}/pause", Access: private,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.redirect(w, r, "/status", "", fmt.Errorf("source %q: %w", r.PathValue("name"), tidemark.ErrNotFound))
		})}))
	req := httptest.NewRequest("POST", "http://127.0.0.1/console/sources/x/pause", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	log, err := db.Auth().AuditLog(ctx, tidemark.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusSeeOther || len(log) != 1 || log[0].Outcome == tidemark.AuditOK || !strings.Contains(log[0].Detail, "not found") {
		t.Fatalf("%d, audit %+v", rec.Code, log)
	}
}

// Every write takes a body up to its route's limit and no more: a larger
// one is refused with 413 before its handler reads a byte (the handlers of
// this server's operations are nil, so reaching one would panic), and the
// refusal is audited as a failed write.
func TestEveryWriteRefusesABodyOverItsLimit(t *testing.T) {
	ctx := context.Background()
	s, db, h, secret := mustFullSite(t)
	writes := 0
	for _, rt := range s.routes() {
		if !rt.write() {
			continue
		}
		writes++
		limit := rt.bodyLimit()
		if limit <= 0 || limit > maxDocumentBody {
			t.Errorf("%s %s: body limit %d", rt.Method, rt.Pattern, limit)
			continue
		}
		path := strings.NewReplacer("{name}", "x", "{id}", "x", "{op}", "pause", "{action}", "retire",
			"{collection}", "pages").Replace(rt.Pattern)
		req := httptest.NewRequest(rt.Method, "http://127.0.0.1"+path, strings.NewReader(strings.Repeat("a", int(limit)+1)))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "bytes") {
			t.Errorf("%s %s with %d bytes: %d %q, want 413 saying how much it takes", rt.Method, path, limit+1, rec.Code, rec.Body.String())
		}
	}
	if writes == 0 {
		t.Fatal("no write routes")
	}
	log, err := db.Auth().AuditLog(ctx, tidemark.AuditFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, e := range log {
		if e.Outcome != tidemark.AuditOK && strings.Contains(e.Detail, "bytes") {
			failed++
		}
	}
	if want := writes - 2; failed != want { // sign-in and sign-out audit their own
		t.Errorf("%d refusals audited as failed, want %d", failed, want)
	}
}

// A body that does not say its length is cut off at the route's limit, and
// the write is refused as too large: a console form is not run with the
// fields it lost, and a JSON body is not read as a broken object.
func TestABodyWithoutALengthOverTheLimitIsRefused(t *testing.T) {
	_, _, h, secret := mustFullSite(t)
	for _, tc := range []struct{ method, path, contentType, body string }{
		{"POST", "/console/docs/pages/x/delete", "application/x-www-form-urlencoded", "force=on&pad=" + strings.Repeat("a", maxWriteBody)},
		{"POST", "/api/sources", "application/json", `{"name":"` + strings.Repeat("a", maxWriteBody) + `"}`},
	} {
		req := httptest.NewRequest(tc.method, "http://127.0.0.1"+tc.path, struct{ io.Reader }{strings.NewReader(tc.body)})
		req.ContentLength = -1 // chunked: the length is not said
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", tc.contentType)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req) // the operations are nil: reaching one panics
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), fmt.Sprint(maxWriteBody)) {
			t.Errorf("%s %s, %d bytes unsaid: %d %.300q, want 413 naming the limit", tc.method, tc.path, len(tc.body), rec.Code, rec.Body.String())
		}
	}
}

// mustFullSite is mustFullServer's site with a token for alice.
func mustFullSite(t *testing.T) (*Server, *sqlstore.DB, http.Handler, string) {
	t.Helper()
	s, db := mustFullServer(t)
	secret, _, err := db.Auth().CreateToken(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	return s, db, s.Handler(), secret
}

// allowsNull reports whether a property's schema admits null: a type that
// is or lists "null", or a oneOf or anyOf with such a branch, following
// $refs to the document's schemas.
func allowsNull(schemas map[string]json.RawMessage, raw json.RawMessage) bool {
	var sc struct {
		Ref   string            `json:"$ref"`
		Type  json.RawMessage   `json:"type"`
		OneOf []json.RawMessage `json:"oneOf"`
		AnyOf []json.RawMessage `json:"anyOf"`
	}
	if json.Unmarshal(raw, &sc) != nil {
		return false
	}
	var one string
	var many []string
	if json.Unmarshal(sc.Type, &one) == nil && one == "null" || json.Unmarshal(sc.Type, &many) == nil && slices.Contains(many, "null") {
		return true
	}
	for _, branch := range append(sc.OneOf, sc.AnyOf...) {
		if allowsNull(schemas, branch) {
			return true
		}
	}
	if name, ok := strings.CutPrefix(sc.Ref, "#/components/schemas/"); ok {
		return allowsNull(schemas, schemas[name])
	}
	return false
}

// jsonField is one key encoding/json writes for a struct.
type jsonField struct {
	name string
	// null: the key is written as null when its field is unset (a
	// pointer or an interface without omitempty).
	null bool
}

// jsonFields are the keys encoding/json writes for struct type t, with
// embedded structs' keys promoted.
func jsonFields(t reflect.Type) []jsonField {
	var fs []jsonField
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			fs = append(fs, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		omit := slices.Contains(strings.Split(opts, ","), "omitempty")
		kind := f.Type.Kind()
		fs = append(fs, jsonField{name: name, null: !omit && (kind == reflect.Pointer || kind == reflect.Interface)})
	}
	return fs
}

// The schemas of the objects the API returns say what the Go types behind
// them write: every key that can be null is documented and allows null,
// and every documented property is a key the type writes.
func TestOpenAPISchemasAllowTheNullsTheServerSends(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"Source": tidemark.Source{}, "Run": tidemark.Run{}, "Event": tidemark.Event{}, "AuditEntry": tidemark.AuditEntry{},
		"Lane": outbox.LaneView{}, "Intent": outbox.Intent{}, "Channel": outbox.Channel{}, "GapReport": outbox.GapReport{},
		"Migration": content.Run{}, "Summary": publish.Summary{}, "Revision": ingest.Revision{},
	} {
		var sc struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(doc.Components.Schemas[name], &sc); err != nil || sc.Properties == nil {
			t.Errorf("schema %s: no properties (%v)", name, err)
			continue
		}
		keys := map[string]bool{}
		for _, f := range jsonFields(reflect.TypeOf(v)) {
			keys[f.name] = true
			if !f.null {
				continue
			}
			raw, ok := sc.Properties[f.name]
			switch {
			case !ok:
				t.Errorf("%s.%s: %T writes it, null when unset; the schema does not name it", name, f.name, v)
			case !allowsNull(doc.Components.Schemas, raw):
				t.Errorf("%s.%s: %T writes null when it is unset; the schema does not allow null: %s", name, f.name, v, raw)
			}
		}
		// A key its MarshalJSON writes beside the fields (a Source's
		// next_try_at) is one it writes too.
		for _, k := range jsontest.Keys(t, v) {
			keys[k] = true
		}
		for p := range sc.Properties {
			if !keys[p] {
				t.Errorf("%s.%s: documented, but %T writes no such key", name, p, v)
			}
		}
	}
}

// Every write can be refused with 413, a body over its route's limit
// (limitBody wraps them all), and the document says so with the Error
// schema and the limit.
func TestOpenAPIDocumentsTooLargeOnEveryWrite(t *testing.T) {
	s, _ := mustFullServer(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Description string `json:"description"`
				Content     map[string]struct {
					Schema struct {
						Ref string `json:"$ref"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	writes := 0
	for _, rt := range s.routes() {
		if !rt.api() || !rt.write() {
			continue
		}
		writes++
		op, ok := doc.Paths[rt.Pattern][strings.ToLower(rt.Method)]
		if !ok {
			continue // TestOpenAPIMatchesRoutes says so
		}
		r, ok := op.Responses["413"]
		if !ok {
			t.Errorf("%s %s: no 413 documented, though a body over %d bytes is refused with one", rt.Method, rt.Pattern, rt.bodyLimit())
			continue
		}
		if ref := r.Content["application/json"].Schema.Ref; ref != "#/components/schemas/Error" {
			t.Errorf("%s %s: 413 answers %q, want the Error schema", rt.Method, rt.Pattern, ref)
		}
		if limit := fmt.Sprintf("%d bytes", rt.bodyLimit()); !strings.Contains(r.Description, limit) {
			t.Errorf("%s %s: 413 says %q, not the route's limit (%s)", rt.Method, rt.Pattern, r.Description, limit)
		}
	}
	if writes == 0 {
		t.Fatal("no API writes")
	}
}

// Every API write refuses a field it does not take, whether it takes a
// body or none: {"x": 1} is a 400 that names x, never a write that ran
// without it (the operations are nil, so reaching one panics). The
// document lists the 400 on each.
func TestEveryAPIWriteRefusesAnUnknownField(t *testing.T) {
	s, _, h, secret := mustFullSite(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	writes := 0
	for _, rt := range s.routes() {
		if !rt.api() || !rt.write() {
			continue
		}
		writes++
		if _, ok := doc.Paths[rt.Pattern][strings.ToLower(rt.Method)].Responses["400"]; !ok {
			t.Errorf("%s %s: openapi.json does not list its 400", rt.Method, rt.Pattern)
		}
		path := strings.NewReplacer("{name}", "x", "{id}", "x", "{action}", "retire",
			"{collection}", "pages").Replace(rt.Pattern)
		if strings.HasPrefix(path, "/api/migrations/") {
			path = strings.Replace(path, "retire", "abort", 1)
		}
		req := httptest.NewRequest(rt.Method, "http://127.0.0.1"+path, strings.NewReader(`{"x":1}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("%s %s with {\"x\":1}: the write ran (%v)", rt.Method, path, v)
				}
			}()
			h.ServeHTTP(rec, req)
		}()
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `\"x\"`) {
			t.Errorf("%s %s with {\"x\":1}: %d %.300q, want 400 naming the field", rt.Method, path, rec.Code, rec.Body.String())
		}
	}
	if writes == 0 {
		t.Fatal("no API writes")
	}
}

// An action's {wildcard} is the path's value in the audit: one route for a
// lane's set, remove and reconcile still names the one that was done.
func TestAuditedActionNamesItsWildcard(t *testing.T) {
	ctx := context.Background()
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(14))
	s := &Server{Ingest: db.Ingest(), Auth: db.Auth()}
	secret, _, err := db.Auth().CreateToken(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /status/lanes/{name}/{action}", s.requireAuth(s.audited(route{Method: http.MethodPost,
		Pattern: "/status/lanes/{name}/{action}", Access: private, Action: "outbox lane {action}",
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })})))
	req := httptest.NewRequest("POST", "http://127.0.0.1/status/lanes/hooks/reconcile", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	mux.ServeHTTP(httptest.NewRecorder(), req)
	log, err := db.Auth().AuditLog(ctx, tidemark.AuditFilter{})
	if err != nil || len(log) != 1 || log[0].Action != "outbox lane reconcile" {
		t.Fatalf("audit %v %+v, want one outbox lane reconcile", err, log)
	}
}
