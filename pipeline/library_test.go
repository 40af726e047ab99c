package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

// endingCtx is a context that ends when end is called, with err as its
// error: a caller's deadline that passes when the test says so, without
// waiting for a clock.
type endingCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
	err  error
}

func newEndingCtx(err error) *endingCtx {
	return &endingCtx{Context: context.Background(), done: make(chan struct{}), err: err}
}

func (c *endingCtx) end()                  { c.once.Do(func() { close(c.done) }) }
func (c *endingCtx) Done() <-chan struct{} { return c.done }
func (c *endingCtx) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// hangingFeed is a feed server that is down (503) until armed, and then
// never answers; the channel arm returns is closed when the next request
// arrives.
func hangingFeed(t *testing.T) (url string, arm func() <-chan struct{}) {
	t.Helper()
	var mu sync.Mutex
	var next chan struct{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		armed := next
		next = nil
		mu.Unlock()
		if armed == nil {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		close(armed)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/feed.xml", func() <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		next = make(chan struct{})
		return next
	}
}

// A caller whose context ends while RunSource's fetch is in flight gets
// its context's error back, as from RunOnce: not a SourceFailedError (the
// source did not fail), and the recorded run says what happened, not a
// shutdown that did not happen. No budget is spent.
func TestRunSourceCutShortByItsCallerReturnsTheContextsError(t *testing.T) {
	for _, want := range []error{context.DeadlineExceeded, context.Canceled} {
		t.Run(want.Error(), func(t *testing.T) {
			p := open(t, t.TempDir(), nil)
			url, arm := hangingFeed(t)
			ns := p.NewSource("slow", url)
			ns.Kind, ns.AllowPrivate = "feed", true
			if _, err := p.AddSource(context.Background(), ns); err != nil {
				t.Fatal(err)
			}
			ctx, started := newEndingCtx(want), arm()
			go func() { <-started; ctx.end() }()
			reports, err := p.RunSource(ctx, "slow", 1, nil)
			if !errors.Is(err, want) {
				t.Fatalf("RunSource cut short: %v; want it to match %v", err, want)
			}
			var sf *SourceFailedError
			if errors.As(err, &sf) || errors.Is(err, tidemark.ErrUnavailable) {
				t.Fatalf("RunSource cut short: %v is a failed source; the caller stopped it", err)
			}
			if len(reports) != 1 || reports[0].Outcome != tidemark.OutcomeError {
				t.Fatalf("reports %+v: want the one run, recorded as cut short", reports)
			}
			if want == context.DeadlineExceeded && strings.Contains(reports[0].Error, "shutting down") {
				t.Errorf("run error %q: the caller's deadline passed, nothing shut down", reports[0].Error)
			}
			srcs, err := p.Sources(context.Background())
			if err != nil || len(srcs) != 1 || srcs[0].WindowAttempts != 0 {
				t.Fatalf("sources %+v %v: want no budget spent", srcs, err)
			}
		})
	}
}

var _ = time.Second

// Close on the nil *Pipeline a failed Open returns is harmless: a
// deferred Close written before the error is checked does not panic.
func TestCloseOfAFailedOpenIsNil(t *testing.T) {
	cfg := Defaults()
	cfg.Home, cfg.Database = t.TempDir(), "mysql://nope"
	p, err := Open(context.Background(), cfg)
	if err == nil || p != nil {
		t.Fatalf("Open of an unknown database: %v, %v; want a refusal", p, err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close of a nil pipeline: %v", err)
	}
}

// The README's library program is the one example_test.go compiles
// (libraryProgram), line for line, so the two cannot drift apart.
func TestTheREADMEsLibraryProgramIsCompiled(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Using tidemark as a library\n")
	if !ok {
		t.Fatal("README has no library section")
	}
	_, block, ok := strings.Cut(section, "```go\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the library section has no go block")
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(example), "func libraryProgram(ctx context.Context) error {\n")
	body, _, ok2 = strings.Cut(body, "\n}\n")
	if !ok || !ok2 {
		t.Fatal("example_test.go has no libraryProgram")
	}
	norm := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.Join(strings.Fields(l), " "); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	if got, want := norm(block), norm(body); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("README's library program:\n%s\n\nexample_test.go's libraryProgram:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// With no Logger, Open logs as the CLI does: text on stderr at LogLevel
// (TIDEMARK_LOG_LEVEL through Load), so what the docs say is logged (a
// warning with no Config.Warn) is seen.
func TestOpenWithNoLoggerLogsAtLogLevel(t *testing.T) {
	ctx := context.Background()
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		cfg := Defaults()
		cfg.Home, cfg.LogLevel = t.TempDir(), level
		p, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			if got := p.Logger().Enabled(ctx, l); got != (l >= level) {
				t.Errorf("log level %v: logs %v: %v, want %v", level, l, got, l >= level)
			}
		}
		p.Close()
	}
}

// A Config built in code is checked by Open as Load checks the
// environment's: a value Load would refuse is refused before anything is
// opened, naming the option, not found at the first publish.
func TestOpenChecksAConfigBuiltInCode(t *testing.T) {
	ctx := context.Background()
	for _, bad := range []func(*Config){
		func(c *Config) { c.Summarizer = "nonesuch" },
		func(c *Config) { c.LogLevel = slog.Level(3) },
		func(c *Config) { c.SweepInterval = -time.Minute },
		func(c *Config) { c.WikiURL = "https://user:secret@wiki.example" },
	} {
		cfg := Defaults()
		cfg.Home = t.TempDir()
		bad(&cfg)
		p, err := Open(ctx, cfg)
		if !errors.Is(err, tidemark.ErrInvalid) {
			p.Close()
			t.Errorf("Open of a bad Config: %v; want it refused as invalid", err)
		}
	}
	// Zero values a Config built from nothing has are not refused.
	p, err := Open(ctx, Config{Home: t.TempDir()})
	if err != nil {
		t.Fatalf("Open of a zero Config with a Home: %v", err)
	}
	p.Close()
}

// DeliverOnce and DeliverLoop refuse a lease RunOnce would refuse (a
// negative one, or one under MinLease) instead of reading it as the
// default; 0 is the default (a minute).
func TestDeliveriesRefuseALeaseOutOfBounds(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	for _, ttl := range []time.Duration{-time.Minute, time.Millisecond} {
		if _, err := p.DeliverOnce(ctx, "", ttl); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("DeliverOnce with ttl %v: %v; want invalid", ttl, err)
		}
		// Cancelled, so that a loop that took the lease would return.
		stopped, cancel := context.WithCancel(ctx)
		cancel()
		if err := p.DeliverLoop(stopped, "", ttl); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("DeliverLoop with ttl %v: %v; want invalid", ttl, err)
		}
	}
	if _, err := p.DeliverOnce(ctx, "", 0); err != nil {
		t.Errorf("DeliverOnce with ttl 0 (the default): %v", err)
	}
}

// After Close, every method that reads or writes the database or the
// store says ErrClosed (not the database's own "closed"), and Objects
// opens no store that nobody would close.
func TestAClosedPipelineSaysErrClosed(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"Sources":     func() error { _, err := p.Sources(ctx); return err },
		"Events":      func() error { _, err := p.Events(ctx, ingest.EventFilter{}); return err },
		"Runs":        func() error { _, err := p.Runs(ctx, ingest.RunFilter{}); return err },
		"AddSource":   func() error { _, err := p.AddSource(ctx, p.NewSource("notes", t.TempDir())); return err },
		"Lanes":       func() error { _, err := p.Lanes(ctx); return err },
		"Collections": func() error { _, err := p.Collections(ctx); return err },
		"Tokens":      func() error { _, err := p.Tokens(ctx); return err },
		"Objects":     func() error { _, err := p.Objects(); return err },
		"Publish":     func() error { _, err := p.PublishAll(ctx, nil, nil); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v; want ErrClosed", name, err)
		}
	}
	p.objsMu.Lock()
	defer p.objsMu.Unlock()
	if p.objs != nil {
		t.Errorf("Objects after Close opened a store: %T", p.objs)
	}
}
