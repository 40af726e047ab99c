package pipeline

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadReadsEveryOptionFromItsVariables(t *testing.T) {
	c, err := Load(env(map[string]string{
		"TIDEMARK_HOME": "/data", "TIDEMARK_OUTAGE_SPAN": "72h", "TIDEMARK_ALLOW_PRIVATE": "yes",
		"TIDEMARK_LOG_LEVEL": "debug", "OPENAI_API_KEY": "sk-fallback", "AWS_REGION": "eu-west-1",
		"TIDEMARK_S3_PATH_STYLE": "false",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Home != "/data" || c.OutageSpan != 72*time.Hour || !c.AllowPrivate || c.LogLevel != slog.LevelDebug ||
		c.OpenAI.APIKey != "sk-fallback" || c.S3.Region != "eu-west-1" || c.S3.PathStyle == nil || *c.S3.PathStyle {
		t.Fatalf("loaded %+v", c)
	}
	if c.DatabaseURL() != "sqlite:/data/tidemark.db" || c.StoreLocation() != "/data/wiki" {
		t.Fatalf("defaults under home: %s %s", c.DatabaseURL(), c.StoreLocation())
	}
	// The first variable set wins.
	c, _ = Load(env(map[string]string{"TIDEMARK_OPENAI_API_KEY": "sk-own", "OPENAI_API_KEY": "sk-fallback"}))
	if c.OpenAI.APIKey != "sk-own" {
		t.Fatalf("key %q", c.OpenAI.APIKey)
	}
}

func TestLoadRefusesWhatCannotBeUsed(t *testing.T) {
	for name, v := range map[string]string{
		"TIDEMARK_SWEEP_INTERVAL": "0s", "TIDEMARK_OUTAGE_SPAN": "-1h", "TIDEMARK_LOG_LEVEL": "loud",
		"TIDEMARK_ALLOW_PRIVATE": "maybe", "TIDEMARK_SUMMARIZER": "gpt", "TIDEMARK_S3_PATH_STYLE": "sometimes",
		"TIDEMARK_OPENAI_BASE_URL": "127.0.0.1:18201/v1",
	} {
		_, err := Load(env(map[string]string{name: v}))
		var inv *tidemark.InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v, want an invalid-input error naming the variable", name, v, err)
		}
	}
}

func TestEffectiveSaysWhereEachValueCameFromAndHidesSecrets(t *testing.T) {
	c, err := Load(env(map[string]string{"TIDEMARK_OPENAI_API_KEY": "sk-secret", "AWS_SECRET_ACCESS_KEY": "hush"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set("home", "/srv/tidemark", "--home"); err != nil {
		t.Fatal(err)
	}
	got := map[string]Setting{}
	for _, s := range c.Effective() {
		got[s.Name] = s
		if strings.Contains(s.Value, "sk-secret") || strings.Contains(s.Value, "hush") {
			t.Fatalf("a secret is shown: %+v", s)
		}
	}
	if len(got) != len(Options) {
		t.Fatalf("%d settings for %d options", len(got), len(Options))
	}
	if s := got["home"]; s.Value != "/srv/tidemark" || s.From != "--home" {
		t.Fatalf("home %+v", s)
	}
	if s := got["openai-api-key"]; s.From != "TIDEMARK_OPENAI_API_KEY" || !s.Secret || s.Value == "" {
		t.Fatalf("key %+v", s)
	}
	if s := got["sweep-interval"]; s.From != "default" || s.Value != "1m0s" {
		t.Fatalf("sweep %+v", s)
	}
	if s := got["db"]; s.Value != "sqlite:/srv/tidemark/tidemark.db" {
		t.Fatalf("db %+v", s)
	}
	if err := c.Set("db", "postgres://ops:hunter2@db.internal/tidemark", "TIDEMARK_DB"); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Effective() {
		if s.Name == "db" && (strings.Contains(s.Value, "hunter2") || !strings.Contains(s.Value, "db.internal")) {
			t.Fatalf("db shown as %q", s.Value)
		}
	}
}

// A database URL shows everything but its secrets: the connection's
// settings (sslmode, connect_timeout) are what an operator checks, and a
// password (in the userinfo, or as ?password=) is never shown.
func TestEffectiveShowsADatabaseURLsSettings(t *testing.T) {
	c := Defaults()
	if err := c.Set("db", "postgres://ops:hunter2@db.internal:5432/tidemark?sslmode=verify-full&connect_timeout=5&password=sesame42", "TIDEMARK_DB"); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Effective() {
		if s.Name != "db" {
			continue
		}
		for _, want := range []string{"db.internal:5432/tidemark", "sslmode=verify-full", "connect_timeout=5", "password="} {
			if !strings.Contains(s.Value, want) {
				t.Errorf("db shown as %q: it hides %q", s.Value, want)
			}
		}
		if strings.Contains(s.Value, "hunter2") || strings.Contains(s.Value, "sesame42") {
			t.Errorf("db shown as %q: a password is shown", s.Value)
		}
	}
}

func TestSettingsText(t *testing.T) {
	var b strings.Builder
	err := Settings{{Name: "db", Value: "sqlite:x", From: "--db", Env: []string{"TIDEMARK_DB"}, Flag: "--db"},
		{Name: "wiki-url", From: "default", Env: []string{"TIDEMARK_WIKI_URL"}}}.WriteText(&b)
	want := "SETTING   VALUE     FROM     READ FROM\ndb        sqlite:x  --db     --db, TIDEMARK_DB\nwiki-url  -         default  TIDEMARK_WIKI_URL\n"
	if err != nil || b.String() != want {
		t.Errorf("got:\n%q\nwant:\n%q (%v)", b.String(), want, err)
	}
}

func TestOptionFlag(t *testing.T) {
	cfg, err := Load(env(map[string]string{"TIDEMARK_HOME": "/h"}))
	if err != nil {
		t.Fatal(err)
	}
	var home Option
	for _, o := range Options {
		if o.Name == "home" {
			home = o
		}
	}
	if u := home.FlagUsage(); u != "data directory for the embedded default (env TIDEMARK_HOME)" {
		t.Errorf("usage %q", u)
	}
	f := cfg.Flag(home)
	if f.String() != "/h" {
		t.Errorf("default shown %q, want the environment's /h", f.String())
	}
	if err := f.Set("/x"); err != nil || cfg.Home != "/x" {
		t.Fatalf("set: %v, home %q", err, cfg.Home)
	}
	for _, s := range cfg.Effective() {
		if s.Name == "home" && s.From != "--home" {
			t.Errorf("home from %q, want --home", s.From)
		}
	}
	if (&OptionFlag{}).String() != "" {
		t.Error("a zero flag shows a default")
	}
}

func TestRanges(t *testing.T) {
	n, d := 0, time.Duration(0)
	ir, dr := &IntRange{P: &n, Min: 1, Max: 3}, &DurationRange{P: &d, Min: time.Second, Max: time.Minute}
	for _, bad := range []string{"0", "4", "x"} {
		if ir.Set(bad) == nil {
			t.Errorf("IntRange took %q", bad)
		}
	}
	for _, bad := range []string{"1ms", "2m", "x"} {
		if dr.Set(bad) == nil {
			t.Errorf("DurationRange took %q", bad)
		}
	}
	if ir.Set("3") != nil || n != 3 {
		t.Errorf("in range: %d %s", n, d)
	}
	if dr.Set("30s") != nil || d != 30*time.Second || dr.String() != "30s" || ir.String() != "3" {
		t.Errorf("in range: %d %s", n, d)
	}
}

// `tidemark config` shows no password of any URL it prints: the wiki's,
// the summarizer's endpoint, the store's, and a database given as a
// keyword/value string; nor does the refusal of a value it cannot use.
func TestEffectiveHidesEveryURLsPassword(t *testing.T) {
	c, err := Load(env(map[string]string{
		"TIDEMARK_OPENAI_BASE_URL": "http://u:SEKRET-oaiurl-150@127.0.0.1:18953/v1",
		"TIDEMARK_WIKI_URL":        "https://wiki.example/?k=SEKRET-wikiq-152",
		"TIDEMARK_STORE":           "s3://tidemark-test/p", // one with credentials is refused: TestStoreWithCredentialsIsRefused
		"TIDEMARK_S3_ENDPOINT":     "https://u:SEKRET-s3ep-141@s3.example",
		"TIDEMARK_DB":              "host=127.0.0.1 port=18960 user=tm password=SEKRET-dbpass-76 dbname=tm",
	}))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := c.Effective().WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "SEKRET") {
		t.Errorf("config shows a secret:\n%s", text.String())
	}
	for _, want := range []string{"wiki.example", "127.0.0.1:18953/v1", "tidemark-test/p", "port=18960"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("config hides %q:\n%s", want, text.String())
		}
	}
	_, err = Load(env(map[string]string{"TIDEMARK_OPENAI_BASE_URL": "ftp://u:SEKRET-oaiurl-153@127.0.0.1/v1"}))
	if err == nil || strings.Contains(err.Error(), "SEKRET") {
		t.Errorf("refusing a base URL: %v", err)
	}
}

// The wiki's address is public (it is written into the wiki's feeds and
// every outbound post's link), so one carrying a credential is refused,
// without repeating it.
func TestWikiURLCarriesNoCredential(t *testing.T) {
	for _, v := range []string{"https://u:SEKRET-wikiurl-151@wiki.example/", "https://wiki.example/?token=SEKRET-wikiq-152"} {
		_, err := Load(env(map[string]string{"TIDEMARK_WIKI_URL": v}))
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "TIDEMARK_WIKI_URL") || strings.Contains(err.Error(), "SEKRET") {
			t.Errorf("%s: %v; want a refusal naming the variable, without the credential", v, err)
		}
	}
	if _, err := Load(env(map[string]string{"TIDEMARK_WIKI_URL": "https://wiki.example/docs?lang=en"})); err != nil {
		t.Errorf("a wiki URL without credentials: %v", err)
	}
}

// A password url.Parse refuses unencoded (a #, ?, /, space or " in it),
// which pgx connects with, is hidden all the same: in the database URL,
// the store's, the S3 endpoint's and the summarizer's, and in the refusal
// of a value that cannot be used.
func TestEffectiveHidesPasswordsURLParseRefuses(t *testing.T) {
	for _, pw := range []string{"SEKRET#H161", "SEKRET?Q161", "SEKRET/SL161", "SEKRET SP161", `SEKRET"DQ161`} {
		c, err := Load(env(map[string]string{
			"TIDEMARK_DB":              "postgres://secrole:" + pw + "@127.0.0.1:18961/tm?sslmode=disable",
			"TIDEMARK_STORE":           "s3://AKIDX:" + pw + "@tidemark-test/p",
			"TIDEMARK_S3_ENDPOINT":     "https://u:" + pw + "@s3.example",
			"TIDEMARK_OPENAI_BASE_URL": "http://u:" + pw + "@127.0.0.1:18953/v1",
		}))
		if err != nil {
			if strings.Contains(err.Error(), "SEKRET") || strings.Contains(err.Error(), "161") {
				t.Errorf("password %q: refused with %v", pw, err)
			}
			continue
		}
		var text strings.Builder
		if err := c.Effective().WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text.String(), "SEKRET") || strings.Contains(text.String(), "161") {
			t.Errorf("password %q: config shows it:\n%s", pw, text.String())
		}
		for _, want := range []string{"127.0.0.1:18961/tm?sslmode=disable", "s3.example"} {
			if !strings.Contains(text.String(), want) {
				t.Errorf("password %q: config hides %q:\n%s", pw, want, text.String())
			}
		}
	}
	for _, v := range []string{`http://u:SEKRET"DQ162@127.0.0.1/v1`, "http://u:SEKRET/SL162@127.0.0.1/v1", "ftp://u:SEKRET#H162@127.0.0.1/v1"} {
		_, err := Load(env(map[string]string{"TIDEMARK_OPENAI_BASE_URL": v}))
		if err == nil {
			continue // it is checked where the summarizer is built
		}
		if strings.Contains(err.Error(), "SEKRET") || strings.Contains(err.Error(), "162") {
			t.Errorf("refusing %q: %v", v, err)
		}
	}
	for _, v := range []string{"https://u:SEKRET#H163@wiki.example/", "https://u:SEKRET/SL163@wiki.example/"} {
		_, err := Load(env(map[string]string{"TIDEMARK_WIKI_URL": v}))
		if !errors.Is(err, tidemark.ErrInvalid) || strings.Contains(err.Error(), "SEKRET") || strings.Contains(err.Error(), "163") {
			t.Errorf("wiki URL %q: %v; want a refusal without the password", v, err)
		}
	}
}
