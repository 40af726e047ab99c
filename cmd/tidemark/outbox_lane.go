package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/pipeline"
)

// laneFlags adds the flags of lane add and lane set; the change is what
// the flags given say.
func laneFlags(cmd *cobra.Command) (change func() (outbox.LaneChange, error)) {
	f := cmd.Flags()
	settings := f.StringArray("setting", nil, "a provider setting key=value (repeatable)")
	files := f.StringArray("setting-file", nil, "a provider setting key=PATH whose value is the file's one line, trimmed of white space (PATH - : standard input), "+
		"so a secret stays out of the command line and the shell's history (repeatable)")
	unset := f.StringArray("unset", nil, "remove a setting (repeatable; lane set)")
	for _, lf := range outbox.LaneFields {
		f.String(lf.Name, lf.Default, lf.Usage)
	}
	return func() (outbox.LaneChange, error) {
		ch, err := outbox.ParseLaneChange(*settings, *unset, func(name string) (string, bool) {
			v, _ := f.GetString(name)
			return v, f.Changed(name)
		})
		if err != nil {
			return ch, err
		}
		// Standard input is read once: a second setting from it would
		// read nothing, so it is refused before anything is read.
		stdinBy := ""
		for _, kv := range *files {
			if key, path, _ := strings.Cut(kv, "="); path == "-" {
				if stdinBy != "" {
					return ch, tidemark.Invalidf("setting-file", key, "standard input was already read by --setting-file %s: give one of them from a file", stdinBy)
				}
				stdinBy = key
			}
		}
		for _, kv := range *files {
			key, value, err := settingFromFile(kv)
			if err != nil {
				return ch, err
			}
			if _, twice := ch.Settings[key]; twice {
				return ch, tidemark.Invalidf("setting-file", key, "the setting is given twice (by --setting too)")
			}
			if ch.Settings == nil {
				ch.Settings = map[string]string{}
			}
			ch.Settings[key] = value
		}
		return ch, nil
	}
}

// settingFromFile reads --setting-file's key=PATH: the value is the file's
// one line, without its line end and the white space around it (PATH "-":
// standard input). A receiver trims what it is sent, and would echo the
// secret without the spaces, where the one kept with them is not found to
// be cleaned. The error names the key, never the value.
func settingFromFile(kv string) (key, value string, err error) {
	key, path, ok := strings.Cut(kv, "=")
	if !ok || key == "" || path == "" {
		return "", "", tidemark.Invalidf("setting-file", kv, "want key=PATH (PATH - for standard input)")
	}
	var b []byte
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, maxSettingFile+1))
	} else {
		var fh *os.File
		if fh, err = os.Open(path); err == nil {
			b, err = io.ReadAll(io.LimitReader(fh, maxSettingFile+1))
			fh.Close()
		}
	}
	if err != nil {
		return "", "", tidemark.Invalidf("setting-file", key, "cannot read the value: %v", err)
	}
	if len(b) > maxSettingFile {
		return "", "", tidemark.Invalidf("setting-file", key, "%s holds more than %d bytes: a setting is one line", path, maxSettingFile)
	}
	v := strings.TrimSpace(string(b))
	switch {
	case v == "":
		return "", "", tidemark.Invalidf("setting-file", key, "%s is empty", path)
	case strings.ContainsAny(v, "\r\n"):
		return "", "", tidemark.Invalidf("setting-file", key, "%s holds more than one line: a setting is one line", path)
	}
	return key, v, nil
}

// maxSettingFile bounds what --setting-file reads.
const maxSettingFile = 64 << 10

func newOutboxLaneCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "lane", Short: "Add, change, show and remove delivery lanes (one provider account each)"}
	var (
		kind                 string
		force                bool
		addChange, setChange func() (outbox.LaneChange, error)
	)
	add := opCmd(a, "add NAME --provider KIND --setting key=value…", "Add a lane", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			ch, err := addChange()
			if err != nil {
				return nil, err
			}
			l, err := p.AddLane(cmd.Context(), args[0], kind, ch, actor())
			return answer(say(l, "added %s lane %q: at least %s between writes%s", l.Provider, l.Name, l.MinGap.Std(), l.Summary()), err)
		})
	add.Long = "Add a lane: one provider account, written by one fenced writer at a time\nthrough a pacing gate.\n\n" + providers.SettingsHelp
	add.Flags().StringVar(&kind, "provider", "", fmt.Sprintf("the provider kind: %v", providers.Kinds()))
	addChange = laneFlags(add)
	set := opCmd(a, "set NAME [--setting key=value…] [--unset key…] [--min-gap D] [--skew D] [--retire-checks N]",
		"Change a lane's settings, gap, skew or retirement policy (audited)", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			ch, err := setChange()
			if err != nil {
				return nil, err
			}
			return answer(p.SetLane(cmd.Context(), args[0], ch, actor()))
		})
	set.Long = "Change a lane. Settings given are merged into the lane's; a secret given again\nreplaces the one kept apart. The audit names what changed, never a value.\n\n" + providers.SettingsHelp
	setChange = laneFlags(set)
	show := opCmd(a, "show NAME", "Show a lane: its guarantee, health, lease, gate, and intents by state", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return answer(p.Lane(cmd.Context(), args[0]))
		})
	remove := opCmd(a, "remove NAME [--force]", "Remove a lane with its channels and intents (refused while intents wait, unless --force)", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			r, err := p.RemoveLane(cmd.Context(), args[0], force, actor())
			return answer(say(r, "removed lane %s with %d channel(s) and intents: %s", r.Lane, r.Channels, outbox.CountsText(r.Intents)), err)
		})
	remove.Flags().BoolVar(&force, "force", false, "remove it even with intents pending, sending or unresolved (they are lost)")
	history := opCmd(a, "history NAME", "Show who added, changed or reconciled the lane and its channels", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return answer(p.LaneActions(cmd.Context(), args[0]))
		})
	cmd.AddCommand(add, set, show, remove, history)
	return cmd
}

func newOutboxLanesCmd(a *app) *cobra.Command {
	return opCmd(a, "lanes", "List lanes with their guarantee, health, lease, gate and intents by state", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return answer(p.Lanes(cmd.Context()))
		})
}

func newOutboxChannelCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "channel", Short: "Say where a source's published pages are delivered"}
	var addRef, rmRef outbox.ChannelRef
	add := opCmd(a, "add --source NAME --lane LANE --target TARGET [--parent PARENT]",
		"Draft an intent on LANE for TARGET each time a page of the source is published", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			c, err := p.AddChannel(cmd.Context(), addRef, actor())
			msg := fmt.Sprintf("pages of %s will be delivered to %s on lane %s", c.Source, c.Target, c.Lane)
			if c.Note != "" {
				msg += "\nnote: " + c.Note
			}
			return answer(say(c, "%s", msg), err)
		})
	requiredFlags(add, map[string]*string{"source": &addRef.Source, "lane": &addRef.Lane, "target": &addRef.Target},
		"the %s (required; a target is a webhook target, a Mastodon timeline, owner/repo#number, …)")
	add.Flags().StringVar(&addRef.Parent, "parent", "", "what the writes answer (a status id to reply to)")
	list := opCmd(a, "list", "List channels", cobra.NoArgs,
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return answer(p.Channels(cmd.Context()))
		})
	remove := opCmd(a, "remove [ID] [--source NAME --lane LANE --target TARGET [--parent PARENT]]",
		"Stop delivering a source's pages to a channel (its intents stay on their lane; audited)", cobra.MaximumNArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			if len(args) == 1 {
				rmRef.ID = args[0]
			}
			c, err := p.RemoveChannel(cmd.Context(), rmRef, actor())
			return answer(say(c, "pages of %s are no longer delivered to %s on lane %s", c.Source, c.Target, c.Lane), err)
		})
	for name, p := range map[string]*string{"source": &rmRef.Source, "lane": &rmRef.Lane, "target": &rmRef.Target, "parent": &rmRef.Parent} {
		remove.Flags().StringVar(p, name, "", "the channel's "+name+" (instead of its ID)")
	}
	var tmpl string
	test := opCmd(a, "test ID [--template TEXT]", "Show what a channel would send for its source's latest page, sending nothing", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			return answer(p.TestChannel(cmd.Context(), args[0], tmpl))
		})
	test.Flags().StringVar(&tmpl, "template", "", "try this template instead of the channel's (Go text/template: {{.Title}}, {{.Summary}}, {{.Link}}, {{.Source}})")
	cmd.AddCommand(add, list, remove, test, newChannelTemplateCmd(a))
	return cmd
}

func newChannelTemplateCmd(a *app) *cobra.Command {
	var text, file string
	var reset bool
	cmd := opCmd(a, "template ID (--template TEXT | --file FILE | --default)",
		"Set the template a channel's messages are rendered with (audited), and show what it would send", cobra.ExactArgs(1),
		func(cmd *cobra.Command, p *pipeline.Pipeline, args []string) (texter, error) {
			if given := btoi(text != "") + btoi(file != "") + btoi(reset); given != 1 {
				return nil, tidemark.Invalidf("template", "", "give exactly one of --template TEXT, --file FILE or --default")
			}
			if file != "" {
				r, err := openInput(file)
				if err != nil {
					return nil, err
				}
				b, err := io.ReadAll(io.LimitReader(r, outbox.MaxTemplateBytes+1))
				r.Close()
				if err != nil {
					return nil, tidemark.Invalidf("--file", file, "%v", err)
				}
				text = string(b)
			}
			c, err := p.SetChannelTemplate(cmd.Context(), args[0], text, actor())
			if err != nil {
				return nil, err
			}
			t, err := p.TestChannel(cmd.Context(), c.ID, "")
			return said{c, t}, err
		})
	cmd.Long = `Set the template a channel's messages are rendered with: Go text/template
over the change's {{.Title}}, {{.Summary}}, {{.Link}}, {{.Source}} and {{.Page}},
fitted to the provider's markup and length limit. --default goes back to the
provider's own. A template that would fail on every change is refused and the
channel keeps the one it had. Try one first with 'outbox channel test ID
--template TEXT', which changes nothing.`
	cmd.Flags().StringVar(&text, "template", "", "the template")
	cmd.Flags().StringVar(&file, "file", "", "read the template from FILE (- for stdin)")
	cmd.Flags().BoolVar(&reset, "default", false, "use the provider's default template")
	jsonFlag(cmd, "the channel")
	return cmd
}
