package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/pipeline"
)

// A source whose claim a killed process of this host still holds is not
// shown running by source list and source show: the holder is named gone,
// and the read leaves the claim for the next claim to take over.
func TestSourceListShowsAKilledHolderGone(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name:", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("cannot run a process to outlive:", err)
	}
	holder := fmt.Sprintf("%s:%d", host, dead.Process.Pid)
	home := t.TempDir()
	mustTidemark(t, 0, "--home", home, "source", "add", t.TempDir(), "--kind", "dir", "--name", "d")

	ctx := context.Background()
	cfg := pipeline.Defaults()
	cfg.Home = home
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	src, err := p.DB().Ingest().Source(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DB().Ingest().Claim(ctx, src.ID, holder, time.Hour); err != nil {
		t.Fatal(err)
	}
	p.Close()

	list := mustTidemark(t, 0, "--home", home, "source", "list")
	if strings.Contains(list, "running") || !strings.Contains(list, holder+" gone") {
		t.Fatalf("source list with a killed holder:\n%s", list)
	}
	show := mustTidemark(t, 0, "--home", home, "source", "show", "d")
	if !strings.Contains(show, "health: new") || !strings.Contains(show, "process "+holder+" of this host is gone") {
		t.Fatalf("source show with a killed holder:\n%s", show)
	}
	if runs := mustTidemark(t, 0, "--home", home, "runs", "list"); !strings.Contains(runs, "active (holder gone)") {
		t.Fatalf("runs list with a killed holder:\n%s", runs)
	}
	var srcs []tidemark.Source
	if err := json.Unmarshal([]byte(mustTidemark(t, 0, "--home", home, "source", "list", "--json")), &srcs); err != nil || len(srcs) != 1 {
		t.Fatalf("source list --json: %v", err)
	}
	if s := srcs[0]; s.ClaimState != tidemark.ClaimGone || s.ClaimHolder != holder {
		t.Fatalf("source list --json: claim %q by %q, want gone by %s", s.ClaimState, s.ClaimHolder, holder)
	}
}
