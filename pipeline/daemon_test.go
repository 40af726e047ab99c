package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/summarize/summarizers"
)

// fakeSleep replaces the daemon's waits: each wait is recorded and returns
// at once; onWait (if set) sees the waits so far and may cancel.
func fakeSleep(t *testing.T, onWait func(waits []time.Duration)) *[]time.Duration {
	t.Helper()
	var waits []time.Duration
	old := sleep
	sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		if onWait != nil {
			onWait(waits)
		}
		return ctx.Err()
	}
	t.Cleanup(func() { sleep = old })
	return &waits
}

func TestBackoffDoublesUpToItsCap(t *testing.T) {
	b := &backoff{Min: time.Second, Max: 10 * time.Second}
	var got []time.Duration
	for range 6 {
		got = append(got, b.Fail())
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	if !slices.Equal(got, want) {
		t.Fatalf("pauses %v, want %v", got, want)
	}
	b.Reset()
	if d := b.Fail(); d != time.Second {
		t.Fatalf("after a success the pause is %s, want %s", d, time.Second)
	}
}

// A loop that fails in a way retrying cannot fix stops the daemon at once,
// and its error (not the cancellation it caused) is the exit status.
func TestDaemonStopsWhenALoopFails(t *testing.T) {
	p := &Pipeline{log: slog.New(slog.DiscardHandler)}
	mainStopped := make(chan struct{})
	scheduler := func(ctx context.Context) error {
		<-ctx.Done()
		close(mainStopped)
		return ctx.Err()
	}
	waiting := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	failing := func(ctx context.Context) error {
		return tidemark.Invalidf("setting", "x", "broken")
	}
	err := p.group(context.Background(), scheduler, []func(context.Context) error{waiting, failing, waiting})
	select {
	case <-mainStopped:
	default:
		t.Fatal("the scheduler was not stopped")
	}
	if code := tidemark.ExitCode(err); code != tidemark.ExitInvalid {
		t.Fatalf("err %v: exit %d, want %d", err, code, tidemark.ExitInvalid)
	}
	// An interrupt is not a failure.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.group(ctx, waiting, []func(context.Context) error{waiting}); err != nil {
		t.Fatalf("after an interrupt: %v", err)
	}
}

// The delivery loop outlives a database that is away: it logs, waits a
// growing pause, and picks up when the database is back.
func TestDeliverLoopRetriesWithBackoff(t *testing.T) {
	home := t.TempDir()
	cfg := Defaults()
	cfg.Home = home
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.db.Close() // every query fails from here on
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waits := fakeSleep(t, func(waits []time.Duration) {
		switch len(waits) {
		case 11: // the database is back
			db, err := sqlstore.Open(context.Background(), "sqlite:"+filepath.Join(home, "tidemark.db"), sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p.db = db
		case 12:
			cancel()
		}
	})
	if err := p.DeliverLoop(ctx, "", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("loop ended with %v; want it to run until cancelled", err)
	}
	defer p.Close()
	s := time.Second
	want := []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 64 * s, 128 * s, 256 * s, 5 * time.Minute, 5 * time.Minute}
	if got := (*waits)[:11]; !slices.Equal(got, want) {
		t.Fatalf("pauses %v, want %v", got, want)
	}
	if last := (*waits)[11]; last > 5*time.Second || last <= 0 {
		t.Fatalf("after the database came back the loop waited %s, want its poll", last)
	}
}

func TestRetryStartGivesUpOnlyOnBadConfiguration(t *testing.T) {
	p := &Pipeline{log: slog.New(slog.DiscardHandler)}
	waits := fakeSleep(t, nil)
	calls := 0
	v, err := retryStart(context.Background(), p, "open", func() (int, error) {
		calls++
		if calls < 4 {
			return 0, tidemark.ErrUnavailable
		}
		return 7, nil
	})
	if err != nil || v != 7 || len(*waits) != 3 {
		t.Fatalf("v %d err %v after %d waits", v, err, len(*waits))
	}
	_, err = retryStart(context.Background(), p, "open", func() (int, error) {
		return 0, tidemark.Invalidf("setting", "x", "broken")
	})
	if !errors.Is(err, tidemark.ErrInvalid) || len(*waits) != 3 {
		t.Fatalf("bad configuration: %v after %d waits", err, len(*waits))
	}
}

// A store that refuses our credentials stops the daemon, at start and in
// the middle of its run: the configuration is wrong, and no wait fixes it.
func TestDaemonStopsWhenTheStoreRefusesCredentials(t *testing.T) {
	cfg := Defaults()
	cfg.Home = t.TempDir()
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	objs := mem.New()
	p.objs = objs
	refuse := func(context.Context, string) error { return fmt.Errorf("get: %w", objstore.ErrDenied) }
	objs.SetHooks(mem.Hooks{BeforeGet: refuse})
	waits := fakeSleep(t, nil)
	if err := p.Run(context.Background(), RunOptions{}); !errors.Is(err, objstore.ErrDenied) || len(*waits) != 0 {
		t.Fatalf("daemon start: %v after %d waits, want the refusal at once", err, len(*waits))
	}
	// Bound while the store took our credentials, then refused mid-run.
	objs.SetHooks(mem.Hooks{})
	if _, err := p.BindStore(context.Background()); err != nil {
		t.Fatal(err)
	}
	objs.SetHooks(mem.Hooks{BeforeGet: refuse})
	if err := p.publishLoop(context.Background()); !errors.Is(err, objstore.ErrDenied) || len(*waits) != 0 {
		t.Fatalf("publish loop: %v after %d waits, want the refusal at once", err, len(*waits))
	}
}

// A signal that stops the daemon while it waits for its store at start-up
// is a stop, as it is once running: Run returns no error (the command
// exits 0), and nothing was started.
func TestDaemonStoppedWhileWaitingForItsStore(t *testing.T) {
	cfg := Defaults()
	cfg.Home = t.TempDir()
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.db.Close() // the store check fails, and is retried, until the stop
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waits := fakeSleep(t, func(waits []time.Duration) { cancel() })
	started := false
	err = p.Run(ctx, RunOptions{OnStart: func(string, int) { started = true }})
	if err != nil || started || len(*waits) != 1 {
		t.Fatalf("stopped while waiting for the store: err %v, started %v, %d waits; want no error, nothing started, 1 wait", err, started, len(*waits))
	}
}

// A summarizer endpoint that asks to be left alone (429 with Retry-After)
// is: the publish loop's next round waits at least what it asked, up to
// maxSummarizerWait, rather than the backoff's first second.
func TestPublishLoopHonoursTheSummarizersRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{{"120", 2 * time.Minute}, {"86400", maxSummarizerWait}} {
		t.Run(tc.header, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", tc.header)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"error":{"message":"slow down","type":"rate_limit_error"}}`))
			}))
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := Defaults()
			cfg.Home = t.TempDir()
			cfg.Summarizer = "openai"
			cfg.OpenAI = summarizers.OpenAI{BaseURL: srv.URL + "/v1", Model: "m"}
			p, err := Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ing := p.DB().Ingest()
			src, err := ing.AddSource(ctx, ingest.NewSource{Name: "docs", Kind: "git", Location: "/tmp/docs", Interval: DefaultInterval, RetryBudget: 3})
			if err != nil {
				t.Fatal(err)
			}
			c, err := ing.Claim(ctx, src.ID, "test", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ing.Settle(ctx, c, ingest.Settlement{Cursor: "c1", NextDueAt: time.Now(),
				Items: []tidemark.Item{{Key: "k1", Title: "a change", OccurredAt: time.Now(), Evidence: []byte("evidence")}}}); err != nil {
				t.Fatal(err)
			}
			waits := fakeSleep(t, func([]time.Duration) { cancel() })
			if err := p.publishLoop(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("publish loop: %v", err)
			}
			if len(*waits) != 1 || (*waits)[0] != tc.want {
				t.Fatalf("waits %v, want %v after the endpoint's Retry-After: %s", *waits, tc.want, tc.header)
			}
		})
	}
}

// A daemon whose database a newer tidemark migrated under it stops, with
// the error that says so, instead of running on a schema it does not
// understand (publishing pages in its own format against the newer
// build's, round after round). So does the delivery loop.
func TestTheDaemonStopsWhenANewerTidemarkMigratesItsDatabase(t *testing.T) {
	cfg := Defaults()
	cfg.Home = t.TempDir()
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ms, err := sqlstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.db.SQL().ExecContext(context.Background(), `INSERT INTO schema_migrations (version, name, applied_at, sha256) VALUES ($1, 'from_the_future', 0, 'x')`,
		ms[len(ms)-1].Version+1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fakeSleep(t, nil)
	if err := p.publishLoop(ctx); !errors.Is(err, sqlstore.ErrNewerSchema) {
		t.Fatalf("publish loop: %v, want it stopped by the newer schema", err)
	}
	if err := p.DeliverLoop(ctx, "", time.Minute); !errors.Is(err, sqlstore.ErrNewerSchema) {
		t.Fatalf("delivery loop: %v, want it stopped by the newer schema", err)
	}
}

// A store wiped under a running daemon (a bucket deleted and made again,
// empty, without its marker) stops the publish loop at its next round, as
// it stops every other command: it is not filled anew, unmarked.
func TestPublishLoopStopsWhenTheStoreIsWipedUnderIt(t *testing.T) {
	cfg := Defaults()
	cfg.Home = t.TempDir()
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	objs := mem.New()
	p.objs = objs
	if _, err := p.BindStore(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waits := fakeSleep(t, func(waits []time.Duration) {
		switch len(waits) {
		case 1: // after a round that found the store the wiki's
			var keys []string
			if err := objs.List(ctx, "", func(in objstore.Info) error { keys = append(keys, in.Key); return nil }); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if err := objs.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
		case 3:
			cancel()
		}
	})
	err = p.publishLoop(ctx)
	if !errors.Is(err, publish.ErrStoreMismatch) || len(*waits) != 1 {
		t.Fatalf("publish loop over a wiped store: %v after %d waits, want publish.ErrStoreMismatch after 1", err, len(*waits))
	}
	n := 0
	if err := objs.List(context.Background(), "", func(objstore.Info) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("the loop wrote %d objects into the wiped store (%v)", n, err)
	}
}

// A daemon started under a holder another live daemon uses (a copied unit
// file with the same --holder) says so at once, naming the other process,
// and withdraws its own presence when it stops.
func TestADaemonWarnsOfAnotherLiveDaemonUnderItsHolder(t *testing.T) {
	cfg := Defaults()
	cfg.Home, cfg.Holder = t.TempDir(), "wA"
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var logged strings.Builder
	p.log = slog.New(slog.NewTextHandler(&logged, nil))
	other := ingest.Presence{Holder: "wA", Instance: "other", Host: "vm2", PID: 4242, StartedAt: time.Now().Add(-time.Hour), SeenAt: time.Now()}
	if _, err := p.db.Announce(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fakeSleep(t, func([]time.Duration) { cancel() })
	if err := p.presenceLoop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("presence loop: %v", err)
	}
	if got := logged.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "wA") || !strings.Contains(got, "vm2") || !strings.Contains(got, "4242") {
		t.Fatalf("no warning naming the other daemon:\n%s", got)
	}
	// Stopped, this daemon is not taken for a live one by the next.
	others, err := p.db.Announce(context.Background(), ingest.Presence{Holder: "wA", Instance: "next", Host: "vm", PID: 1, StartedAt: time.Now(), SeenAt: time.Now()})
	if err != nil || len(others) != 1 || others[0].Instance != "other" {
		t.Fatalf("after the loop stopped, the next daemon finds %+v %v; want only the other one", others, err)
	}
}

// The presence a crashed daemon left on this host (its process gone, or
// its pid this very process's: a container restarted as pid 1) is not
// another live daemon: a restart after kill -9 warns of nothing.
func TestADaemonRestartedAfterACrashWarnsOfNothing(t *testing.T) {
	cfg := Defaults()
	cfg.Home, cfg.Holder = t.TempDir(), "wA"
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var logged strings.Builder
	p.log = slog.New(slog.NewTextHandler(&logged, nil))
	host, _ := os.Hostname()
	crashed := ingest.Presence{Holder: "wA", Instance: "before", Host: host, PID: os.Getpid(), StartedAt: time.Now().Add(-time.Hour), SeenAt: time.Now()}
	if _, err := p.db.Announce(context.Background(), crashed); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fakeSleep(t, func([]time.Duration) { cancel() })
	if err := p.presenceLoop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("presence loop: %v", err)
	}
	if got := logged.String(); strings.Contains(got, "another daemon") {
		t.Fatalf("a restart after a crash warned of its predecessor:\n%s", got)
	}
}
