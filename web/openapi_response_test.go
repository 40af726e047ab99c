package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize"
	"github.com/tidemark/tidemark/web"
)

// The Lane schema says what the lane endpoints send: its properties are
// the fields of the lanes GET /api/outbox/lanes and GET
// /api/outbox/lanes/{name} answer with (a broken lane's problem and a
// lane's gaps among them), it requires those that every lane carries,
// and a field sent as null is one its schema allows to be null. The same
// holds for the schemas its properties refer to (GapReport).
func TestOpenAPILaneSchemaIsWhatTheLaneEndpointsSend(t *testing.T) {
	do, token, f := mustOutboxConsole(t)
	f.lanes["hook"].Gaps = &outbox.GapReport{Lane: "hook", Count: 2, MinMS: 400, MedianMS: 950, ThresholdMS: 1000, BelowThreshold: 1}
	var doc openAPISchemas
	if r := do("GET", "/api/openapi.json", "", nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &doc) != nil {
		t.Fatalf("GET /api/openapi.json: %d %.200s", r.Code, r.Body)
	}
	var page struct {
		Items []map[string]any `json:"items"`
	}
	if r := do("GET", "/api/outbox/lanes", token, nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &page) != nil {
		t.Fatalf("GET /api/outbox/lanes: %d %s", r.Code, r.Body)
	}
	lanes := page.Items
	for _, name := range []string{"hook", "dead"} {
		var lane map[string]any
		if r := do("GET", "/api/outbox/lanes/"+name, token, nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &lane) != nil {
			t.Fatalf("GET /api/outbox/lanes/%s: %d %s", name, r.Code, r.Body)
		}
		lanes = append(lanes, lane)
	}
	// The fixture has what is sent only sometimes, or the schema could
	// leave it out unnoticed.
	for _, k := range []string{"problem", "gaps", "guarantee"} {
		if !slices.ContainsFunc(lanes, func(l map[string]any) bool { return l[k] != nil }) {
			t.Fatalf("no lane sent %s: the test cannot check its schema", k)
		}
	}
	doc.mustDescribe(t, "Lane", lanes)

	// PATCH answers the lane with what the change did to its writes in
	// doubt: key_resend_lost, null or not.
	var sets []map[string]any
	for _, lost := range []*outbox.KeyResendLost{nil, outbox.NewKeyResendLost([]string{"i1"}, true, false)} {
		f.keysLost = lost
		var set map[string]any
		if r := do("PATCH", "/api/outbox/lanes/hook", token, withBody("application/json", `{"min_gap":"5s"}`)); r.Code != 200 || json.Unmarshal([]byte(r.Body), &set) != nil {
			t.Fatalf("PATCH /api/outbox/lanes/hook: %d %s", r.Code, r.Body)
		}
		sets = append(sets, set)
	}
	f.keysLost = nil
	doc.mustDescribe(t, "LaneSet", sets)
}

// openAPISchemas is the part of the OpenAPI document that says what an
// object carries.
type openAPISchemas struct {
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

// schemaNode is what a schema says of a value's shape.
type schemaNode struct {
	Ref        string                     `json:"$ref"`
	AllOf      []json.RawMessage          `json:"allOf"`
	Type       any                        `json:"type"`
	Required   []string                   `json:"required"`
	Properties map[string]json.RawMessage `json:"properties"`
	Items      json.RawMessage            `json:"items"`
}

// resolve reads the schema raw, following a $ref to the schema it names
// and merging the parts of an allOf (a detail is its object's schema and
// what it adds).
func (doc openAPISchemas) resolve(tb testing.TB, where string, raw json.RawMessage) schemaNode {
	tb.Helper()
	var sc schemaNode
	if err := json.Unmarshal(raw, &sc); err != nil {
		tb.Fatalf("%s: %v", where, err)
	}
	if sc.Ref != "" {
		name := strings.TrimPrefix(sc.Ref, "#/components/schemas/")
		def, ok := doc.Components.Schemas[name]
		if !ok {
			tb.Fatalf("%s: $ref %s names no schema", where, sc.Ref)
		}
		return doc.resolve(tb, name, def)
	}
	for _, part := range sc.AllOf {
		p := doc.resolve(tb, where, part)
		sc.Required = append(sc.Required, p.Required...)
		if sc.Properties == nil {
			sc.Properties = map[string]json.RawMessage{}
		}
		maps.Copy(sc.Properties, p.Properties)
		if sc.Type == nil {
			sc.Type = p.Type
		}
	}
	return sc
}

// mustDescribe checks that schema name describes objs, objects the API
// sent: its properties are the fields any of them has, it requires those
// all of them have, and a field sent as null may be null. A property
// whose schema has properties of its own (an object, or an array of
// objects) is checked the same way against the objects sent in it.
func (doc openAPISchemas) mustDescribe(tb testing.TB, name string, objs []map[string]any) {
	tb.Helper()
	raw, ok := doc.Components.Schemas[name]
	if !ok {
		tb.Errorf("no schema %s", name)
		return
	}
	sc := doc.resolve(tb, name, raw)
	if sc.Properties == nil {
		tb.Errorf("%s: no properties, so it says nothing of what is sent", name)
		return
	}
	doc.describe(tb, name, sc, objs)
}

func (doc openAPISchemas) describe(tb testing.TB, where string, sc schemaNode, objs []map[string]any) {
	tb.Helper()
	present, always := map[string]bool{}, map[string]bool{}
	for i, o := range objs {
		for k := range o {
			present[k] = true
		}
		for k := range present {
			_, has := o[k]
			always[k] = (i == 0 || always[k]) && has
		}
	}
	var required []string
	for k, all := range always {
		if all {
			required = append(required, k)
		}
	}
	if got, want := slices.Sorted(maps.Keys(sc.Properties)), slices.Sorted(maps.Keys(present)); !slices.Equal(got, want) {
		tb.Errorf("%s: properties %v, want the fields sent %v", where, got, want)
	}
	if got, want := slices.Sorted(slices.Values(sc.Required)), slices.Sorted(slices.Values(required)); !slices.Equal(got, want) {
		tb.Errorf("%s: required %v, want the fields every one sent has %v", where, got, want)
	}
	for k, raw := range sc.Properties {
		prop := doc.resolve(tb, where+"."+k, raw)
		var nested, elems []map[string]any
		for _, o := range objs {
			v, has := o[k]
			switch v := v.(type) {
			case map[string]any:
				nested = append(nested, v)
			case []any:
				for _, e := range v {
					if m, ok := e.(map[string]any); ok {
						elems = append(elems, m)
					}
				}
			}
			if has && v == nil && !allowsNull(prop.Type) {
				tb.Errorf("%s.%s is sent as null; its schema's type %v does not allow null", where, k, prop.Type)
			}
		}
		if prop.Properties != nil && len(nested) > 0 {
			doc.describe(tb, where+"."+k, prop, nested)
		}
		if prop.Items != nil && len(elems) > 0 {
			if item := doc.resolve(tb, where+"."+k+"[]", prop.Items); item.Properties != nil {
				doc.describe(tb, where+"."+k+"[]", item, elems)
			}
		}
	}
}

func allowsNull(typ any) bool {
	types, ok := typ.([]any)
	return ok && slices.Contains(types, any("null"))
}

// The Intent schema says what the intent endpoints send: its properties
// are the fields of the intents GET /api/outbox/intents lists and POST
// /api/outbox/intents/{id}/retire answers with, in every state, drafted
// by a channel for a published page (with their source, page, channel
// and summary) and by hand (without); IntentDetail says what GET
// /api/outbox/intents/{id} adds: the evidence of the checks and the
// audit trail.
func TestOpenAPIIntentSchemaIsWhatTheIntentEndpointsSend(t *testing.T) {
	api := mustFilledAPI(t)
	doc := api.schemas(t)
	intents := api.items(t, "/api/outbox/intents")
	states := map[string]bool{}
	var details []map[string]any
	for _, in := range intents {
		states[in["state"].(string)] = true
		details = append(details, api.object(t, "GET", "/api/outbox/intents/"+in["id"].(string), nil))
	}
	for _, st := range outbox.States {
		if !states[string(st)] {
			t.Fatalf("no intent is %s: the test cannot check its schema", st)
		}
	}
	for _, k := range []string{"source_id", "page_id", "channel_id", "summary_id", "landed_at", "last_attempt_at"} {
		if !slices.ContainsFunc(intents, func(in map[string]any) bool { return in[k] != nil }) ||
			!slices.ContainsFunc(intents, func(in map[string]any) bool { return in[k] == nil }) {
			t.Fatalf("%s is not both sent and not: the test cannot check its schema", k)
		}
	}
	for _, k := range []string{"checks", "actions"} {
		if !slices.ContainsFunc(details, func(d map[string]any) bool { return len(d[k].([]any)) > 0 }) {
			t.Fatalf("no intent has %s: the test cannot check their schema", k)
		}
	}
	retired := api.object(t, "POST", "/api/outbox/intents/"+api.pending+"/retire", withBody("application/json", `{"reason":"no longer news"}`))
	doc.mustDescribe(t, "Intent", append(intents, retired))
	doc.mustDescribe(t, "IntentDetail", details)
}

// filledAPI is the API over a real pipeline and a database with some of
// everything it lists, as mustFilledAPI makes it.
type filledAPI struct {
	do    func(method, path, token string, edit func(*http.Request)) response
	token string
	// pending is an intent drafted by hand and left pending.
	pending string
}

// mustFilledAPI serves the API, signed in as ops, over a pipeline and a
// database that hold some of each thing in each of the states that
// change what it is sent with:
//   - sources: one with a settled run, a failed one and two published
//     events (one summary rejected, its event summarized again and not
//     published yet), a paused one, and one whose run goes on;
//   - lanes: one with gaps, a webhook whose channel of that source says
//     the same for every page, so its second page's intent is kept in
//     collision, and a broken one, with a channel too;
//   - intents drafted by hand in each other state, with a check's
//     evidence and an operator's retire among them;
//   - migration runs that are done, failed, aborted and held;
//   - an audited write that was refused.
func mustFilledAPI(t *testing.T) filledAPI {
	t.Helper()
	ctx := context.Background()
	env := sqltest.NewEnv(21)
	dbURL := sqltest.Backends()[0].NewURL(t)
	db := sqltest.MustOpenURL(t, dbURL, env)
	cfg := pipeline.Defaults()
	cfg.Home, cfg.Database = t.TempDir(), dbURL
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	token, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	api := filledAPI{token: token, do: mustServe(t, db, func(s *web.Server) {
		s.Sources, s.Docs, s.OutboxOps, s.PublishOps, s.Search = p, p, p, p, db.Publish()
	})}

	st := db.Ingest()
	for _, name := range []string{"blog", "quiet"} {
		if _, err := st.AddSource(ctx, ingest.NewSource{Name: name, Kind: "feed", Location: "https://example.org/" + name + ".xml", Interval: time.Minute, RetryBudget: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.SetState(ctx, "quiet", tidemark.SourcePaused, "ops"); err != nil {
		t.Fatal(err)
	}
	c, err := st.Claim(ctx, "blog", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	now := env.Clock.Now()
	if _, err := st.Settle(ctx, c, ingest.Settlement{Cursor: "2", NextDueAt: now, Items: []tidemark.Item{
		{Key: "1", Title: "Release 1", URL: "https://example.org/1", OccurredAt: now, Evidence: []byte("Release 1 is out.")},
		{Key: "2", Title: "Release 2", URL: "https://example.org/2", OccurredAt: now, Evidence: []byte("Release 2 is out.")},
	}}); err != nil {
		t.Fatal(err)
	}

	env.Clock.Advance(time.Minute)
	if c, err = st.Claim(ctx, "blog", "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Fail(ctx, c, ingest.Failure{Outcome: tidemark.OutcomeUnreachable, Reason: "HTTP 503", NextDueAt: env.Clock.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddSource(ctx, ingest.NewSource{Name: "busy", Kind: "feed", Location: "https://example.org/busy.xml", Interval: time.Minute, RetryBudget: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, "busy", "w", time.Hour); err != nil { // its run goes on
		t.Fatal(err)
	}

	ob := db.Outbox()
	if _, err := p.AddLane(ctx, "hook", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/", "secret": "s"}}, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := ob.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "dead", Provider: "matrix", Settings: map[string]string{}}}); err != nil {
		t.Fatal(err) // broken: no homeserver, no token
	}
	ch, err := ob.AddChannel(ctx, "blog", "hook", "room", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ob.SetChannelTemplate(ctx, ch.ID, "blog changed", "ops"); err != nil {
		t.Fatal(err)
	}
	if r := api.do("POST", "/api/publish", token, nil); r.Code != 200 {
		t.Fatalf("POST /api/publish: %d %s", r.Code, r.Body)
	}
	sums, err := p.Summaries(ctx, publish.SummaryFilter{})
	if err != nil || len(sums) != 2 {
		t.Fatalf("summaries: %v %v", sums, err)
	}
	// One summary is rejected, and its event has a new one, not published
	// yet. Not the one whose intent is in collision: a rejection retires
	// the intents its publications drafted and did not send.
	coll, err := ob.ListIntents(ctx, outbox.IntentFilter{Lane: "hook", State: outbox.StateCollision})
	if err != nil || len(coll) != 1 {
		t.Fatalf("intents in collision: %+v %v, want one", coll, err)
	}
	rejected := sums[0]
	if rejected.ID == coll[0].SummaryID {
		rejected = sums[1]
	}
	// Rejected, lifted, and rejected again: it carries its lifted
	// rejection.
	if _, err := p.RejectSummary(ctx, rejected.ID, "says too much"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UnrejectSummary(ctx, rejected.ID, "a mistake"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RejectSummary(ctx, rejected.ID, "says too much"); err != nil {
		t.Fatal(err)
	}
	ev, err := st.Event(ctx, rejected.EventID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Publish().Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash,
		Draft: summarize.Draft{Text: "A release.", Model: "m", PromptVersion: "p"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ob.AddChannel(ctx, "blog", "dead", "!room:example.org", ""); err != nil {
		t.Fatal(err)
	}
	// A write refused, audited with why.
	if r := api.do("POST", "/api/sources/nope/pause", token, nil); r.Code != 404 {
		t.Fatalf("POST /api/sources/nope/pause: %d %s", r.Code, r.Body)
	}

	drafted := map[string]string{}
	for _, body := range []string{"pending", "landed", "unresolved", "unexecutable", "retired", "sending"} {
		in, err := ob.Draft(ctx, outbox.Draft{Lane: "hook", Target: "room", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		drafted[body] = in.ID
	}
	api.pending = drafted["pending"]
	l, err := ob.Acquire(ctx, "hook", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		body string
		r    outbox.Result
	}{
		{"landed", outbox.Result{Outcome: outbox.OutcomeLanded, RemoteID: "r1"}},
		{"unresolved", outbox.Result{Outcome: outbox.OutcomeUnknown, Error: "timeout"}},
		{"unexecutable", outbox.Result{Outcome: outbox.OutcomeUnexecutable, Error: "HTTP 410: the room is gone"}},
	} {
		env.Clock.Advance(time.Minute)
		a, err := ob.Begin(ctx, l, outbox.NewAttempt{IntentID: drafted[step.body], Bound: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		step.r.SentAt = env.Clock.Now()
		if err := ob.Finish(ctx, l, a, step.r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ob.Retire(ctx, drafted["retired"], "ops", "sent by hand"); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(time.Minute)
	if _, err := ob.Begin(ctx, l, outbox.NewAttempt{IntentID: drafted["sending"], Bound: time.Minute}); err != nil {
		t.Fatal(err)
	}

	// Migration runs that are done, failed, aborted and held.
	docs := db.Content()
	if _, err := docs.CreateCollection(ctx, "notes", []content.Field{{Name: "done", Type: content.Text}, {Name: "failed", Type: content.Text},
		{Name: "aborted", Type: content.Text}, {Name: "held", Type: content.Text}}); err != nil {
		t.Fatal(err)
	}
	for _, failed := range []string{"1", "one"} {
		if _, err := docs.Put(ctx, "notes", content.Put{Set: content.Fields{"done": json.RawMessage(`"1"`), "failed": json.RawMessage(`"` + failed + `"`),
			"aborted": json.RawMessage(`"1"`), "held": json.RawMessage(`"1"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	m := &content.Migrator{Store: docs, Holder: "w"}
	for _, field := range []string{"done", "failed", "aborted", "held"} {
		run, err := docs.StartRun(ctx, "notes", field, content.Number, 1)
		if err != nil {
			t.Fatal(err)
		}
		switch field {
		case "done":
			_, err = m.Drive(ctx, run.ID)
		case "failed":
			if _, err = m.Drive(ctx, run.ID); errors.As(err, new(*content.FailedError)) {
				err = nil
			}
		case "aborted":
			var c content.RunClaim
			if c, err = docs.ClaimRun(ctx, run.ID, "w", time.Minute); err == nil {
				if _, err = docs.Step(ctx, c, time.Minute); err == nil {
					_, err = m.Abort(ctx, run.ID)
				}
			}
		case "held":
			_, err = docs.ClaimRun(ctx, run.ID, "w", time.Hour)
		}
		if err != nil {
			t.Fatalf("migration of %s: %v", field, err)
		}
	}
	return api
}

// schemas reads the OpenAPI document the server serves.
func (api filledAPI) schemas(t *testing.T) openAPISchemas {
	t.Helper()
	var doc openAPISchemas
	if r := api.do("GET", "/api/openapi.json", "", nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &doc) != nil {
		t.Fatalf("GET /api/openapi.json: %d %.200s", r.Code, r.Body)
	}
	return doc
}

// object is the JSON object a request answers with 200.
func (api filledAPI) object(t *testing.T, method, path string, edit func(*http.Request)) map[string]any {
	t.Helper()
	var v map[string]any
	if r := api.do(method, path, api.token, edit); r.Code != 200 || json.Unmarshal([]byte(r.Body), &v) != nil {
		t.Fatalf("%s %s: %d %s", method, path, r.Code, r.Body)
	}
	return v
}

// items are the items of a listing's first page, or of a list answered
// whole.
func (api filledAPI) items(t *testing.T, path string) []map[string]any {
	t.Helper()
	var page struct {
		Items []map[string]any `json:"items"`
	}
	r := api.do("GET", path, api.token, nil)
	if r.Code != 200 || json.Unmarshal([]byte(r.Body), &page) != nil && json.Unmarshal([]byte(r.Body), &page.Items) != nil {
		t.Fatalf("GET %s: %d %s", path, r.Code, r.Body)
	}
	if len(page.Items) == 0 {
		t.Fatalf("GET %s: nothing listed", path)
	}
	return page.Items
}

// Every schema a GET of the API answers with says what it sends, as the
// Intent schema does: each endpoint is asked for the objects the fixture
// has, and the answers of the endpoints that share a schema are compared
// with it together.
func TestOpenAPIResponseSchemasAreWhatTheEndpointsSend(t *testing.T) {
	api := mustFilledAPI(t)
	doc := api.schemas(t)
	var paths struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema struct {
						Ref   string `json:"$ref"`
						Items struct {
							Ref string `json:"$ref"`
						} `json:"items"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if r := api.do("GET", "/api/openapi.json", "", nil); json.Unmarshal([]byte(r.Body), &paths) != nil {
		t.Fatal("GET /api/openapi.json: not JSON")
	}
	ids := func(path, key string) []string {
		var out []string
		for _, o := range api.items(t, path) {
			out = append(out, o[key].(string))
		}
		return out
	}
	// The values each path's parameters are given: every object of its
	// kind the fixture has.
	params := map[string][]string{
		"/api/sources/{name}":            ids("/api/sources", "name"),
		"/api/runs/{run}":                ids("/api/runs", "id"),
		"/api/events/{event}":            ids("/api/events", "id"),
		"/api/outbox/lanes/{name}":       ids("/api/outbox/lanes", "name"),
		"/api/outbox/intents/{id}":       ids("/api/outbox/intents", "id"),
		"/api/migrations/{id}":           ids("/api/migrations", "id"),
		"/api/outbox/channels/{id}/test": ids("/api/outbox/channels", "id"),
		"/api/search":                    {"?q=release", "?q=nothing"},
	}
	answers := map[string][]map[string]any{} // by schema
	for pattern, ops := range paths.Paths {
		sc := ops["get"].Responses["200"].Content["application/json"].Schema
		ref, list := sc.Ref, sc.Ref == ""
		if list {
			ref = sc.Items.Ref
		}
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		if !ok {
			continue // not an object, or a list of them, the document describes
		}
		values, ok := params[pattern]
		switch {
		case ok:
		case strings.HasSuffix(name, "Page"):
			values, ok = []string{"", "?limit=1"}, true // a first page of one has a next
		case !strings.Contains(pattern, "{"):
			values, ok = []string{""}, true
		}
		if !ok {
			t.Errorf("GET %s: the test gives no value to its parameters", pattern)
			continue
		}
		for _, v := range values {
			path := pattern + v
			if open, end := strings.Index(pattern, "{"), strings.Index(pattern, "}"); open >= 0 {
				path = pattern[:open] + v + pattern[end+1:]
			}
			if list {
				answers[name] = append(answers[name], api.items(t, path)...)
			} else {
				answers[name] = append(answers[name], api.object(t, "GET", path, nil))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(answers)) {
		doc.mustDescribe(t, name, answers[name])
	}
}
