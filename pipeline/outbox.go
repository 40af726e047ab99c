package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/redact"
	"github.com/tidemark/tidemark/sqlstore"
)

// The outbox's operations: lanes, channels, intents, delivery and
// reconciliation, as the CLI, the console and the API do them. Every
// change is audited with its actor; a change that would lose intents not
// yet delivered or decided is refused unless forced.

// Lane defaults when an operator gives none.
const (
	DefaultLaneSkew      = 2 * time.Second
	DefaultRetireSpacing = 6 * time.Hour
)

// laneDefaults is a new lane before the operator's change: the provider's
// published rate limit as its gap (providers.MinGap), DefaultLaneSkew,
// and retiring left to operators.
func laneDefaults(name, kind string) outbox.LaneConfig {
	return outbox.LaneConfig{Name: name, Provider: kind, Settings: map[string]string{},
		MinGap: tidemark.Duration(providers.MinGap(kind)), Skew: tidemark.Duration(DefaultLaneSkew),
		Retirement: outbox.RetirementPolicy{Spacing: tidemark.Duration(DefaultRetireSpacing)}}
}

// checkLane checks a lane's configuration: its provider kind, that its
// settings give it a guarantee, that none of the settings given (all of a
// new lane's, those a lane set names) names tidemark's own configuration
// variable (checkLaneEnv), and that its provider takes them
// (providers.CheckSettings: nothing the remote would refuse on every
// write). Whether its provider can be built here (an environment variable
// may hold a secret elsewhere) is its health: a lane stored naming
// tidemark's own variable is broken, and a change that leaves that
// setting as it is is made (the lane stays broken, and its view says
// why and the fix), not refused for a setting its operator did not give.
func checkLane(c outbox.LaneConfig, given map[string]string) error {
	if !providers.Known(c.Provider) {
		return tidemark.Invalidf("provider", c.Provider, "want one of %s", strings.Join(providers.Kinds(), ", "))
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if _, err := providers.Guarantee(c.Provider, c.Settings); err != nil {
		return err
	}
	if err := checkLaneEnv(c.Name, given, false); err != nil {
		return err
	}
	return providers.CheckSettings(c.Provider, c.Settings)
}

// checkLaneEnv refuses a lane setting naming an environment variable
// (an …_env setting) that is tidemark's own configuration (ConfigOption):
// the lane would send the server's database URL or keys to its remote. It
// holds by every face, and where a lane's variables are read (newProvider),
// so a lane stored before the rule cannot send one either; stored says
// the lane is one, whose fix is a lane set.
func checkLaneEnv(lane string, settings map[string]string, stored bool) error {
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		v := strings.TrimSpace(settings[k])
		if !strings.HasSuffix(k, "_env") {
			continue
		}
		if o, ok := ConfigOption(v); ok {
			fix := ""
			if stored {
				fix = fmt.Sprintf(" (`tidemark outbox lane set %s --setting %s=VARIABLE`)", lane, k)
			}
			return tidemark.Invalidf("setting "+k, v, "is tidemark's own configuration (its %s setting), never a lane's secret: "+
				"put the lane's secret in a variable of its own and name that%s", o.Name, fix)
		}
	}
	return nil
}

// newProvider builds a lane's provider from its stored settings and
// secrets, as every delivery, reconciliation and check does: the one place
// a lane's environment variables are read.
func (p *Pipeline) newProvider(l outbox.Lane, secrets map[string]string) (provider.Provider, error) {
	if err := checkLaneEnv(l.Name, provider.Merge(l.Settings, secrets), true); err != nil {
		return nil, err
	}
	return providers.NewWithSecrets(l, secrets, p.clock)
}

// checkChange refuses a setting whose value is the shown form of a secret
// (a form or a script that sent back what it was shown): stored, it would
// replace the secret with its marker.
func checkChange(ch outbox.LaneChange) error {
	for k, v := range ch.Settings {
		if strings.Contains(v, redact.Marker) {
			return tidemark.Invalidf("setting "+k, "", "holds %s, the shown form of a secret kept apart; give the secret itself, or leave the setting out to keep it", redact.Marker)
		}
	}
	return nil
}

// admitLane refuses, under the kinds.Admission of a face whose users are
// not the machine's operator (the API and the console), lane settings a
// token must not give: an environment variable other than a TIDEMARK_ one
// (the lane would send the server's other secrets to its remote), or an
// address (a url setting) in the server's private network unless the
// server admits private addresses. A name that cannot be resolved now is
// let through, as for sources. The CLI carries no admission.
func (p *Pipeline) admitLane(ctx context.Context, settings map[string]string) error {
	a, ok := kinds.AdmissionOf(ctx)
	if !ok {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		v := strings.TrimSpace(settings[k])
		switch {
		case v == "":
		case strings.HasSuffix(k, "_env") && !strings.HasPrefix(v, "TIDEMARK_"):
			return tidemark.Invalidf("setting "+k, v, "over the API and the console a lane reads only environment variables named "+
				"TIDEMARK_…, so a token cannot send the server's other secrets anywhere; its operator can name %s with "+
				"`tidemark outbox lane add/set` on the server's machine", v)
		case !a.AllowPrivate && (k == "url" || strings.HasSuffix(k, "_url")):
			u, err := url.Parse(v)
			if err != nil || u.Hostname() == "" {
				continue // the provider says what is wrong with it
			}
			port := u.Port()
			if port == "" {
				port = "443"
				if u.Scheme == "http" {
					port = "80"
				}
			}
			allowed, refused, err := p.kinds.Client().ResolveChecked(ctx, u.Hostname(), port)
			if err == nil && refused != nil && len(allowed) == 0 {
				return tidemark.Invalidf("setting "+k, "", "reaches %s: %v; this server does not let the API or the console "+
					"write to its private network: its operator can add the lane with `tidemark outbox lane add` on its "+
					"machine, or start `tidemark serve --allow-private`", u.Hostname(), refused)
			}
		}
	}
	return nil
}

// AddLane adds a lane of a provider kind, with the change made to the
// defaults; its secrets are kept apart from its shown settings.
func (p *Pipeline) AddLane(ctx context.Context, name, kind string, ch outbox.LaneChange, actor string) (outbox.LaneView, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.LaneView{}, err
	}
	if err := checkChange(ch); err != nil {
		return outbox.LaneView{}, err
	}
	if err := p.admitLane(ctx, ch.Settings); err != nil {
		return outbox.LaneView{}, err
	}
	c := ch.Apply(laneDefaults(name, kind))
	if err := checkLane(c, c.Settings); err != nil {
		return outbox.LaneView{}, err
	}
	shown, secret := providers.Split(c.Provider, c.Settings)
	c.Settings = shown
	if _, err := p.db.Outbox().AddLane(ctx, sqlstore.NewLane{LaneConfig: c, Secrets: secret, Actor: actor}); err != nil {
		return outbox.LaneView{}, err
	}
	return p.Lane(ctx, c.Name)
}

// SetLane changes a lane's settings, gap, skew or retirement policy. The
// audit names what changed, never a secret's value. A change of the
// lane's token (or account) while writes sent on their key under the one
// before are in doubt is not refused, but said: the answer's
// KeyResendLost counts them and says what becomes of them.
func (p *Pipeline) SetLane(ctx context.Context, name string, ch outbox.LaneChange, actor string) (outbox.LaneSet, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.LaneSet{}, err
	}
	if ch.Empty() {
		return outbox.LaneSet{}, tidemark.Invalidf("lane set", name, "nothing to change: give %s, %s, %s, %s or a retirement policy (%s, %s)",
			tidemark.Input("settings"), tidemark.Input("unset"), tidemark.Input("min_gap"), tidemark.Input("skew"), tidemark.Input("retire_checks"), tidemark.Input("retire_spacing"))
	}
	if err := checkChange(ch); err != nil {
		return outbox.LaneSet{}, err
	}
	if err := p.admitLane(ctx, ch.Settings); err != nil {
		return outbox.LaneSet{}, err
	}
	before, beforeOK := p.keyScope(ctx, name)
	var kind string
	err := p.db.Outbox().SetLane(ctx, name, actor, providers.Split, func(cur outbox.LaneConfig) (outbox.LaneConfig, string, error) {
		for _, k := range ch.Unset {
			if _, ok := cur.Settings[k]; !ok {
				return cur, "", tidemark.Invalidf("unset", k, "lane %s has no such setting", name)
			}
		}
		next := ch.Apply(cur)
		if err := checkLane(next, ch.Settings); err != nil {
			return cur, "", err
		}
		kind = cur.Provider
		return next, describeChange(cur, next), nil
	})
	if err != nil {
		return outbox.LaneSet{}, err
	}
	v, err := p.Lane(ctx, name)
	if err != nil {
		return outbox.LaneSet{}, err
	}
	lost, err := p.keyResendLost(ctx, name, before, beforeOK, touchesToken(kind, ch))
	return outbox.LaneSet{LaneView: v, KeyResendLost: lost}, err
}

// keyScope is the scope the lane's provider, built here with its settings
// and secrets, sends idempotency keys in (provider.KeyScoped); ok is false
// when it cannot be built here (a secret's variable unset in this
// process).
func (p *Pipeline) keyScope(ctx context.Context, name string) (scope string, ok bool) {
	_, prov, built := p.laneProvider(ctx, name)
	if !built {
		return "", false
	}
	if k, isScoped := prov.(provider.KeyScoped); isScoped {
		return k.KeyScope(), true
	}
	return "", true
}

// touchesToken reports whether a change of a lane of kind names a secret
// or the variable holding one: what can change the lane's key scope when
// its scope cannot be told here.
func touchesToken(kind string, ch outbox.LaneChange) bool {
	for _, k := range append(slices.Collect(maps.Keys(ch.Settings)), ch.Unset...) {
		if _, secret := providers.Split(kind, map[string]string{k: "x"}); len(secret) > 0 || strings.HasSuffix(k, "_env") {
			return true
		}
	}
	return false
}

// keyResendLost says which of the lane's writes in doubt a change that
// moved it from key scope before (beforeOK: known) stripped of their
// keyed resend: those sent on their key in a scope the lane no longer
// sends in. A change that kept the scope strips none; when either scope
// cannot be told here, a change that names the token may have.
func (p *Pipeline) keyResendLost(ctx context.Context, name, before string, beforeOK, touched bool) (*outbox.KeyResendLost, error) {
	after, afterOK := p.keyScope(ctx, name)
	if beforeOK && afterOK && before == after || !(beforeOK && afterOK) && !touched {
		return nil, nil
	}
	var lost []outbox.Intent
	for _, st := range []outbox.State{outbox.StateSending, outbox.StateUnresolved} {
		f := outbox.IntentFilter{Lane: name, State: st, Limit: outbox.MaxIntents}
		for {
			ins, err := p.db.Outbox().ListIntents(ctx, f)
			if err != nil {
				return nil, err
			}
			for _, in := range ins {
				sent := in.KeyScope
				switch {
				case sent == nil || *sent == "":
					// Never sent in one scope a key could be trusted in:
					// it had no keyed resend to lose.
				case beforeOK && *sent != before, afterOK && *sent == after:
					// Lost before this change, or still in the lane's scope.
				default:
					lost = append(lost, in)
				}
			}
			if len(ins) < f.Bounded() {
				break
			}
			f.AfterLane, f.AfterRank = name, ins[len(ins)-1].Rank
		}
	}
	if len(lost) == 0 {
		return nil, nil
	}
	slices.SortFunc(lost, func(a, b outbox.Intent) int { return cmp.Compare(a.Rank, b.Rank) })
	ids := make([]string, len(lost))
	for i, in := range lost {
		ids[i] = in.ID
	}
	v, err := p.Lane(ctx, name)
	if err != nil {
		return nil, err
	}
	return outbox.NewKeyResendLost(ids, afterOK, v.Guarantee != nil && v.Guarantee.OptedIn), nil
}

// describeChange says what a lane set changed: setting names only, so no
// secret's value reaches the audit.
func describeChange(a, b outbox.LaneConfig) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(b.Settings)) {
		if v, ok := a.Settings[k]; !ok {
			parts = append(parts, "set "+k)
		} else if v != b.Settings[k] {
			parts = append(parts, "changed "+k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.Settings)) {
		if _, ok := b.Settings[k]; !ok {
			parts = append(parts, "unset "+k)
		}
	}
	if a.MinGap != b.MinGap {
		parts = append(parts, fmt.Sprintf("min gap %s → %s", a.MinGap.Std(), b.MinGap.Std()))
	}
	if a.Skew != b.Skew {
		parts = append(parts, fmt.Sprintf("skew %s → %s", a.Skew.Std(), b.Skew.Std()))
	}
	if a.Retirement != b.Retirement {
		parts = append(parts, fmt.Sprintf("retirement %d checks every %s", b.Retirement.Checks, b.Retirement.Spacing.Std()))
	}
	if len(parts) == 0 {
		return "nothing changed"
	}
	return strings.Join(parts, ", ")
}

// RemoveLane removes a lane with its channels and intents. A lane with
// intents pending, sending or unresolved is refused (tidemark.ErrConflict,
// saying what would be lost) unless force is set.
func (p *Pipeline) RemoveLane(ctx context.Context, name string, force bool, actor string) (outbox.LaneRemoval, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.LaneRemoval{}, err
	}
	return p.db.Outbox().RemoveLane(ctx, name, actor, force)
}

// Lanes returns every lane with its guarantee, health and gaps.
func (p *Pipeline) Lanes(ctx context.Context) (outbox.LaneViews, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.LaneViews{}, err
	}
	ls, err := p.db.Outbox().Lanes(ctx)
	if err != nil {
		return nil, err
	}
	gaps, err := p.db.Outbox().Gaps(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make(outbox.LaneViews, len(ls))
	for i, l := range ls {
		if out[i], err = p.view(ctx, l, gaps); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Lane returns one lane with its guarantee, health and gaps.
func (p *Pipeline) Lane(ctx context.Context, name string) (outbox.LaneView, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.LaneView{}, err
	}
	l, err := p.db.Outbox().LaneDetail(ctx, name)
	if err != nil {
		return outbox.LaneView{}, err
	}
	gaps, err := p.db.Outbox().Gaps(ctx, name)
	if err != nil {
		return outbox.LaneView{}, err
	}
	return p.view(ctx, l, gaps)
}

// view judges a lane by building its provider as a delivery would: a
// secret kept apart that is missing, or settings its provider refuses,
// make it broken. A write in flight whose writer's process is gone (or
// whose lease ran out) makes it in doubt. The guarantee is the one its settings, secrets
// included, give it, and none when its provider cannot be built here: a
// lane that cannot deliver from here promises nothing from here.
func (p *Pipeline) view(ctx context.Context, l outbox.Lane, gaps []outbox.GapReport) (outbox.LaneView, error) {
	v := outbox.LaneView{Lane: l, AsOf: p.clock.Now(), HolderGone: p.live.Gone(l.LeaseHolder)}
	for i := range gaps {
		if gaps[i].Lane == l.Name {
			v.Gaps = &gaps[i]
		}
	}
	secrets, err := p.db.Outbox().LaneSecrets(ctx, l.Name)
	if err != nil {
		return v, err
	}
	if g, err := providers.Guarantee(l.Provider, provider.Merge(l.Settings, secrets)); err == nil {
		v.Guarantee = &g
	}
	_, err = p.newProvider(l, secrets)
	if err != nil {
		v.Guarantee = nil
	}
	v.Judge(err)
	return v, nil
}

// RecentGaps are a lane's latest achieved gaps (at most 60), oldest first,
// each with the threshold in force when it was made.
func (p *Pipeline) RecentGaps(ctx context.Context, lane string) ([]outbox.Gap, error) {
	if err := p.checkOpen(ctx); err != nil {
		return nil, err
	}
	return p.db.Outbox().RecentGaps(ctx, lane, 60)
}

// LaneActions is the audit of a lane's configuration, newest first. The
// audit outlives the lane, so a removed lane's history is listed; a name
// with no history and no lane never had one, and is not found (naming
// it), as a listing of its intents is. A lane added before its changes
// were audited has no history: none is listed.
func (p *Pipeline) LaneActions(ctx context.Context, lane string) (outbox.LaneActions, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.LaneActions{}, err
	}
	st := p.db.Outbox()
	as, err := st.LaneActions(ctx, lane, 100)
	if err != nil || len(as) > 0 {
		return as, err
	}
	if _, err := st.Lane(ctx, lane); err != nil {
		return nil, err
	}
	return as, nil
}

// AddChannel has the pages of ref.Source delivered to ref.Target (and
// ref.Parent) on ref.Lane.
func (p *Pipeline) AddChannel(ctx context.Context, ref outbox.ChannelRef, actor string) (outbox.Channel, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.Channel{}, err
	}
	for _, f := range []struct{ name, v string }{{"source", ref.Source}, {"lane", ref.Lane}, {"target", ref.Target}} {
		if strings.TrimSpace(f.v) == "" {
			return outbox.Channel{}, tidemark.Invalidf(f.name, f.v, "required")
		}
	}
	if err := p.checkChannelTarget(ctx, ref); err != nil {
		return outbox.Channel{}, err
	}
	c, err := p.db.Outbox().AddChannelAs(ctx, actor, ref.Source, ref.Lane, ref.Target, ref.Parent)
	if err == nil {
		c.Note = p.readBackNote(ctx, c.Lane, c.Target, c.Parent)
	}
	return c, err
}

// laneProvider builds a lane's provider as a delivery would; ok is false
// when the lane cannot be read or its provider cannot be built here (its
// health says why).
func (p *Pipeline) laneProvider(ctx context.Context, lane string) (outbox.Lane, provider.Provider, bool) {
	l, err := p.db.Outbox().Lane(ctx, lane)
	if err != nil {
		return l, nil, false
	}
	secrets, err := p.db.Outbox().LaneSecrets(ctx, lane)
	if err != nil {
		return l, nil, false
	}
	prov, err := p.newProvider(l, secrets)
	if err != nil {
		return l, nil, false
	}
	return l, prov, true
}

// channelCheckTimeout bounds the question channel add asks the lane's
// remote (a GitHub issue, a Mastodon parent status).
const channelCheckTimeout = 10 * time.Second

// checkChannelTarget asks the lane's provider whether the channel's target
// (and parent) can take a write, as the deliverer asks before each send, and
// refuses one it says cannot (tidemark.ErrInvalid, with the provider's
// reason and what to give instead): every page would otherwise draft an
// intent that is unexecutable. A remote that cannot be asked now (down,
// unreachable, or the lane's provider cannot be built here) does not make a
// target that can never work: the channel is added, and the deliverer asks
// again before each send.
func (p *Pipeline) checkChannelTarget(ctx context.Context, ref outbox.ChannelRef) error {
	l, prov, ok := p.laneProvider(ctx, ref.Lane)
	if !ok {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, channelCheckTimeout)
	defer cancel()
	w, err := prov.CanWrite(cctx, ref.Target, ref.Parent)
	if err != nil || w.OK {
		return nil
	}
	field, value := "target", ref.Target
	if ref.Parent != "" {
		field, value = "channel", ref.Target+" (parent "+ref.Parent+")"
	}
	return tidemark.Invalidf(field, value, "lane %s (%s) cannot write there: %s", l.Name, l.Provider, w.Reason)
}

// readBackNote says, for a channel whose lane's listing does not read its
// target back, what that means and how to have it read; "" when it does,
// or when the lane's provider cannot be built here (its health says why).
func (p *Pipeline) readBackNote(ctx context.Context, lane, target, parent string) string {
	l, prov, ok := p.laneProvider(ctx, lane)
	if !ok {
		return ""
	}
	if cv, ok := prov.(provider.Covering); !ok || cv.Covers(target, parent) {
		return ""
	}
	setting := strings.Join(providers.ListSettings(l.Provider), ", ")
	return fmt.Sprintf("lane %s does not read %s back (its listing reads only what its %s setting names): a write to it whose "+
		"answer is lost is decided only by a probe or an idempotency key, where the provider has one, and otherwise stays "+
		"unresolved, never sent twice; to have it read, name it there (outbox lane set %s --setting %s=…)", lane, target, setting, lane, setting)
}

// RemoveChannel stops delivering a source's pages to a channel. The
// intents it drafted stay on their lane.
func (p *Pipeline) RemoveChannel(ctx context.Context, ref outbox.ChannelRef, actor string) (outbox.Channel, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.Channel{}, err
	}
	return p.db.Outbox().RemoveChannel(ctx, ref, actor)
}

// SetChannelTemplate sets the template a channel's messages are rendered
// with (Go text/template over the change's title, summary, link, source
// and page); a blank one resets it to its provider's default. A template
// that would fail on every change is refused.
func (p *Pipeline) SetChannelTemplate(ctx context.Context, channelID, tmpl, actor string) (outbox.Channel, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.Channel{}, err
	}
	return p.db.Outbox().SetChannelTemplate(ctx, channelID, tmpl, actor)
}

// TestChannel renders what a channel would send, without sending anything:
// `outbox channel test`.
func (p *Pipeline) TestChannel(ctx context.Context, channelID, tmpl string) (outbox.ChannelTest, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.ChannelTest{}, err
	}
	cp, err := p.db.Outbox().ChannelPreview(ctx, channelID)
	if err != nil {
		return outbox.ChannelTest{}, err
	}
	if cp.Message.Link == "" && p.cfg.WikiURL != "" && cp.Message.Page != "" {
		cp.Message.Link = strings.TrimRight(p.cfg.WikiURL, "/") + "/" + publish.PageKey(cp.Message.Page)
	}
	if strings.TrimSpace(tmpl) == "" {
		tmpl = cp.Channel.Template
	}
	r, err := outbox.Preview(cp.Kind, tmpl, cp.Message)
	return outbox.ChannelTest{Channel: cp.Channel, Sample: cp.Sample, Message: cp.Message, Rendered: r}, err
}

// Channels returns every channel.
func (p *Pipeline) Channels(ctx context.Context) (outbox.Channels, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.Channels{}, err
	}
	cs, err := p.db.Outbox().Channels(ctx)
	for i := range cs {
		cs[i].Note = p.readBackNote(ctx, cs[i].Lane, cs[i].Target, cs[i].Parent)
	}
	return cs, err
}

// Intents lists intents by lane and rank.
func (p *Pipeline) Intents(ctx context.Context, f outbox.IntentFilter) (outbox.Intents, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.Intents{}, err
	}
	if err := outbox.CheckIntentFilter(ctx, p.db.Outbox(), f); err != nil {
		return nil, err
	}
	return p.db.Outbox().ListIntents(ctx, f)
}

// Intent returns an intent with the evidence of every check and its audit
// trail.
func (p *Pipeline) Intent(ctx context.Context, id string) (outbox.IntentDetail, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.IntentDetail{}, err
	}
	st := p.db.Outbox()
	in, err := st.Intent(ctx, id)
	if err != nil {
		return outbox.IntentDetail{}, err
	}
	d := outbox.IntentDetail{Intent: in}
	if d.Checks, err = st.Checks(ctx, id); err != nil {
		return d, err
	}
	d.Actions, err = st.Actions(ctx, id)
	return d, err
}

// Draft drafts an intent by hand at the end of its lane.
func (p *Pipeline) Draft(ctx context.Context, d outbox.Draft) (outbox.Intent, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.Intent{}, err
	}
	return p.db.Outbox().Draft(ctx, d)
}

// RetireIntent retires an intent: it is never sent (reversible).
func (p *Pipeline) RetireIntent(ctx context.Context, id, actor, reason string) (outbox.Intent, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.Intent{}, err
	}
	if err := needReason(reason); err != nil {
		return outbox.Intent{}, err
	}
	return p.db.Outbox().Retire(ctx, id, actor, reason)
}

// ReviveIntent revives a retired, unexecutable or colliding intent.
func (p *Pipeline) ReviveIntent(ctx context.Context, id, actor, reason string) (outbox.Intent, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.Intent{}, err
	}
	if err := needReason(reason); err != nil {
		return outbox.Intent{}, err
	}
	return p.db.Outbox().Revive(ctx, id, actor, reason)
}

// needReason refuses an operator's move on an intent that does not say why.
func needReason(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return tidemark.Invalidf("reason", reason, "say why, for the audit trail")
	}
	return nil
}

// Reconcile reconciles a lane now, under its lease: one ordered read of
// our own writes, planned and recorded, and audited with its actor.
func (p *Pipeline) Reconcile(ctx context.Context, lane, actor string) (outbox.Reconciled, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.Reconciled{}, err
	}
	r := outbox.Reconciled{Lane: lane}
	d, err := p.Deliverer(ctx, lane, time.Minute)
	if err != nil {
		return r, err
	}
	defer releaseLease(ctx, d)
	s, err := d.Reconcile(ctx)
	if err != nil {
		return r, err
	}
	r.Requests, r.Plan = s.Requests, s.Plan
	detail := fmt.Sprintf("%d provider request(s)", s.Requests)
	if s.Plan != nil {
		a := s.Plan.Accounting
		detail += fmt.Sprintf("; %d landed, %d to replay, %d unexecutable, %d unresolved of %d", a.Landed, a.Replay, a.Unexecutable, a.Unresolved, a.Total)
	}
	return r, p.db.Outbox().Audit(ctx, lane, outbox.ActionReconcile, actor, detail)
}

// Gaps reports the gaps each lane's pacing gate achieved (or one lane's).
func (p *Pipeline) Gaps(ctx context.Context, lane string) (outbox.GapReports, error) {
	if err := p.checkOpen(ctx); err != nil {
		return outbox.GapReports{}, err
	}
	return p.db.Outbox().Gaps(ctx, lane)
}

// ProviderKinds names the provider kinds a lane may have.
func (p *Pipeline) ProviderKinds() []string { return providers.Kinds() }

// Deliverer is the single writer of a lane, holding its lease for ttl
// under the holder slot of the operation ctx belongs to (Holder outside
// one: see Ingest). A
// lane whose provider cannot be built here is a *LaneBrokenError.
func (p *Pipeline) Deliverer(ctx context.Context, lane string, ttl time.Duration) (*outbox.Deliverer, error) {
	if err := p.checkOpen(ctx); err != nil {
		return nil, err
	}
	l, err := p.db.Outbox().Lane(ctx, lane)
	if err != nil {
		return nil, err
	}
	secrets, err := p.db.Outbox().LaneSecrets(ctx, lane)
	if err != nil {
		return nil, err
	}
	prov, err := p.newProvider(l, secrets)
	if err != nil {
		return nil, outbox.OfLane(lane, &LaneBrokenError{Lane: lane, Err: err})
	}
	return &outbox.Deliverer{Store: p.db.Outbox(), Provider: prov, Lane: lane, Holder: p.holderOf(ctx), Clock: p.clock, LeaseTTL: ttl, Logger: p.log}, nil
}

// LaneBrokenError is a lane whose provider cannot be built here: its
// stored settings or secrets are refused, or a secret's environment
// variable is unset on this worker (the health lane show calls broken).
// The command that met it was given nothing wrong, so it matches
// tidemark.ErrUnavailable (exit 5), as a source whose run failed does: the
// lane's writes are left undone until it is fixed (outbox lane set) or
// delivered from a worker that has its secrets. Err says why; it is not
// unwrapped, so the lane's invalid setting is not taken for the caller's.
type LaneBrokenError struct {
	Lane string
	Err  error
}

func (e *LaneBrokenError) Error() string {
	// The lane is named by the error of the lane that carries it
	// (outbox.OfLane), once.
	return fmt.Sprintf("broken here: %v", e.Err)
}

func (e *LaneBrokenError) Unwrap() error { return tidemark.ErrUnavailable }

// leaseReleaseTimeout bounds giving up a lane's lease on the way out.
const leaseReleaseTimeout = 10 * time.Second

// releaseLease gives up d's lease on the way out of a delivery, after its
// attempt's journal is written: on a context that the interrupt which may
// have ended the delivery did not cancel, bounded, so that the same
// command run again is not refused until the lease expires.
func releaseLease(ctx context.Context, d *outbox.Deliverer) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
	defer cancel()
	return d.Release(ctx)
}

// DeliverReport is one lane's delivery.
type DeliverReport struct {
	Lane  string        `json:"lane"`
	Steps []outbox.Step `json:"steps"`
	Error string        `json:"error"`
	// PassedOver says why a pass over every lane left this one to
	// another writer: who holds its lease, until when ("" when it did
	// not).
	PassedOver string `json:"passed_over"`
}

// DeliverOnce delivers what is pending on every lane (or only one), each
// under its lane's lease of ttl, and reports each lane's steps. Over every
// lane, one whose lease another live writer holds is passed over (its
// report says who holds it), not failed: that writer delivers it, as a
// source another live worker holds is passed over. A lane named alone is
// the caller's to deliver: held elsewhere, it is refused
// (*outbox.LeaseHeldError, a conflict). A ttl of 0 is the default lease
// (DefaultLaneLease); one under MinLease is refused, as RunOnce refuses
// such a claim lease.
func (p *Pipeline) DeliverOnce(ctx context.Context, lane string, ttl time.Duration) (DeliverReports, error) {
	if err := checkLaneLease(ttl); err != nil {
		return nil, err
	}
	ctx, _, release, err := p.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	names, err := p.laneNames(ctx, lane)
	if err != nil {
		return nil, err
	}
	reports := make(DeliverReports, 0, len(names))
	var errs []error
	for _, name := range names {
		r := DeliverReport{Lane: name, Steps: []outbox.Step{}}
		d, err := p.Deliverer(ctx, name, ttl)
		if err == nil {
			var steps []outbox.Step
			steps, err = d.RunOnce(ctx, nil)
			r.Steps = append(r.Steps, steps...)
			if rerr := releaseLease(ctx, d); err == nil {
				err = rerr
			}
		}
		var held *outbox.LeaseHeldError
		switch {
		case err == nil:
		case lane == "" && errors.As(err, &held):
			r.PassedOver = held.Error()
		default:
			err = outbox.OfLane(name, err)
			r.Error = tidemark.Text(err)
			errs = append(errs, err)
		}
		reports = append(reports, r)
	}
	return reports, errors.Join(errs...)
}

// laneNames is only, or every lane.
func (p *Pipeline) laneNames(ctx context.Context, only string) ([]string, error) {
	if only != "" {
		return []string{only}, nil
	}
	return p.db.Outbox().LaneNames(ctx)
}

// DeliverLoop steps every lane (or only one) until ctx ends, each under
// its lane's lease of ttl. A lane another process holds is passed over; a
// lane whose configuration changed (lane set, or removed and added again)
// has its provider built anew; a
// lane that fails is retried after a pause that grows with its consecutive
// failures; a failure to list the lanes is logged and retried the same
// way. It returns only when ctx ends, or when a newer tidemark has
// migrated the database (sqlstore.ErrNewerSchema). ttl is as DeliverOnce
// takes it.
func (p *Pipeline) DeliverLoop(ctx context.Context, only string, ttl time.Duration) error {
	if err := checkLaneLease(ttl); err != nil {
		return err
	}
	ctx, _, release, err := p.enter(ctx)
	if err != nil {
		return err
	}
	defer release()
	// laneState is what the loop keeps of one revision of a lane: a lane
	// removed, or changed (lane set, or removed and added again), starts
	// afresh, with its provider built anew and no pause left from before.
	type laneState struct {
		rev     string
		d       *outbox.Deliverer
		next    time.Time
		failing *backoff
	}
	lanes := map[string]*laneState{}
	defer func() {
		for _, l := range lanes {
			if l.d != nil {
				_ = releaseLease(ctx, l.d)
			}
		}
	}()
	listing := newBackoff()
	for {
		if err := p.newerSchema(ctx); err != nil {
			return err
		}
		revisions, err := p.db.Outbox().LaneRevisions(ctx, only)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			wait := listing.Fail()
			p.log.Error("outbox: listing lanes failed; retrying", "err", err, "retry_in", wait)
			if err := sleep(ctx, wait); err != nil {
				return err
			}
			continue
		}
		listing.Reset()
		if _, ok := revisions[only]; only != "" && !ok {
			revisions[only] = "" // not a lane: Deliverer says so, and the loop retries
		}
		for name, l := range lanes {
			if rev, ok := revisions[name]; !ok || rev != l.rev {
				if l.d != nil {
					_ = releaseLease(ctx, l.d) // the lane was removed or changed
				}
				delete(lanes, name)
			}
		}
		wake := p.clock.Now().Add(lanePoll)
		for _, name := range slices.Sorted(maps.Keys(revisions)) {
			l := lanes[name]
			if l == nil {
				l = &laneState{rev: revisions[name], failing: newBackoff()}
				lanes[name] = l
			}
			now := p.clock.Now()
			if now.Before(l.next) {
				wake = minTime(wake, l.next)
				continue
			}
			if l.d == nil {
				d, err := p.Deliverer(ctx, name, ttl)
				if err != nil {
					wait := l.failing.Fail()
					p.log.Warn("outbox: lane not deliverable; retrying", "lane", name, "err", err, "retry_in", wait)
					l.next = now.Add(wait)
					wake = minTime(wake, l.next)
					continue
				}
				l.d = d
			}
			// The step keeps on the lane whether it failed
			// (outbox.Lane.Failing), as every delivery's does.
			s, err := l.d.Step(ctx)
			if err == nil {
				l.failing.Reset()
			}
			def, deferred := errors.AsType[*outbox.DeferredError](err)
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.Is(err, tidemark.ErrClaimHeld):
				l.next = now.Add(lanePoll)
			case deferred:
				// The provider said when to come back: not a failure.
				p.log.Warn("outbox: the provider asked the lane to wait", "lane", name, "err", err, "until", def.Until)
				l.next = def.Until
			case err != nil:
				wait := l.failing.Fail()
				p.log.Error("outbox: step failed; retrying", "lane", name, "err", err, "retry_in", wait)
				l.next = now.Add(wait)
			case s.Kind == outbox.StepIdle:
				l.next = now.Add(lanePoll)
			case s.Kind == outbox.StepWait:
				l.next = *s.Until
			default:
				l.next = now
				wake = now
				if s.Alert != "" {
					p.log.Error("outbox: duplicate alert", "lane", name, "intent", s.IntentID, "alert", s.Alert)
				}
			}
			wake = minTime(wake, l.next)
		}
		if err := sleep(ctx, wake.Sub(p.clock.Now())); err != nil {
			return err
		}
	}
}

// DeliverReports are each lane's delivery.
type DeliverReports []DeliverReport

// WriteText writes each lane's delivery in a line.
func (rs DeliverReports) WriteText(w io.Writer) error {
	for _, r := range rs {
		if err := r.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}

// WriteText writes the lane's delivery in a line.
func (r DeliverReport) WriteText(w io.Writer) error {
	if r.PassedOver != "" {
		if len(r.Steps) > 0 { // it was lost to another writer midway
			if err := outbox.WriteSteps(w, r.Lane, r.Steps, ""); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintf(w, "%-16s passed over: %s (that writer delivers it)\n", r.Lane, r.PassedOver)
		return err
	}
	return outbox.WriteSteps(w, r.Lane, r.Steps, r.Error)
}
