package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/publish"
)

// OutboxOps are the outbox's operations the console and the API offer
// (*pipeline.Pipeline has them). Every write names its actor: the
// signed-in token's name.
type OutboxOps interface {
	Lanes(ctx context.Context) (outbox.LaneViews, error)
	Lane(ctx context.Context, name string) (outbox.LaneView, error)
	AddLane(ctx context.Context, name, kind string, ch outbox.LaneChange, actor string) (outbox.LaneView, error)
	SetLane(ctx context.Context, name string, ch outbox.LaneChange, actor string) (outbox.LaneSet, error)
	RemoveLane(ctx context.Context, name string, force bool, actor string) (outbox.LaneRemoval, error)
	Reconcile(ctx context.Context, lane, actor string) (outbox.Reconciled, error)
	LaneActions(ctx context.Context, lane string) (outbox.LaneActions, error)
	RecentGaps(ctx context.Context, lane string) ([]outbox.Gap, error)
	ProviderKinds() []string
	Channels(ctx context.Context) (outbox.Channels, error)
	AddChannel(ctx context.Context, ref outbox.ChannelRef, actor string) (outbox.Channel, error)
	RemoveChannel(ctx context.Context, ref outbox.ChannelRef, actor string) (outbox.Channel, error)
	SetChannelTemplate(ctx context.Context, channelID, tmpl, actor string) (outbox.Channel, error)
	TestChannel(ctx context.Context, channelID, tmpl string) (outbox.ChannelTest, error)
	Intents(ctx context.Context, f outbox.IntentFilter) (outbox.Intents, error)
	Intent(ctx context.Context, id string) (outbox.IntentDetail, error)
	RetireIntent(ctx context.Context, id, actor, reason string) (outbox.Intent, error)
	ReviveIntent(ctx context.Context, id, actor, reason string) (outbox.Intent, error)
}

// outboxRoutes serves the outbox console and its API (behind a token):
//
//	GET    /status/outbox                         lanes with health and guarantee, channels, forms to add them
//	GET    /status/lanes/{name}                   one lane: gaps chart, intents by state, edit, reconcile, remove
//	POST   /status/outbox/lanes                   add a lane (form)
//	POST   /status/lanes/{name}/set|remove|reconcile
//	GET    /status/outbox/intents/{id}                one intent: its checks' evidence and audit trail
//	POST   /status/outbox/intents/{id}/retire|revive
//	POST   /status/outbox/channels, /status/outbox/channels/{id}/remove
//	GET    /status/outbox/channels/{id}               one channel: what it would send (?template= to try one), its template
//	POST   /status/outbox/channels/{id}/template      set its template (blank: the provider's default)
//	GET    /api/outbox/lanes, POST (add), GET|PATCH|DELETE /api/outbox/lanes/{name} (?force=true)
//	POST   /api/outbox/lanes/{name}/reconcile
//	GET    /api/outbox/intents/{id}, POST /api/outbox/intents/{id}/retire|revive  {"reason": …}
//	GET    /api/outbox/channels, POST (add), DELETE /api/outbox/channels/{id}
//	GET    /api/outbox/channels/{id}/test?template=   what it would send, sending nothing
//	PUT    /api/outbox/channels/{id}/template         {"template": …} ("": the provider's default)
func (s *Server) outboxRoutes() []route {
	if s.OutboxOps == nil {
		return nil
	}
	r := privateRoute
	get, post, put, patch, del := http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete
	return []route{
		r(get, "/status/outbox", "", s.outboxPage),
		r(post, "/status/outbox/lanes", "outbox lane add", s.formAddLane),
		r(post, "/status/lanes/{name}/{action}", "outbox lane {action}", s.formLaneOp),
		r(get, "/status/outbox/intents/{id}", "", s.intentPage),
		r(post, "/status/outbox/intents/{id}/{action}", "outbox intent {action}", s.formIntentOp),
		r(post, "/status/outbox/channels", "outbox channel add", s.formAddChannel),
		r(post, "/status/outbox/channels/{id}/remove", "outbox channel remove", s.formRemoveChannel),
		r(get, "/status/outbox/channels/{id}", "", s.channelPage),
		r(post, "/status/outbox/channels/{id}/template", "outbox channel template", s.formChannelTemplate),
		r(post, "/api/outbox/lanes", "outbox lane add", s.apiAddLane),
		r(get, "/api/outbox/lanes/{name}", "", s.apiLane),
		r(patch, "/api/outbox/lanes/{name}", "outbox lane set", s.apiSetLane),
		r(del, "/api/outbox/lanes/{name}", "outbox lane remove", s.apiRemoveLane),
		r(post, "/api/outbox/lanes/{name}/reconcile", "outbox lane reconcile", s.apiReconcile),
		r(get, "/api/outbox/intents/{id}", "", s.apiIntent),
		r(post, "/api/outbox/intents/{id}/{action}", "outbox intent {action}", s.apiIntentOp),
		r(get, "/api/outbox/channels", "", s.apiChannels),
		r(post, "/api/outbox/channels", "outbox channel add", s.apiAddChannel),
		r(del, "/api/outbox/channels/{id}", "outbox channel remove", s.apiRemoveChannel),
		r(get, "/api/outbox/channels/{id}/test", "", s.apiTestChannel),
		r(put, "/api/outbox/channels/{id}/template", "outbox channel template", s.apiChannelTemplate),
	}
}

// intentOps are the operations an operator may ask of an intent in state
// st, as the console offers them.
func intentOps(st outbox.State) []string {
	var ops []string
	for _, op := range []outbox.Operation{outbox.OpRetire, outbox.OpRevive} {
		if slices.Contains(outbox.Move{Op: op}.Applies(), st) {
			ops = append(ops, string(op))
		}
	}
	return ops
}

// newLaneBody is the body of POST /api/outbox/lanes.
type newLaneBody struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	outbox.LaneChange
}

func (s *Server) apiAddLane(w http.ResponseWriter, r *http.Request) {
	var b newLaneBody
	if err := decodeJSON(r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	l, err := s.OutboxOps.AddLane(r.Context(), b.Name, b.Provider, b.LaneChange, actor(r))
	s.answer(w, r, http.StatusCreated, l, err)
}

func (s *Server) apiLane(w http.ResponseWriter, r *http.Request) {
	l, err := s.OutboxOps.Lane(r.Context(), r.PathValue("name"))
	s.answer(w, r, http.StatusOK, l, err)
}

func (s *Server) apiSetLane(w http.ResponseWriter, r *http.Request) {
	var ch outbox.LaneChange
	if err := decodeJSON(r, &ch); err != nil {
		s.fail(w, r, err)
		return
	}
	l, err := s.OutboxOps.SetLane(r.Context(), r.PathValue("name"), ch, actor(r))
	s.answer(w, r, http.StatusOK, l, err)
}

func (s *Server) apiRemoveLane(w http.ResponseWriter, r *http.Request) {
	if err := noFields(r); err != nil {
		s.fail(w, r, err)
		return
	}
	force, err := forceParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rm, err := s.OutboxOps.RemoveLane(r.Context(), r.PathValue("name"), force, actor(r))
	s.answer(w, r, http.StatusOK, rm, err)
}

// forceParam is a request's ?force=, false when it is not given.
func forceParam(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("force")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, tidemark.Invalidf("force", v, "want true or false")
	}
	return b, nil
}

func (s *Server) apiReconcile(w http.ResponseWriter, r *http.Request) {
	if err := noFields(r); err != nil {
		s.fail(w, r, err)
		return
	}
	rec, err := s.OutboxOps.Reconcile(r.Context(), r.PathValue("name"), actor(r))
	s.answer(w, r, http.StatusOK, rec, err)
}

func (s *Server) apiIntent(w http.ResponseWriter, r *http.Request) {
	d, err := s.OutboxOps.Intent(r.Context(), r.PathValue("id"))
	s.answer(w, r, http.StatusOK, d, err)
}

// intentOp is retire or revive, by its name in a path.
func (s *Server) intentOp(op string) (func(ctx context.Context, id, actor, reason string) (outbox.Intent, error), error) {
	switch op {
	case "retire":
		return s.OutboxOps.RetireIntent, nil
	case "revive":
		return s.OutboxOps.ReviveIntent, nil
	}
	return nil, fmt.Errorf("no intent operation %q (retire or revive): %w", op, tidemark.ErrNotFound)
}

func (s *Server) apiIntentOp(w http.ResponseWriter, r *http.Request) {
	op, err := s.intentOp(r.PathValue("action"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var b struct {
		Reason string `json:"reason"`
	}
	if err := decodeJSON(r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	in, err := op(r.Context(), r.PathValue("id"), actor(r), b.Reason)
	s.answer(w, r, http.StatusOK, in, err)
}

func (s *Server) apiChannels(w http.ResponseWriter, r *http.Request) {
	limit, cur, err := pageParams(r, "channels")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cs, err := s.OutboxOps.Channels(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// Sorted here, byte by byte, so the cursor's order is the page's
	// whatever collation the store sorted by.
	slices.SortFunc(cs, func(a, b outbox.Channel) int { return strings.Compare(channelKey(a), channelKey(b)) })
	writeJSON(w, http.StatusOK, pageAfter(cs, limit, cur, "channels", channelKey))
}

// channelKey orders channels by source, lane, target and parent (the ID
// last, to make it unique); NUL, which no name holds, separates them, so
// the key's order is the fields' order.
func channelKey(c outbox.Channel) string {
	return strings.Join([]string{c.Source, c.Lane, c.Target, c.Parent, c.ID}, "\x00")
}

func (s *Server) apiAddChannel(w http.ResponseWriter, r *http.Request) {
	var ref outbox.ChannelRef
	if err := decodeJSON(r, &ref); err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := s.OutboxOps.AddChannel(r.Context(), ref, actor(r))
	s.answer(w, r, http.StatusCreated, c, err)
}

func (s *Server) apiRemoveChannel(w http.ResponseWriter, r *http.Request) {
	if err := noFields(r); err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := s.OutboxOps.RemoveChannel(r.Context(), outbox.ChannelRef{ID: r.PathValue("id")}, actor(r))
	s.answer(w, r, http.StatusOK, c, err)
}

func (s *Server) apiTestChannel(w http.ResponseWriter, r *http.Request) {
	t, err := s.OutboxOps.TestChannel(r.Context(), r.PathValue("id"), r.URL.Query().Get("template"))
	s.answer(w, r, http.StatusOK, t, err)
}

func (s *Server) apiChannelTemplate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Template *string `json:"template"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Template == nil {
		s.fail(w, r, tidemark.Invalidf("template", "", `required ("" for the provider's default)`))
		return
	}
	c, err := s.OutboxOps.SetChannelTemplate(r.Context(), r.PathValue("id"), *req.Template, actor(r))
	s.answer(w, r, http.StatusOK, c, err)
}

func lanePath(name string) string { return "/status/lanes/" + url.PathEscape(name) }

// laneChangeForm reads a lane's change from a form: settings as key=value
// lines, settings to remove as names separated by commas or spaces, and
// outbox.LaneFields by name, left empty when unchanged.
func laneChangeForm(r *http.Request) (outbox.LaneChange, error) {
	var settings []string
	for _, line := range strings.Split(r.PostFormValue("settings"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			settings = append(settings, line)
		}
	}
	unset := strings.FieldsFunc(r.PostFormValue("unset"), func(c rune) bool { return c == ',' || c == ' ' })
	return outbox.ParseLaneChange(settings, unset, func(name string) (string, bool) {
		v := strings.TrimSpace(r.PostFormValue(name))
		return v, v != ""
	})
}

func (s *Server) formAddLane(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	ch, err := laneChangeForm(r)
	if err == nil {
		_, err = s.OutboxOps.AddLane(r.Context(), name, r.PostFormValue("provider"), ch, actor(r))
	}
	if err != nil {
		s.redirect(w, r, "/status/outbox", "", err)
		return
	}
	s.redirect(w, r, lanePath(name), "added lane "+name, nil)
}

func (s *Server) formLaneOp(w http.ResponseWriter, r *http.Request) {
	ctx, name := r.Context(), r.PathValue("name")
	back := lanePath(name)
	switch r.PathValue("action") {
	case "set":
		ch, err := laneChangeForm(r)
		var set outbox.LaneSet
		if err == nil {
			set, err = s.OutboxOps.SetLane(ctx, name, ch, actor(r))
		}
		msg := "lane " + name + " changed"
		if k := set.KeyResendLost; k != nil {
			msg += "; warning: " + k.Message
		}
		s.redirect(w, r, back, msg, err)
	case "reconcile":
		rec, err := s.OutboxOps.Reconcile(ctx, name, actor(r))
		msg := fmt.Sprintf("lane %s reconciled with %d provider request(s)", name, rec.Requests)
		if a := rec.Plan; a != nil {
			msg += fmt.Sprintf(": %d landed, %d to replay, %d unexecutable, %d unresolved", a.Accounting.Landed, a.Accounting.Replay, a.Accounting.Unexecutable, a.Accounting.Unresolved)
		}
		s.redirect(w, r, back, msg, err)
	case "remove":
		rm, err := s.OutboxOps.RemoveLane(ctx, name, r.PostFormValue("force") == "on", actor(r))
		if err != nil {
			s.redirect(w, r, back, "", err)
			return
		}
		s.redirect(w, r, "/status/outbox", fmt.Sprintf("removed lane %s with %d channel(s) and intents: %s", name, rm.Channels, outbox.CountsText(rm.Intents)), nil)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) formIntentOp(w http.ResponseWriter, r *http.Request) {
	op, err := s.intentOp(r.PathValue("action"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	back := "/status/outbox"
	if r.PostFormValue("back") == "intent" {
		back = "/status/outbox/intents/" + url.PathEscape(r.PathValue("id"))
	} else if lane := r.PostFormValue("lane"); lane != "" {
		back = lanePath(lane)
		if st := r.PostFormValue("state"); st != "" {
			back += "?state=" + url.QueryEscape(st)
		}
	}
	in, err := op(r.Context(), r.PathValue("id"), actor(r), r.PostFormValue("reason"))
	s.redirect(w, r, back, fmt.Sprintf("intent %s is now %s", in.ID, in.State), err)
}

func (s *Server) formAddChannel(w http.ResponseWriter, r *http.Request) {
	ref := outbox.ChannelRef{Source: r.PostFormValue("source"), Lane: r.PostFormValue("lane"), Target: r.PostFormValue("target"), Parent: r.PostFormValue("parent")}
	c, err := s.OutboxOps.AddChannel(r.Context(), ref, actor(r))
	msg := fmt.Sprintf("pages of %s will be delivered to %s on lane %s", c.Source, c.Target, c.Lane)
	if c.Note != "" {
		msg += "; but " + c.Note
	}
	s.redirect(w, r, "/status/outbox", msg, err)
}

func (s *Server) formRemoveChannel(w http.ResponseWriter, r *http.Request) {
	c, err := s.OutboxOps.RemoveChannel(r.Context(), outbox.ChannelRef{ID: r.PathValue("id")}, actor(r))
	s.redirect(w, r, "/status/outbox", fmt.Sprintf("pages of %s are no longer delivered to %s on lane %s", c.Source, c.Target, c.Lane), err)
}

func channelPath(id string) string { return "/status/outbox/channels/" + url.PathEscape(id) }

// channelPage shows what a channel would send with its template, or with
// the one in ?template= (trying it changes nothing), and the form to set
// it.
func (s *Server) channelPage(w http.ResponseWriter, r *http.Request) {
	id, q := r.PathValue("id"), r.URL.Query()
	trying := q.Has("template")
	t, err := s.OutboxOps.TestChannel(r.Context(), id, q.Get("template"))
	var problem *notice
	if err != nil && !errors.Is(err, tidemark.ErrInvalid) {
		s.fail(w, r, err) // no such channel, or worse
		return
	} else if err != nil {
		// The template tried is refused: say why, beside the form that holds it.
		problem = &notice{Error: true, Text: tidemark.Text(err)}
		if t, err = s.OutboxOps.TestChannel(r.Context(), id, ""); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	text := t.Channel.Template
	if trying {
		text = q.Get("template")
	}
	n := s.takeNotice(w, r)
	if problem != nil {
		n = problem
	}
	f, _ := outbox.FormatOf(t.Kind)
	s.render(w, r, "channel.html", map[string]any{"T": t, "Template": text, "Default": f.Template, "Trying": trying && problem == nil, "Notice": n})
}

func (s *Server) formChannelTemplate(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c, err := s.OutboxOps.SetChannelTemplate(r.Context(), id, r.PostFormValue("template"), actor(r))
	msg := "channel " + id + " now uses its own template"
	if c.Template == "" {
		msg = "channel " + id + " now uses its provider's default template"
	}
	s.redirect(w, r, channelPath(id), msg, err)
}

func (s *Server) outboxPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	lanes, err := s.OutboxOps.Lanes(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cs, err := s.OutboxOps.Channels(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "outbox.html", map[string]any{"Lanes": lanes, "Channels": cs, "Kinds": s.OutboxOps.ProviderKinds(),
		"Notice": s.takeNotice(w, r), "States": intentStates})
}

func (s *Server) intentPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.OutboxOps.Intent(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	data := map[string]any{"I": d, "Notice": s.takeNotice(w, r)}
	if d.PageID != "" && s.Wiki != nil {
		// The wiki is served from the site's root (Server.Wiki).
		data["WikiPage"] = "/" + publish.PageKey(d.PageID)
	}
	s.render(w, r, "intent.html", data)
}

// laneConsole is the lane page with the console's forms.
func (s *Server) laneConsole(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	l, err := s.OutboxOps.Lane(ctx, r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	state, err := outbox.ParseState(r.URL.Query().Get("state"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ins, err := s.OutboxOps.Intents(ctx, outbox.IntentFilter{Lane: l.Name, State: state, Limit: 200})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	gaps, err := s.OutboxOps.RecentGaps(ctx, l.Name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	history, err := s.OutboxOps.LaneActions(ctx, l.Name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "lane.html", map[string]any{"L": l, "Intents": ins, "States": intentStates, "State": state,
		"Chart": newGapChart(gaps, l.MinGap.Std().Milliseconds()), "History": history, "Notice": s.takeNotice(w, r), "Console": true})
}

// gapChart is a lane's latest achieved gaps as bars against the threshold,
// drawn as SVG by the page (no JavaScript).
type gapChart struct {
	Width, Height float64
	Bars          []gapBar
	// ThresholdY is where the lane's minimum gap now is drawn.
	ThresholdY  float64
	ThresholdMS int64
	MaxMS       int64
}

type gapBar struct {
	X, Y, W, H float64
	Below      bool
	Title      string
}

func newGapChart(gaps []outbox.Gap, thresholdMS int64) *gapChart {
	if len(gaps) == 0 {
		return nil
	}
	c := &gapChart{Width: 600, Height: 120, ThresholdMS: thresholdMS, MaxMS: thresholdMS}
	for _, g := range gaps {
		c.MaxMS = max(c.MaxMS, g.MS)
	}
	// A logarithmic scale: an idle lane's gap of hours beside gaps of
	// about the minimum would flatten them, and the minimum's line, to
	// the floor on a linear one.
	scale := func(ms int64) float64 {
		if c.MaxMS <= 0 {
			return 0
		}
		return math.Log1p(float64(max(ms, 0))) / math.Log1p(float64(c.MaxMS)) * (c.Height - 10)
	}
	step := c.Width / float64(len(gaps))
	for i, g := range gaps {
		h := max(scale(g.MS), 1)
		c.Bars = append(c.Bars, gapBar{X: float64(i)*step + 1, Y: c.Height - h, W: max(step-2, 1), H: h, Below: g.MS < g.ThresholdMS,
			Title: fmt.Sprintf("%s: %s (threshold %s)", stampText(g.At), durationMS(g.MS), durationMS(g.ThresholdMS))})
	}
	c.ThresholdY = c.Height - scale(thresholdMS)
	return c
}
