package kinds

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/git"
	"github.com/tidemark/tidemark/ingest"
)

// Admission is what a face whose users are not the machine's operator
// (the API and the console: anyone holding a token) may add beyond a web
// or remote location. A location on the server's own machine is read
// with the server's rights, and what a source reads is published to the
// wiki, so a token must not reach the server's files or, through a source
// that allows them, its private network, unless the operator who started
// the server said so. The CLI runs as that operator and carries no
// Admission: it admits everything.
type Admission struct {
	// LocalRoots are the directories under which a location on the
	// server's machine may lie: a dir source, a local git repository, a
	// file:// remote. None admits no such location.
	LocalRoots []string
	// AllowPrivate admits a source that may reach private addresses.
	AllowPrivate bool
}

type admissionKey struct{}

// WithAdmission returns ctx carrying a, which every new source resolved
// with it (Resolve) and every change of a source's allow_private
// (CheckAllowPrivate) must pass.
func WithAdmission(ctx context.Context, a Admission) context.Context {
	return context.WithValue(ctx, admissionKey{}, a)
}

// AdmissionOf returns the Admission ctx carries, if any (the CLI's carries
// none: it admits everything).
func AdmissionOf(ctx context.Context) (Admission, bool) {
	a, ok := ctx.Value(admissionKey{}).(Admission)
	return a, ok
}

// CheckAllowPrivate refuses to let a source reach private addresses when
// ctx carries an Admission that does not allow it.
func CheckAllowPrivate(ctx context.Context, allow bool) error {
	if a, ok := AdmissionOf(ctx); ok && allow && !a.AllowPrivate {
		return tidemark.Invalidf("allow_private", "true", "this server does not let the API or the console open a source to "+
			"private addresses; its operator can, with `tidemark source add/set --allow-private` on its machine, or by "+
			"starting `tidemark serve --allow-private`")
	}
	return nil
}

// isLocal tells a location on this machine: a path, or a file:// URL.
func isLocal(loc string) bool {
	return !isHTTP(loc) && (!git.IsRemote(loc) || strings.HasPrefix(strings.ToLower(loc), "file:"))
}

// admitBefore refuses, before anything reads the location, what ctx's
// Admission cannot admit whatever the location turns out to be.
func admitBefore(ctx context.Context, ns ingest.NewSource) error {
	a, ok := AdmissionOf(ctx)
	if !ok {
		return nil
	}
	if err := CheckAllowPrivate(ctx, ns.AllowPrivate); err != nil {
		return err
	}
	if isLocal(ns.Location) && len(a.LocalRoots) == 0 {
		return tidemark.Invalidf("location", ns.Location, "a location on the server's machine is read with the server's rights "+
			"and published to the wiki; this server lets the API and the console add none: its operator can add it with "+
			"`tidemark source add` on that machine, or start `tidemark serve --local-root DIR` to admit directories under DIR")
	}
	return nil
}

// admitAfter checks a resolved local location (a link resolved, a
// repository's top found) against ctx's Admission's roots, both with their
// links resolved, so neither a link nor ".." leads out of a root.
func admitAfter(ctx context.Context, ns ingest.NewSource) error {
	a, ok := AdmissionOf(ctx)
	if !ok || !isLocal(ns.Location) {
		return nil
	}
	p := ns.Location
	if i := strings.Index(p, "://"); i >= 0 {
		p = p[i+3:]
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		return tidemark.Invalidf("location", ns.Location, "cannot resolve it on the server's machine: %v", err)
	}
	for _, root := range a.LocalRoots {
		r, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(r, resolved); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil
		}
	}
	return tidemark.Invalidf("location", ns.Location, "not under a directory this server admits (%s): its operator can add it "+
		"with `tidemark source add` on the server's machine, or start `tidemark serve --local-root DIR` with a root above it",
		strings.Join(a.LocalRoots, ", "))
}
