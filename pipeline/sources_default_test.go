package pipeline

import (
	"context"
	"testing"
)

// Config.AllowPrivate (TIDEMARK_ALLOW_PRIVATE) is the default a program
// embedding tidemark gets for a new source, as the CLI's source add does:
// a loopback feed is added without naming allow_private again.
func TestNewSourceTakesTheConfiguredDefaults(t *testing.T) {
	ctx := context.Background()
	cfg := Defaults()
	cfg.Home, cfg.AllowPrivate = t.TempDir(), true
	p, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	url, _, _, _ := blockingFeed(t)
	ns := p.NewSource("local", url)
	if !ns.AllowPrivate || ns.Interval != DefaultInterval || ns.RetryBudget != DefaultRetryBudget {
		t.Fatalf("NewSource: %+v, want the configured defaults", ns)
	}
	src, err := p.AddSource(ctx, ns)
	if err != nil || !src.AllowPrivate {
		t.Fatalf("AddSource: %+v, %v", src, err)
	}
}
