package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

// fakeOutbox is web.OutboxOps over lanes in memory; it records who did
// what. Its lanes are views as the pipeline makes them: every one has its
// gaps (a count of 0 before its second send).
type fakeOutbox struct {
	lanes   map[string]*outbox.LaneView
	intents map[string]*outbox.Intent
	gaps    []outbox.Gap
	calls   []string
	// template is channel c1's.
	template string
	// channels, when set, is what Channels lists (in the store's order).
	channels outbox.Channels
	// keysLost is what SetLane says a change did to writes in doubt.
	keysLost *outbox.KeyResendLost
}

var _ web.OutboxOps = (*fakeOutbox)(nil)

func newFakeOutbox() *fakeOutbox {
	f := &fakeOutbox{lanes: map[string]*outbox.LaneView{}, intents: map[string]*outbox.Intent{}}
	f.lanes["hook"] = &outbox.LaneView{Lane: outbox.Lane{LaneConfig: outbox.LaneConfig{Name: "hook", Provider: "webhook", Settings: map[string]string{"url": "•••"}, MinGap: tidemark.Duration(time.Second)}, Counts: map[outbox.State]int{outbox.StateUnresolved: 2, outbox.StateLanded: 1}}, Health: outbox.HealthUnresolved,
		Guarantee: &provider.LaneGuarantee{Guarantee: provider.ExactlyOnce, Why: "listing"}, Gaps: &outbox.GapReport{Lane: "hook", OK: true}}
	f.lanes["dead"] = &outbox.LaneView{Lane: outbox.Lane{LaneConfig: outbox.LaneConfig{Name: "dead", Provider: "mastodon", Settings: map[string]string{}}, Counts: map[outbox.State]int{}}, Health: outbox.HealthBroken,
		Problem: "setting token_env: the environment variable holding the lane's secret is empty", Gaps: &outbox.GapReport{Lane: "dead", OK: true}}
	f.intents["i1"] = &outbox.Intent{ID: "i1", Lane: "hook", Rank: 1, Target: "room", State: outbox.StateUnresolved, Body: "<b>hi</b>"}
	f.gaps = []outbox.Gap{{MS: 1500, ThresholdMS: 1000}, {MS: 400, ThresholdMS: 1000}}
	return f
}

func (f *fakeOutbox) call(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeOutbox) lane(name string) (*outbox.LaneView, error) {
	if l, ok := f.lanes[name]; ok {
		return l, nil
	}
	return nil, fmt.Errorf("lane %q: %w", name, tidemark.ErrNotFound)
}

func (f *fakeOutbox) Lanes(context.Context) (outbox.LaneViews, error) {
	var out outbox.LaneViews
	for _, n := range []string{"dead", "hook", "new"} {
		if l, ok := f.lanes[n]; ok {
			out = append(out, *l)
		}
	}
	return out, nil
}
func (f *fakeOutbox) Lane(_ context.Context, name string) (outbox.LaneView, error) {
	l, err := f.lane(name)
	if err != nil {
		return outbox.LaneView{}, err
	}
	return *l, nil
}
func (f *fakeOutbox) AddLane(_ context.Context, name, kind string, ch outbox.LaneChange, actor string) (outbox.LaneView, error) {
	f.call("add %s %s %v by %s", name, kind, ch.Settings, actor)
	if kind != "webhook" {
		return outbox.LaneView{}, tidemark.Invalidf("--provider", kind, "want webhook")
	}
	f.lanes[name] = &outbox.LaneView{Lane: outbox.Lane{LaneConfig: outbox.LaneConfig{Name: name, Provider: kind}, Counts: map[outbox.State]int{}}, Health: outbox.HealthOK,
		Gaps: &outbox.GapReport{Lane: name, OK: true}}
	return *f.lanes[name], nil
}
func (f *fakeOutbox) SetLane(_ context.Context, name string, ch outbox.LaneChange, actor string) (outbox.LaneSet, error) {
	l, err := f.lane(name)
	if err != nil {
		return outbox.LaneSet{}, err
	}
	gap := "-"
	if ch.MinGap != nil {
		gap = ch.MinGap.Std().String()
		l.MinGap = *ch.MinGap
	}
	f.call("set %s gap %s unset %v by %s", name, gap, ch.Unset, actor)
	return outbox.LaneSet{LaneView: *l, KeyResendLost: f.keysLost}, nil
}
func (f *fakeOutbox) RemoveLane(_ context.Context, name string, force bool, actor string) (outbox.LaneRemoval, error) {
	l, err := f.lane(name)
	if err != nil {
		return outbox.LaneRemoval{}, err
	}
	r := outbox.LaneRemoval{Lane: name, Intents: l.Counts, Forced: force}
	if err := r.Check(); err != nil {
		return r, err
	}
	f.call("remove %s force %v by %s", name, force, actor)
	delete(f.lanes, name)
	return r, nil
}
func (f *fakeOutbox) Reconcile(_ context.Context, lane, actor string) (outbox.Reconciled, error) {
	f.call("reconcile %s by %s", lane, actor)
	return outbox.Reconciled{Lane: lane, Requests: 2, Plan: &outbox.Plan{Accounting: outbox.Accounting{Total: 3, Landed: 3, Balanced: true}}}, nil
}
func (f *fakeOutbox) LaneActions(context.Context, string) (outbox.LaneActions, error) {
	return outbox.LaneActions{{Lane: "hook", Action: outbox.ActionLaneAdd, Actor: "ops", Detail: "provider webhook"}}, nil
}
func (f *fakeOutbox) RecentGaps(context.Context, string) ([]outbox.Gap, error) { return f.gaps, nil }
func (f *fakeOutbox) ProviderKinds() []string                                  { return []string{"mastodon", "webhook"} }
func (f *fakeOutbox) Channels(context.Context) (outbox.Channels, error) {
	if f.channels != nil {
		return f.channels, nil
	}
	return outbox.Channels{{ID: "c1", Source: "docs", Lane: "hook", Target: "room"}}, nil
}
func (f *fakeOutbox) AddChannel(_ context.Context, ref outbox.ChannelRef, actor string) (outbox.Channel, error) {
	f.call("add channel %s %s %s by %s", ref.Source, ref.Lane, ref.Target, actor)
	return outbox.Channel{ID: "c2", Source: ref.Source, Lane: ref.Lane, Target: ref.Target}, nil
}
func (f *fakeOutbox) RemoveChannel(_ context.Context, ref outbox.ChannelRef, actor string) (outbox.Channel, error) {
	f.call("remove channel %s by %s", ref.ID, actor)
	return outbox.Channel{ID: ref.ID, Source: "docs", Lane: "hook", Target: "room"}, nil
}
func (f *fakeOutbox) channel(id string) (outbox.Channel, error) {
	if id != "c1" {
		return outbox.Channel{}, fmt.Errorf("channel %s: %w", id, tidemark.ErrNotFound)
	}
	return outbox.Channel{ID: "c1", Source: "docs", Lane: "hook", Target: "room", Template: f.template}, nil
}
func (f *fakeOutbox) SetChannelTemplate(_ context.Context, id, tmpl, actor string) (outbox.Channel, error) {
	c, err := f.channel(id)
	if err != nil {
		return c, err
	}
	if strings.TrimSpace(tmpl) != "" {
		if _, err := outbox.ParseTemplate(tmpl); err != nil {
			return outbox.Channel{}, err
		}
	}
	f.template = strings.TrimSpace(tmpl)
	f.call("template %s %q by %s", id, f.template, actor)
	return f.channel(id)
}
func (f *fakeOutbox) TestChannel(_ context.Context, id, tmpl string) (outbox.ChannelTest, error) {
	c, err := f.channel(id)
	if err != nil {
		return outbox.ChannelTest{}, err
	}
	if strings.TrimSpace(tmpl) == "" {
		tmpl = c.Template
	}
	msg := outbox.Message{Title: "Release 2", Summary: "<b>fast</b>", Source: "docs"}
	r, err := outbox.Preview("webhook", tmpl, msg)
	return outbox.ChannelTest{Channel: c, Sample: true, Message: msg, Rendered: r}, err
}
func (f *fakeOutbox) Intents(_ context.Context, flt outbox.IntentFilter) (outbox.Intents, error) {
	var out outbox.Intents
	for _, in := range f.intents {
		if (flt.Lane == "" || in.Lane == flt.Lane) && (flt.State == "" || in.State == flt.State) {
			out = append(out, *in)
		}
	}
	return out, nil
}
func (f *fakeOutbox) Intent(_ context.Context, id string) (outbox.IntentDetail, error) {
	in, ok := f.intents[id]
	if !ok {
		return outbox.IntentDetail{}, fmt.Errorf("intent %s: %w", id, tidemark.ErrNotFound)
	}
	return outbox.IntentDetail{Intent: *in}, nil
}
func (f *fakeOutbox) operate(id, to, actor, reason string) (outbox.Intent, error) {
	in, ok := f.intents[id]
	if !ok {
		return outbox.Intent{}, fmt.Errorf("intent %s: %w", id, tidemark.ErrNotFound)
	}
	if reason == "" {
		return outbox.Intent{}, tidemark.Invalidf("--reason", "", "say why")
	}
	f.call("%s %s by %s: %s", to, id, actor, reason)
	in.State = outbox.State(to)
	return *in, nil
}
func (f *fakeOutbox) RetireIntent(_ context.Context, id, actor, reason string) (outbox.Intent, error) {
	return f.operate(id, "retired", actor, reason)
}
func (f *fakeOutbox) ReviveIntent(_ context.Context, id, actor, reason string) (outbox.Intent, error) {
	return f.operate(id, "pending", actor, reason)
}

func withBody(contentType, body string) func(*http.Request) {
	return func(r *http.Request) {
		r.Header.Set("Content-Type", contentType)
		r.Body = io.NopCloser(strings.NewReader(body))
		r.ContentLength = int64(len(body))
	}
}

func form(v url.Values) func(*http.Request) {
	return withBody("application/x-www-form-urlencoded", v.Encode())
}

// mustOutboxConsole serves the console over a fake outbox, with a token
// named ops.
func mustOutboxConsole(t *testing.T) (func(method, path, token string, edit func(*http.Request)) response, string, *fakeOutbox) {
	t.Helper()
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(3))
	token, _, err := db.Auth().CreateToken(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeOutbox()
	return mustServe(t, db, func(s *web.Server) { s.OutboxOps = f }), token, f
}

func (f *fakeOutbox) lastCall(t *testing.T) string {
	t.Helper()
	if len(f.calls) == 0 {
		t.Fatal("no call was made")
	}
	return f.calls[len(f.calls)-1]
}

// The API's writes name the token that made them, answer JSON, and refuse
// what would lose intents with a conflict that says what would be lost.
func TestOutboxAPIWrites(t *testing.T) {
	do, token, f := mustOutboxConsole(t)
	jsonBody := func(s string) func(*http.Request) { return withBody("application/json", s) }

	if r := do("POST", "/api/outbox/lanes", "", jsonBody(`{"name":"x","provider":"webhook"}`)); r.Code != 401 {
		t.Fatalf("POST without a token: %d", r.Code)
	}
	r := do("POST", "/api/outbox/lanes", token, jsonBody(`{"name":"new","provider":"webhook","settings":{"url":"http://h/"},"min_gap":"3s"}`))
	if r.Code != 201 || !strings.Contains(r.Body, `"health": "ok"`) || f.lastCall(t) != "add new webhook map[url:http://h/] by ops" {
		t.Fatalf("POST /api/outbox/lanes: %d %s (%s)", r.Code, r.Body, f.lastCall(t))
	}
	if r := do("POST", "/api/outbox/lanes", token, jsonBody(`{"name":"x","provider":"webhook","colour":"red"}`)); r.Code != 400 {
		t.Fatalf("an unknown field: %d %s", r.Code, r.Body)
	}
	if r := do("POST", "/api/outbox/lanes", token, jsonBody(`{"name":"x","provider":"smoke"}`)); r.Code != 400 {
		t.Fatalf("an unknown provider: %d %s", r.Code, r.Body)
	}
	r = do("PATCH", "/api/outbox/lanes/hook", token, jsonBody(`{"min_gap":"5s","unset":["probe_url"]}`))
	if r.Code != 200 || !strings.Contains(r.Body, `"min_gap": "5s"`) || f.lastCall(t) != "set hook gap 5s unset [probe_url] by ops" {
		t.Fatalf("PATCH: %d %s (%s)", r.Code, r.Body, f.lastCall(t))
	}
	if !strings.Contains(r.Body, `"key_resend_lost": null`) {
		t.Fatalf("PATCH: %s; want key_resend_lost null", r.Body)
	}
	f.keysLost = outbox.NewKeyResendLost([]string{"i1"}, true, false)
	r = do("PATCH", "/api/outbox/lanes/hook", token, jsonBody(`{"settings":{"token":"new"}}`))
	f.keysLost = nil
	if r.Code != 200 || !strings.Contains(r.Body, `"key_resend_lost": {`) || !strings.Contains(r.Body, `"in_doubt": 1`) {
		t.Fatalf("PATCH of a token with a write in doubt: %d %s; want key_resend_lost", r.Code, r.Body)
	}
	r = do("DELETE", "/api/outbox/lanes/hook", token, nil)
	if msg := mustJSONError(t, "DELETE with unresolved intents", r); r.Code != 409 || !strings.Contains(msg, "2 unresolved") || !strings.Contains(msg, "force") {
		t.Fatalf("DELETE with unresolved intents: %d %s", r.Code, msg)
	}
	if r := do("DELETE", "/api/outbox/lanes/hook?force=true", token, nil); r.Code != 200 || f.lastCall(t) != "remove hook force true by ops" {
		t.Fatalf("DELETE ?force=true: %d %s", r.Code, r.Body)
	}
	if r := do("DELETE", "/api/outbox/lanes/hook", token, nil); r.Code != 404 {
		t.Fatalf("DELETE again: %d %s", r.Code, r.Body)
	}
	if r := do("POST", "/api/outbox/lanes/dead/reconcile", token, nil); r.Code != 200 || !strings.Contains(r.Body, `"requests": 2`) {
		t.Fatalf("reconcile: %d %s", r.Code, r.Body)
	}
	if r := do("POST", "/api/outbox/intents/i1/retire", token, jsonBody(`{}`)); r.Code != 400 {
		t.Fatalf("retire without a reason: %d %s", r.Code, r.Body)
	}
	if r := do("POST", "/api/outbox/intents/i1/retire", token, jsonBody(`{"reason":"gone"}`)); r.Code != 200 || f.lastCall(t) != "retired i1 by ops: gone" {
		t.Fatalf("retire: %d %s", r.Code, r.Body)
	}
	if r := do("POST", "/api/outbox/intents/i1/explode", token, jsonBody(`{"reason":"x"}`)); r.Code != 404 {
		t.Fatalf("an unknown operation: %d %s", r.Code, r.Body)
	}
	if r := do("POST", "/api/outbox/channels", token, jsonBody(`{"source":"docs","lane":"dead","target":"t"}`)); r.Code != 201 || f.lastCall(t) != "add channel docs dead t by ops" {
		t.Fatalf("add channel: %d %s", r.Code, r.Body)
	}
	if r := do("DELETE", "/api/outbox/channels/c1", token, nil); r.Code != 200 || f.lastCall(t) != "remove channel c1 by ops" {
		t.Fatalf("remove channel: %d %s", r.Code, r.Body)
	}
	if r := do("GET", "/api/outbox/intents/i1", token, nil); r.Code != 200 || !strings.Contains(r.Body, `"state": "retired"`) {
		t.Fatalf("GET intent: %d %s", r.Code, r.Body)
	}
}

// The console's forms post, redirect back (303) and show what happened
// once; /status shows at a glance the lanes that need someone.
func TestOutboxConsole(t *testing.T) {
	do, token, f := mustOutboxConsole(t)

	r := do("GET", "/status", token, nil)
	for _, want := range []string{`<a href="/status/lanes/hook?state=unresolved">hook</a> is <span class="l-unresolved">unresolved</span>: 2 unresolved intents wait`,
		`<span class="l-broken">broken</span>: setting token_env`, `href="/status/outbox"`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("/status lacks %s:\n%s", want, r.Body)
		}
	}
	r = do("GET", "/status/outbox", token, nil)
	if r.Code != 200 || !strings.Contains(r.Body, `action="/status/outbox/lanes"`) || !strings.Contains(r.Body, "exactly-once") || !strings.Contains(r.Body, `action="/status/outbox/channels/c1/remove"`) {
		t.Fatalf("/status/outbox: %d\n%s", r.Code, r.Body)
	}
	// Each count links to the lane's intents in that state, and to nothing else.
	if want := `<a href="/status/lanes/hook?state=unresolved">2</a>`; !strings.Contains(r.Body, want) || strings.Contains(r.Body, "?state=map") {
		t.Errorf("/status/outbox lacks %s:\n%s", want, r.Body)
	}
	r = do("GET", "/status/lanes/hook", token, nil)
	for _, want := range []string{`<svg class="gaps"`, `class="below"`, `action="/status/lanes/hook/reconcile"`, `action="/status/outbox/intents/i1/retire"`,
		"&lt;b&gt;hi&lt;/b&gt;", "ops", `<code>url=•••</code>`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("lane page lacks %s", want)
		}
	}
	if strings.Contains(r.Body, "<script") {
		t.Error("the lane page has a script")
	}

	// A form's write: 303 back, with a notice shown once.
	r = do("POST", "/status/lanes/hook/set", token, form(url.Values{"min-gap": {"4s"}}))
	if r.Code != 303 || r.Header.Get("Location") != "/status/lanes/hook" || f.lastCall(t) != "set hook gap 4s unset [] by ops" {
		t.Fatalf("set form: %d %s (%v)", r.Code, r.Header.Get("Location"), f.calls)
	}
	cookie := r.Header.Get("Set-Cookie")
	flashed := func(path string) string {
		return do("GET", path, token, func(req *http.Request) { req.Header.Set("Cookie", strings.Split(cookie, ";")[0]) }).Body
	}
	if body := flashed("/status/lanes/hook"); !strings.Contains(body, `<p class="notice" role="status">lane hook changed</p>`) {
		t.Errorf("no notice after the set:\n%s", body)
	}
	// A token change that strips writes in doubt of their key says so.
	f.keysLost = outbox.NewKeyResendLost([]string{"i1"}, true, false)
	r = do("POST", "/status/lanes/hook/set", token, form(url.Values{"settings": {"token=new"}}))
	f.keysLost = nil
	cookie = r.Header.Get("Set-Cookie")
	if body := flashed("/status/lanes/hook"); !strings.Contains(body, "lane hook changed; warning: 1 write in doubt was sent on its idempotency key") {
		t.Errorf("no warning after a token change with a write in doubt:\n%s", body)
	}
	// A refusal comes back as the problem, on the page it came from.
	r = do("POST", "/status/lanes/hook/remove", token, form(url.Values{}))
	if r.Code != 303 || r.Header.Get("Location") != "/status/lanes/hook" {
		t.Fatalf("refused remove: %d %s", r.Code, r.Header.Get("Location"))
	}
	cookie = r.Header.Get("Set-Cookie")
	if body := flashed("/status/lanes/hook"); !strings.Contains(body, `class="problem" role="alert"`) || !strings.Contains(body, "2 unresolved") {
		t.Errorf("no problem after a refused removal:\n%s", body)
	}
	if r := do("POST", "/status/outbox/intents/i1/retire", token, form(url.Values{"reason": {"gone"}, "lane": {"hook"}, "state": {"unresolved"}})); r.Code != 303 ||
		r.Header.Get("Location") != "/status/lanes/hook?state=unresolved" || f.lastCall(t) != "retired i1 by ops: gone" {
		t.Fatalf("retire form: %d %s %v", r.Code, r.Header.Get("Location"), f.calls)
	}
	if r := do("POST", "/status/outbox/lanes", token, form(url.Values{"name": {"new"}, "provider": {"webhook"}, "settings": {"url=http://h/\nsecret=s"}})); r.Code != 303 ||
		r.Header.Get("Location") != "/status/lanes/new" || f.lastCall(t) != "add new webhook map[secret:s url:http://h/] by ops" {
		t.Fatalf("add form: %d %s %v", r.Code, r.Header.Get("Location"), f.calls)
	}
	// A mistyped setting is refused without repeating it.
	r = do("POST", "/status/outbox/lanes", token, form(url.Values{"name": {"x"}, "provider": {"webhook"}, "settings": {"s3cr3t-value"}}))
	cookie = r.Header.Get("Set-Cookie")
	if body := flashed("/status/outbox"); !strings.Contains(body, "want key=value") || strings.Contains(body, "s3cr3t") {
		t.Errorf("a mistyped setting:\n%s", body)
	}
	if r := do("POST", "/status/lanes/hook/remove", token, form(url.Values{"force": {"on"}})); r.Code != 303 || r.Header.Get("Location") != "/status/outbox" {
		t.Fatalf("forced remove: %d %s", r.Code, r.Header.Get("Location"))
	}
	if r := do("GET", "/status/outbox/intents/i1", token, nil); r.Code != 200 || !strings.Contains(r.Body, "&lt;b&gt;hi&lt;/b&gt;") || !strings.Contains(r.Body, `name="back" value="intent"`) {
		t.Fatalf("intent page: %d\n%s", r.Code, r.Body)
	}
	if r := do("GET", "/status/outbox/intents/nope", token, nil); r.Code != 404 {
		t.Fatalf("a missing intent's page: %d", r.Code)
	}
	if r := do("POST", "/status/outbox/intents/i1/revive", token, form(url.Values{"reason": {"back"}, "back": {"intent"}})); r.Code != 303 || r.Header.Get("Location") != "/status/outbox/intents/i1" {
		t.Fatalf("revive from the intent page: %d %s", r.Code, r.Header.Get("Location"))
	}
	var lanes struct{ Items []map[string]any }
	if r := do("GET", "/api/outbox/lanes", token, nil); r.Code != 200 || json.Unmarshal([]byte(r.Body), &lanes) != nil || len(lanes.Items) != 2 {
		t.Fatalf("/api/outbox/lanes after removal: %d %s", r.Code, r.Body)
	}
}

// A channel's page shows what it would send; a template is tried without
// being saved (a bad one says why, keeping what was typed), and saved
// through the form or the API, audited with the token's name.
func TestChannelTemplateConsoleAndAPI(t *testing.T) {
	do, token, f := mustOutboxConsole(t)
	page := func(path string) response {
		t.Helper()
		r := do("GET", path, token, nil)
		if r.Code != 200 {
			t.Fatalf("GET %s: %d\n%s", path, r.Code, r.Body)
		}
		return r
	}
	if r := page("/status/outbox/channels/c1"); !strings.Contains(r.Body, "Release 2") || !strings.Contains(r.Body, "&lt;b&gt;fast&lt;/b&gt;") ||
		!strings.Contains(r.Body, "the provider's default") {
		t.Fatalf("the channel's page:\n%s", r.Body)
	}
	if r := page("/status/outbox/channels/c1?template=" + url.QueryEscape("new in {{.Source}}!")); !strings.Contains(r.Body, "new in docs!") ||
		!strings.Contains(r.Body, "With the template tried") || len(f.calls) != 0 {
		t.Fatalf("trying a template (calls %v):\n%s", f.calls, r.Body)
	}
	if r := page("/status/outbox/channels/c1?template=" + url.QueryEscape("{{.Author}}")); !strings.Contains(r.Body, `class="problem"`) ||
		!strings.Contains(r.Body, ">{{.Author}}</textarea>") || !strings.Contains(r.Body, "Release 2") {
		t.Fatalf("trying a bad template:\n%s", r.Body)
	}
	if r := do("GET", "/status/outbox/channels/nope", token, nil); r.Code != 404 {
		t.Fatalf("a missing channel's page: %d", r.Code)
	}
	r := do("POST", "/status/outbox/channels/c1/template", token, form(url.Values{"template": {"{{.Title}} in {{.Source}}"}}))
	if r.Code != 303 || r.Header.Get("Location") != "/status/outbox/channels/c1" || f.lastCall(t) != `template c1 "{{.Title}} in {{.Source}}" by ops` {
		t.Fatalf("save: %d %s %v", r.Code, r.Header.Get("Location"), f.calls)
	}
	cookie := strings.Split(r.Header.Get("Set-Cookie"), ";")[0]
	r = do("GET", "/status/outbox/channels/c1", token, func(req *http.Request) { req.Header.Set("Cookie", cookie) })
	if !strings.Contains(r.Body, "now uses its own template") || !strings.Contains(r.Body, "Release 2 in docs") {
		t.Fatalf("after the save:\n%s", r.Body)
	}
	jsonBody := func(s string) func(*http.Request) { return withBody("application/json", s) }
	if r := do("PUT", "/api/outbox/channels/c1/template", token, jsonBody(`{"template":"{{.Nope}}"}`)); r.Code != 400 || f.template != "{{.Title}} in {{.Source}}" {
		t.Fatalf("PUT a bad template: %d %s", r.Code, r.Body)
	}
	if r := do("PUT", "/api/outbox/channels/c1/template", token, jsonBody(`{}`)); r.Code != 400 {
		t.Fatalf("PUT without a template: %d %s", r.Code, r.Body)
	}
	if r := do("PUT", "/api/outbox/channels/c1/template", token, jsonBody(`{"template":""}`)); r.Code != 200 || !strings.Contains(r.Body, `"template": ""`) {
		t.Fatalf("PUT the default: %d %s", r.Code, r.Body)
	}
	if r := do("GET", "/api/outbox/channels/c1/test?template="+url.QueryEscape("{{.Source}}"), token, nil); r.Code != 200 || !strings.Contains(r.Body, `"body": "docs"`) {
		t.Fatalf("GET test: %d %s", r.Code, r.Body)
	}
	if r := do("GET", "/api/outbox/channels/c1/test", "", nil); r.Code != 401 {
		t.Fatalf("GET test without a token: %d", r.Code)
	}
}

// An intent a publication drafted links the wiki page it announces; one
// drafted by hand has no page to link.
func TestIntentPageLinksItsWikiPage(t *testing.T) {
	do, token, f := mustOutboxConsole(t)
	f.intents["i2"] = &outbox.Intent{ID: "i2", Lane: "hook", Rank: 2, Target: "room", State: outbox.StatePending, Body: "new page", PageID: "p1", SourceID: "s1"}
	if r := do("GET", "/status/outbox/intents/i2", token, nil); r.Code != 200 || !strings.Contains(r.Body, `href="/changes/p1.html"`) {
		t.Fatalf("a drafted intent's page: %d, want a link to its wiki page\n%s", r.Code, r.Body)
	}
	if r := do("GET", "/status/outbox/intents/i1", token, nil); r.Code != 200 || strings.Contains(r.Body, `href="/changes/`) {
		t.Fatalf("a hand-drafted intent's page: %d, links a wiki page\n%s", r.Code, r.Body)
	}
}

// /api/outbox/channels is a page as every list is: by source, lane, target
// and parent, whatever order the store read them in; its cursor and limit
// are checked.
func TestAPIChannelsArePaged(t *testing.T) {
	do, token, f := mustOutboxConsole(t)
	for i, c := range []struct{ source, lane, target string }{
		{"web", "hook", "b"}, {"docs", "mail", "a"}, {"docs", "hook", "z"}, {"web", "hook", "a"}, {"api", "hook", "a"},
	} {
		f.channels = append(f.channels, outbox.Channel{ID: fmt.Sprintf("c%d", i), Source: c.source, Lane: c.lane, Target: c.target})
	}
	want := []string{"c4", "c2", "c1", "c3", "c0"} // api, docs/hook, docs/mail, web/a, web/b
	for _, limit := range []int{1, 2, 5, 1000} {
		if got := mustWalk(t, do, token, "/api/outbox/channels", limit); !slices.Equal(got, want) {
			t.Errorf("channels by %d: %q, want %q", limit, got, want)
		}
	}
	var lanes web.Page[idItem]
	if r := do("GET", "/api/outbox/lanes?limit=1", token, nil); json.Unmarshal([]byte(r.Body), &lanes) != nil || lanes.Next == "" {
		t.Fatalf("lanes: %s", r.Body)
	}
	for _, path := range []string{"/api/outbox/channels?cursor=zzz", "/api/outbox/channels?limit=0",
		"/api/outbox/channels?cursor=" + url.QueryEscape(lanes.Next)} {
		mustErrorClass(t, path, do("GET", path, token, nil), 400, "invalid", tidemark.ExitInvalid)
	}
}

// The console's intent page says when its first attempt began (when the
// remote first saw its idempotency key) beside the latest.
func TestIntentPageSaysWhenItsFirstAttemptBegan(t *testing.T) {
	do, token, f := mustOutboxConsole(t)
	first := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	latest := first.Add(3 * time.Hour)
	f.intents["i1"].Attempts, f.intents["i1"].FirstAttemptAt, f.intents["i1"].LastAttemptAt = 2, &first, &latest
	r := do("GET", "/status/outbox/intents/i1", token, nil)
	if r.Code != 200 || !strings.Contains(r.Body, `2, the first <time datetime="2026-01-01T09:00:00Z">2026-01-01 09:00:00 UTC</time>`) ||
		!strings.Contains(r.Body, `the latest <time datetime="2026-01-01T12:00:00Z">2026-01-01 12:00:00 UTC</time>`) {
		t.Errorf("intent page: %d\n%s", r.Code, r.Body)
	}
	r = do("GET", "/api/outbox/intents/i1", token, nil)
	if r.Code != 200 || !strings.Contains(r.Body, `"first_attempt_at": "2026-01-01T09:00:00Z"`) {
		t.Errorf("intent JSON: %d %s", r.Code, r.Body)
	}
}
