package pipeline

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/fetch/httpx"
	"github.com/tidemark/tidemark/ids"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore/stores"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/redact"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/summarize/openai"
	"github.com/tidemark/tidemark/summarize/summarizers"
)

// Config is everything a pipeline is opened with. Options lists every
// setting that comes from the environment or a command-line flag, in one
// place: Load reads them, and `tidemark config` prints them.
type Config struct {
	// Home holds the embedded default: the SQLite database, the wiki's
	// directory and git mirrors.
	Home string
	// Database is sqlite:PATH, postgres://… or a PostgreSQL keyword/value
	// string (host=… dbname=…); empty: sqlite:Home/tidemark.db.
	Database string
	// Store is a directory or s3://BUCKET[/PREFIX]; empty: Home/wiki.
	Store string
	// Holder is this worker's identity for claims; empty: host:pid. Each
	// operation that claims works under it, or under Holder#n while
	// others run beside it in this process (see Pipeline.Holder).
	Holder string
	// LogLevel is the least level logged when Logger is nil.
	LogLevel slog.Level
	// AllowPrivate is the default of a new source's own setting (whether
	// its fetches may reach private addresses), as Pipeline.NewSource,
	// `source add`, OPML import and --track give it; AddSource stores the
	// setting the NewSource it is given has. A source's fetches obey its
	// own setting, never this.
	AllowPrivate bool
	// OutageSpan is how long a window keeps failing before it may go
	// terminal once its budget is spent (0: as soon as it is spent).
	OutageSpan time.Duration
	// SweepInterval is how often the daemon publishes and sweeps.
	SweepInterval time.Duration
	// WikiURL is the wiki's public address, for absolute links in feeds
	// and outbound posts.
	WikiURL    string
	Summarizer string
	OpenAI     summarizers.OpenAI
	S3         stores.S3
	// ServeAddr is where `serve` listens unless told otherwise.
	ServeAddr string
	// MetricsAddr is where the daemon serves /metrics ("": nowhere):
	// `tidemark run` serves it with site.ServeMetrics, and so does a
	// program embedding tidemark, beside Run (Run does not serve it).
	MetricsAddr string

	// What a program sets in code, not in the environment: all optional.
	Clock clock.Clock
	IDs   ids.Source
	// Logger is where the pipeline logs. Nil: text on stderr at LogLevel,
	// as the CLI logs.
	Logger *slog.Logger
	// Warn receives what a check could not decide but did not refuse (a
	// remote that cannot be reached now is added as given). Nil: logged.
	Warn func(msg string)
	// Observer, if set, is told every publishing round and sweep this
	// process runs (the daemon's loop, and Publish and Sweep, which the
	// console and the API call): what only this process knows (the
	// database records the rest). Pipeline.AddObserver adds more.
	Observer PublishObserver

	// origin says where each option's value came from (a flag, an
	// environment variable); absent: its default.
	origin map[string]string
}

// PublishObserver counts a process's publishing rounds and sweeps (the
// web package's PipelineMetrics is one). It is called from the goroutine
// that ran the round, so it must be safe for concurrent use.
type PublishObserver interface {
	ObservePublish(publish.PublishReport)
	ObserveSweep(time.Duration, publish.SweepReport)
}

// DatabaseURL is Database, or the embedded default under Home.
func (c Config) DatabaseURL() string {
	if c.Database != "" {
		return c.Database
	}
	return "sqlite:" + filepath.Join(c.Home, "tidemark.db")
}

// StoreLocation is Store, or the embedded default under Home.
func (c Config) StoreLocation() string {
	if c.Store != "" {
		return c.Store
	}
	return filepath.Join(c.Home, "wiki")
}

// Option is one setting: its name, the flag and environment variables it
// is read from (the first variable set wins; a flag wins over them all),
// its default and what it means.
type Option struct {
	Name string
	// Flag is the global command-line flag, if the setting has one.
	Flag    string
	Env     []string
	Default string
	Usage   string
	// Secret values are never printed.
	Secret bool
	// check, when set, refuses a value the way the code that uses it
	// would (naming from, showing the value its own way), so that every
	// command refuses it before anything runs.
	check func(from, v string) error
	set   func(c *Config, v string) error
	get   func(c *Config) string
}

// FlagUsage is the option's flag help: what it means and the variables
// it is read from.
func (o Option) FlagUsage() string {
	if len(o.Env) == 0 {
		return o.Usage
	}
	return o.Usage + " (env " + strings.Join(o.Env, ", ") + ")"
}

// Flag is option o of c as a command-line flag's value (it has the methods
// of flag.Value and pflag.Value): setting it records the flag as where the
// value came from, and the default it shows is the value c has from the
// environment or the option's default.
func (c *Config) Flag(o Option) *OptionFlag { return &OptionFlag{c, o} }

// OptionFlag is an option's flag; see Config.Flag.
type OptionFlag struct {
	c *Config
	o Option
}

func (f *OptionFlag) String() string {
	if f.c == nil {
		return ""
	}
	for _, s := range f.c.Effective() {
		if s.Name == f.o.Name {
			return s.Value
		}
	}
	return ""
}
func (f *OptionFlag) Type() string       { return "string" }
func (f *OptionFlag) Set(v string) error { return f.c.Set(f.o.Name, v, "--"+f.o.Flag) }

func str(p func(*Config) *string) (func(*Config, string) error, func(*Config) string) {
	return func(c *Config, v string) error { *p(c) = v; return nil }, func(c *Config) string { return *p(c) }
}

func duration(p func(*Config) *time.Duration, min time.Duration, want string) (func(*Config, string) error, func(*Config) string) {
	return func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < min {
				return fmt.Errorf("want %s", want)
			}
			*p(c) = d
			return nil
		}, func(c *Config) string {
			return p(c).String()
		}
}

// checked is set refusing, before it sets anything, a value check refuses.
func checked(set func(*Config, string) error, check func(string) error) func(*Config, string) error {
	return func(c *Config, v string) error {
		if err := check(v); err != nil {
			return err
		}
		return set(c, v)
	}
}

func boolean(p func(*Config) *bool) (func(*Config, string) error, func(*Config) string) {
	return func(c *Config, v string) error {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "1", "true", "yes", "on":
				*p(c) = true
			case "0", "false", "no", "off", "":
				*p(c) = false
			default:
				return fmt.Errorf("want true or false")
			}
			return nil
		}, func(c *Config) string {
			return strconv.FormatBool(*p(c))
		}
}

func option(name, flag string, env []string, def, usage string, secret bool, set func(*Config, string) error, get func(*Config) string) Option {
	return Option{Name: name, Flag: flag, Env: env, Default: def, Usage: usage, Secret: secret, set: set, get: get}
}

// checkedBy is o refusing what check refuses; an empty value, which
// means the option's default, is not checked.
func checkedBy(check func(from, v string) error, o Option) Option {
	o.check = func(from, v string) error {
		if v == "" {
			return nil
		}
		return check(from, v)
	}
	return o
}

// Options is every setting, in the order `tidemark config` shows them.
var Options = func() []Option {
	var os []Option
	add := func(o Option) { os = append(os, o) }
	s, g := str(func(c *Config) *string { return &c.Home })
	add(option("home", "home", []string{"TIDEMARK_HOME"}, ".tidemark", "data directory for the embedded default", false, s, g))
	s, g = str(func(c *Config) *string { return &c.Database })
	add(checkedBy(sqlstore.CheckURL, option("db", "db", []string{"TIDEMARK_DB"}, "", "database: sqlite:PATH, postgres://… or host=… dbname=…; unset, sqlite:HOME/tidemark.db", false, s, g)))
	s, g = str(func(c *Config) *string { return &c.Store })
	add(checkedBy(stores.Check, option("store", "store", []string{"TIDEMARK_STORE"}, "", "object store: a directory or s3://bucket/prefix; unset, HOME/wiki", false, s, g)))
	s, g = str(func(c *Config) *string { return &c.Holder })
	add(option("holder", "holder", []string{"TIDEMARK_HOLDER"}, "", "this worker's identity for claims (empty: host:pid)", false, s, g))
	add(option("log-level", "log-level", []string{"TIDEMARK_LOG_LEVEL"}, "warn", "debug, info, warn or error", false,
		func(c *Config, v string) error {
			switch strings.ToLower(v) {
			case "debug":
				c.LogLevel = slog.LevelDebug
			case "info":
				c.LogLevel = slog.LevelInfo
			case "warn", "warning":
				c.LogLevel = slog.LevelWarn
			case "error":
				c.LogLevel = slog.LevelError
			default:
				return fmt.Errorf("want debug, info, warn or error")
			}
			return nil
		}, func(c *Config) string { return strings.ToLower(c.LogLevel.String()) }))
	bs, bg := boolean(func(c *Config) *bool { return &c.AllowPrivate })
	add(option("allow-private", "", []string{httpx.AllowPrivateEnv}, "false",
		"the default for new sources: may they reach private, loopback and link-local addresses (each source keeps its own setting)", false, bs, bg))
	ds, dg := duration(func(c *Config) *time.Duration { return &c.OutageSpan }, 0, "a duration such as 24h or 72h (0: terminal as soon as the budget is spent)")
	add(option("outage-span", "", []string{"TIDEMARK_OUTAGE_SPAN"}, ingest.DefaultRetryPolicy().Span.String(),
		"how long a source keeps failing before its window may go terminal", false, ds, dg))
	ds, dg = duration(func(c *Config) *time.Duration { return &c.SweepInterval }, time.Nanosecond, "a positive duration such as 1m")
	add(option("sweep-interval", "", []string{"TIDEMARK_SWEEP_INTERVAL"}, "1m0s", "how often the daemon publishes and sweeps the wiki", false, ds, dg))
	s, g = str(func(c *Config) *string { return &c.WikiURL })
	s = checked(s, func(v string) error {
		// The address is public: written into the wiki's feeds and every
		// outbound post's link.
		if len(redact.Credentials(v)) > 0 {
			return fmt.Errorf("%s", wikiURLCredential)
		}
		return nil
	})
	add(option("wiki-url", "", []string{"TIDEMARK_WIKI_URL"}, "", "the wiki's public address, for absolute links in feeds and posts", false, s, g))
	add(option("summarizer", "", []string{"TIDEMARK_SUMMARIZER"}, summarizers.Default, "extractive or openai", false,
		func(c *Config, v string) error {
			for _, n := range summarizers.Names {
				if v == n {
					c.Summarizer = v
					return nil
				}
			}
			return fmt.Errorf("want %s", strings.Join(summarizers.Names, " or "))
		}, func(c *Config) string { return c.Summarizer }))
	s, g = str(func(c *Config) *string { return &c.OpenAI.BaseURL })
	s = checked(s, func(v string) error {
		if v == "" {
			return nil // the default
		}
		return openai.CheckBaseURL(v)
	})
	add(option("openai-base-url", "", []string{"TIDEMARK_OPENAI_BASE_URL"}, "https://api.openai.com/v1", "the openai summarizer's endpoint (any chat-completions API)", false, s, g))
	s, g = str(func(c *Config) *string { return &c.OpenAI.APIKey })
	add(option("openai-api-key", "", []string{"TIDEMARK_OPENAI_API_KEY", "OPENAI_API_KEY"}, "", "the openai summarizer's API key", true, s, g))
	s, g = str(func(c *Config) *string { return &c.OpenAI.Model })
	add(option("openai-model", "", []string{"TIDEMARK_OPENAI_MODEL"}, "", "the openai summarizer's model", false, s, g))
	s, g = str(func(c *Config) *string { return &c.OpenAI.PromptVersion })
	add(option("openai-prompt-version", "", []string{"TIDEMARK_OPENAI_PROMPT_VERSION"}, "", "names the prompt; change it whenever the prompt changes", false, s, g))
	s, g = str(func(c *Config) *string { return &c.OpenAI.PromptFile })
	add(option("openai-prompt-file", "", []string{"TIDEMARK_OPENAI_PROMPT_FILE"}, "", "a file holding the openai summarizer's prompt", false, s, g))
	s, g = str(func(c *Config) *string { return &c.S3.Endpoint })
	add(option("s3-endpoint", "", []string{"TIDEMARK_S3_ENDPOINT"}, "", "an S3-compatible server's URL (default: AWS)", false, s, g))
	add(option("s3-path-style", "", []string{"TIDEMARK_S3_PATH_STYLE"}, "", "address the bucket in the path (default: when an endpoint is set)", false,
		func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("want true or false")
			}
			c.S3.PathStyle = &b
			return nil
		}, func(c *Config) string {
			if c.S3.PathStyle == nil {
				return ""
			}
			return strconv.FormatBool(*c.S3.PathStyle)
		}))
	s, g = str(func(c *Config) *string { return &c.S3.Region })
	add(option("s3-region", "", []string{"TIDEMARK_S3_REGION", "AWS_REGION"}, "us-east-1", "the S3 region", false, s, g))
	s, g = str(func(c *Config) *string { return &c.S3.AccessKey })
	add(option("s3-access-key", "", []string{"AWS_ACCESS_KEY_ID"}, "", "the S3 access key", false, s, g))
	s, g = str(func(c *Config) *string { return &c.S3.SecretKey })
	add(option("s3-secret-key", "", []string{"AWS_SECRET_ACCESS_KEY"}, "", "the S3 secret key", true, s, g))
	s, g = str(func(c *Config) *string { return &c.MetricsAddr })
	add(option("metrics-addr", "", []string{"TIDEMARK_METRICS_ADDR"}, "", "where the daemon (`run`) serves /metrics, with what only it counts (empty: nowhere)", false, s, g))
	s, g = str(func(c *Config) *string { return &c.ServeAddr })
	add(option("serve-addr", "", []string{"TIDEMARK_SERVE_ADDR"}, "127.0.0.1:8080", "where `serve` listens", false, s, g))
	return os
}()

// wikiURLCredential is the refusal of a wiki URL that carries a
// credential, with what to do about it and about what an earlier release
// published with it: the feeds are rewritten by the next publishing pass
// once the URL changed, but an intent's body was frozen when it was
// drafted, so the intents drafted with it are the operator's to find and
// retire (they are never rewritten behind their back).
const wikiURLCredential = "the wiki's public address carries no credentials: it is written into the wiki's feeds and every post's link; " +
	"drop the credential from TIDEMARK_WIKI_URL (the next publishing pass, or `tidemark publish sweep`, rewrites the feeds without it). " +
	"Intents drafted while it carried one hold it in their body and are sent as drafted: list them with " +
	"`tidemark outbox intents list --state pending --json` (each one's body) and retire those that carry it with " +
	"`tidemark outbox intents retire ID --reason TEXT`"

// Defaults is the configuration with every option at its default.
func Defaults() Config {
	var c Config
	for _, o := range Options {
		if o.Default != "" {
			if err := o.set(&c, o.Default); err != nil {
				panic(fmt.Sprintf("option %s: bad default %q: %v", o.Name, o.Default, err))
			}
		}
	}
	return c
}

// Load reads every option from the environment (getenv, e.g. os.Getenv)
// over its default. A value that cannot be used is refused, naming the
// variable and what it wants: configuration is checked once, at start.
func Load(getenv func(string) string) (Config, error) {
	c := Defaults()
	for _, o := range Options {
		for _, name := range o.Env {
			v := getenv(name)
			if v == "" {
				continue
			}
			if err := c.Set(o.Name, v, name); err != nil {
				return c, err
			}
			break
		}
	}
	return c, nil
}

// Check refuses a Config whose options Load would refuse, naming the
// option and what it wants: Open checks a Config built in code this way,
// so a bad value is refused at start, not found at first use. A value a
// zero Config has is left to its default where it is used.
func (c Config) Check() error {
	var zero Config
	for _, o := range Options {
		v := o.get(&c)
		if v == o.get(&zero) {
			continue
		}
		probe := c
		if err := o.set(&probe, v); err != nil {
			shown := ""
			if !o.Secret {
				shown = o.shown(v)
			}
			return tidemark.Invalidf(o.Name, shown, "%v", err)
		}
	}
	return nil
}

// Set sets the option called name from v, recording from (a flag or a
// variable) as where it came from; a value that cannot be used is refused
// as invalid input naming from.
func (c *Config) Set(name, v, from string) error {
	for _, o := range Options {
		if o.Name != name {
			continue
		}
		if o.check != nil {
			if err := o.check(from, v); err != nil {
				return err
			}
		}
		if err := o.set(c, v); err != nil {
			shown := ""
			if !o.Secret {
				shown = o.shown(v)
			}
			return tidemark.Invalidf(from, shown, "%v", err)
		}
		if c.origin == nil {
			c.origin = map[string]string{}
		}
		c.origin[name] = from
		return nil
	}
	return tidemark.Invalidf("option", name, "no such option")
}

// shown is a value of the option as `tidemark config` and the refusal of
// a value show it: a URL (the database's, the store's, the wiki's, an
// endpoint) without its password, in whatever form it takes
// (redact.DatabaseURL, redact.URL), and the value of a secret option not
// at all.
func (o Option) shown(v string) string {
	switch {
	case o.Secret:
		return ""
	case o.Name == "db":
		// A database URL's settings (sslmode, connect_timeout) are shown.
		return redact.DatabaseURL(v)
	default:
		return redact.URL(v, false)
	}
}

// From names where option name's value came from (the flag or the
// variable that set it), or else flag: what a refusal of the value names.
func (c Config) From(name, flag string) string {
	if from, ok := c.origin[name]; ok {
		return from
	}
	return flag
}

// Setting is one option's effective value, as `tidemark config` shows it.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// From is the flag or variable the value came from, or "default".
	From   string `json:"from"`
	Secret bool   `json:"secret,omitempty"`
	Usage  string `json:"usage"`
	// Env lists the variables the option is read from.
	Env  []string `json:"env,omitempty"`
	Flag string   `json:"flag,omitempty"`
}

// Settings lists options' effective values.
type Settings []Setting

// WriteText writes a table of the settings: value, where it came from and
// what it is read from.
func (l Settings) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tFROM\tREAD FROM")
	for _, s := range l {
		from := s.Env
		if s.Flag != "" {
			from = append([]string{s.Flag}, from...)
		}
		value := s.Value
		if value == "" {
			value = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, value, s.From, strings.Join(from, ", "))
	}
	return tw.Flush()
}

// Effective lists every option's value and where it came from, secrets
// shown only as set or not, and a database URL without its password.
func (c Config) Effective() Settings {
	var out Settings
	for _, o := range Options {
		s := Setting{Name: o.Name, Value: o.get(&c), From: "default", Secret: o.Secret, Usage: o.Usage, Env: o.Env}
		if o.Flag != "" {
			s.Flag = "--" + o.Flag
		}
		if from, ok := c.origin[o.Name]; ok {
			s.From = from
		}
		switch o.Name {
		case "db":
			s.Value = c.DatabaseURL()
		case "store":
			s.Value = c.StoreLocation()
		}
		if o.Secret && s.Value != "" {
			s.Value = "••• (set)"
		} else {
			s.Value = o.shown(s.Value)
		}
		out = append(out, s)
	}
	return out
}

// ConfigOption returns the option that environment variable name
// configures (false: none). A variable of tidemark's own configuration (its
// database URL, its LLM key, its S3 keys, …) is never a lane's secret:
// a lane that read one would send it to its remote.
func ConfigOption(name string) (Option, bool) {
	for _, o := range Options {
		if slices.Contains(o.Env, name) {
			return o, true
		}
	}
	return Option{}, false
}
