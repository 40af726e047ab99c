package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/git"
	"github.com/tidemark/tidemark/ingest"
)

func init() {
	// Mirrors of remote repositories live under --home, with the rest of
	// this worker's data.
	registerFetcher("git", func(a *app) tidemark.Fetcher {
		cache, err := filepath.Abs(filepath.Join(a.home, "git"))
		if err != nil {
			cache = filepath.Join(a.home, "git")
		}
		return &git.Fetcher{CacheDir: cache}
	})
	kindDetectors = append(kindDetectors, func(_ context.Context, loc string) (string, bool) {
		if strings.HasSuffix(loc, ".git") {
			return "git", true
		}
		if fi, err := os.Stat(filepath.Join(loc, ".git")); err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
			return "git", true
		}
		return "", false
	})
	sourcePreparers["git"] = func(ctx context.Context, ns ingest.NewSource) (ingest.NewSource, error) {
		if strings.Contains(ns.Location, "://") {
			return ns, nil
		}
		abs, err := filepath.Abs(ns.Location)
		if err != nil {
			return ns, err
		}
		out, err := exec.CommandContext(ctx, "git", "-C", abs, "rev-parse", "--show-toplevel").Output()
		if err != nil {
			return ns, tidemark.Invalidf("location", ns.Location, "not a git repository")
		}
		ns.Location = strings.TrimSpace(string(out))
		if ns.Name == "" {
			ns.Name = filepath.Base(ns.Location)
		}
		return ns, nil
	}
}
