package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/git"
	"github.com/tidemark/tidemark/ingest"
)

func init() {
	// Mirrors of remote repositories live under --home, with the rest of
	// this worker's data. Every connection to a remote obeys the same
	// address guard as the web kinds.
	registerFetcher("git", func(a *app) tidemark.Fetcher {
		cache, err := filepath.Abs(filepath.Join(a.home, "git"))
		if err != nil {
			cache = filepath.Join(a.home, "git")
		}
		return &git.Fetcher{CacheDir: cache, Guard: webClient()}
	})
	configKeys["git"] = []string{git.ConfigBranch}
	kindDetectors = append(kindDetectors, func(_ context.Context, loc string) (string, bool) {
		if strings.HasSuffix(loc, ".git") || strings.HasSuffix(loc, ".git/") {
			return "git", true
		}
		if !strings.Contains(loc, "://") && git.IsRemote(loc) {
			return "git", true // user@host:path is only ever git
		}
		if fi, err := os.Stat(filepath.Join(loc, ".git")); err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
			return "git", true
		}
		if isBareRepository(loc) {
			return "git", true
		}
		return "", false
	})
	sourcePreparers["git"] = prepareGit
}

// isBareRepository tells a bare repository by its layout.
func isBareRepository(loc string) bool {
	for _, p := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(loc, p)); err != nil {
			return false
		}
	}
	return true
}

// prepareGit resolves a local repository to its top (or the bare
// repository itself) and checks that the branch exists, asking a remote
// through the address guard. A remote that cannot be reached now is added
// with a warning; one the guard refuses, or whose branch is missing, is
// refused.
func prepareGit(ctx context.Context, ns ingest.NewSource) (ingest.NewSource, error) {
	f := &git.Fetcher{Guard: webClient()}
	if !git.IsRemote(ns.Location) {
		loc, err := f.LocalRepository(ctx, ns.Location)
		if err != nil {
			return ns, err
		}
		ns.Location = loc
		if ns.Name == "" {
			ns.Name = strings.TrimSuffix(filepath.Base(loc), ".git")
		}
	}
	err := f.Check(ctx, tidemark.Source{Kind: "git", Location: ns.Location, Config: ns.Config})
	var fe *tidemark.FetchError
	switch {
	case err == nil:
	case errors.Is(err, tidemark.ErrInvalid):
		return ns, err
	case errors.As(err, &fe) && fe.Outcome == tidemark.OutcomeInvalid:
		return ns, tidemark.Invalidf("location", ns.Location, "%s", fe.Error())
	case errors.As(err, &fe) && fe.Outcome == tidemark.OutcomeUnreachable:
		fmt.Fprintf(os.Stderr, "tidemark: could not reach %s to check it now (%v); adding it as given\n", ns.Location, err)
	default:
		return ns, err
	}
	return ns, nil
}
