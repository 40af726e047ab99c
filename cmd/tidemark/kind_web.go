package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/detect"
	"github.com/tidemark/tidemark/fetch/dir"
	"github.com/tidemark/tidemark/fetch/feed"
	"github.com/tidemark/tidemark/fetch/httpx"
	"github.com/tidemark/tidemark/fetch/jsonsrc"
	"github.com/tidemark/tidemark/fetch/page"
	"github.com/tidemark/tidemark/ingest"
)

// The web kinds (feed, page, json) share one HTTP client per process, so
// the per-host limits hold across every source; dir reads local files.
func init() {
	registerFetcher("feed", func(a *app) tidemark.Fetcher { return &feed.Fetcher{Client: webClient()} })
	registerFetcher("page", func(a *app) tidemark.Fetcher { return &page.Fetcher{Client: webClient()} })
	registerFetcher("json", func(a *app) tidemark.Fetcher { return &jsonsrc.Fetcher{Client: webClient()} })
	registerFetcher("dir", func(a *app) tidemark.Fetcher { return &dir.Fetcher{} })
	kindDetectors = append(kindDetectors, detectWeb, detectDir)
	sourcePreparers["feed"] = prepareWeb("feed")
	sourcePreparers["page"] = prepareWeb("page")
	sourcePreparers["json"] = prepareWeb("json")
	sourcePreparers["dir"] = prepareDir
	configKeys["feed"] = []string{feed.ConfigMaxBytes, feed.ConfigMaxItems}
	configKeys["page"] = []string{page.ConfigSelector, page.ConfigIgnore, page.ConfigMaxBytes, page.ConfigMaxNodes}
	configKeys["json"] = []string{jsonsrc.ConfigItems, jsonsrc.ConfigID, jsonsrc.ConfigTitle, jsonsrc.ConfigURL, jsonsrc.ConfigIgnore, jsonsrc.ConfigDeclared, jsonsrc.ConfigMaxItems, jsonsrc.ConfigMaxBytes}
	configKeys["dir"] = []string{dir.ConfigInclude, dir.ConfigExclude, dir.ConfigHidden, dir.ConfigMaxFiles}
}

// AllowPrivateEnv names the variable that lets sources fetch private,
// loopback and link-local addresses (for local use; off by default).
const AllowPrivateEnv = httpx.AllowPrivateEnv

var (
	webMu sync.Mutex
	// webShared is the process's client. It refuses private addresses
	// unless the fetch's context carries a source that allows them
	// (httpx.WithAllowPrivate): the setting is each source's, never the
	// process's.
	webShared *httpx.Client
	// allowPrivateFlag is set by the --allow-private flag of the commands
	// that have one.
	allowPrivateFlag bool
	// probes remembers what detection found, so the preparer that follows
	// does not ask the upstream again.
	probes = map[probeKey]detect.Result{}
)

// allowPrivate is the default of a new source's own setting: the
// --allow-private flag where a command has one, or TIDEMARK_ALLOW_PRIVATE.
// It is read when a source is added or tested, never when one is fetched.
func allowPrivate() bool {
	switch strings.ToLower(os.Getenv(AllowPrivateEnv)) {
	case "1", "true", "yes":
		return true
	}
	return allowPrivateFlag
}

// webClient returns the process's shared HTTP client.
func webClient() *httpx.Client {
	webMu.Lock()
	defer webMu.Unlock()
	if webShared == nil {
		webShared = httpx.New(httpx.Options{})
	}
	return webShared
}

type probeKey struct {
	allow bool
	loc   string
}

func isHTTP(loc string) bool {
	return strings.HasPrefix(loc, "http://") || strings.HasPrefix(loc, "https://")
}

// probe asks a URL once what it is; the answer is remembered for the
// preparer.
func probe(ctx context.Context, loc string) (detect.Result, error) {
	key := probeKey{httpx.AllowsPrivate(ctx), loc}
	webMu.Lock()
	r, ok := probes[key]
	webMu.Unlock()
	if ok {
		return r, nil
	}
	ctx, cancel := context.WithTimeout(ctx, httpx.DefaultTimeout)
	defer cancel()
	r, err := detect.Probe(ctx, webClient(), loc)
	if err != nil {
		return r, err
	}
	webMu.Lock()
	probes[key] = r
	webMu.Unlock()
	return r, nil
}

func detectWeb(ctx context.Context, loc string) (string, bool) {
	if !isHTTP(loc) {
		return "", false
	}
	r, err := probe(ctx, loc)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tidemark: could not probe %s to tell its kind: %v\n", loc, err)
		return "", false
	}
	return r.Kind, true
}

func detectDir(_ context.Context, loc string) (string, bool) {
	if fi, err := os.Stat(loc); err == nil && fi.IsDir() {
		return "dir", true
	}
	return "", false
}

func prepareWeb(kind string) func(ctx context.Context, ns ingest.NewSource) (ingest.NewSource, error) {
	return func(ctx context.Context, ns ingest.NewSource) (ingest.NewSource, error) {
		if err := detect.CheckURL(ns.Location); err != nil {
			return ns, err
		}
		switch kind {
		case "feed":
			// An HTML page named as a feed: follow its announced feed. A
			// feed that cannot be probed now is added as given.
			if r, err := probe(ctx, ns.Location); err == nil && r.Kind == "feed" && r.Discovered {
				ns.Location = r.Location
			}
		case "page":
			for _, k := range []string{page.ConfigSelector, page.ConfigIgnore} {
				if sel := ns.Config[k]; sel != "" {
					if err := page.CheckSelector(sel); err != nil {
						return ns, tidemark.Invalidf("--config", k+"="+sel, "not a CSS selector: %v", err)
					}
				}
			}
		case "json":
			if _, err := jsonsrc.NewSelector(ns.Config, 0); err != nil {
				return ns, err
			}
		}
		if ns.Name == "" {
			ns.Name = detect.Name(ns.Location)
		}
		return ns, nil
	}
}

func prepareDir(ctx context.Context, ns ingest.NewSource) (ingest.NewSource, error) {
	abs, err := filepath.Abs(ns.Location)
	if err != nil {
		return ns, err
	}
	// A root that is a link is stored resolved: the source watches the
	// directory the user meant, not whatever the link points at later.
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return ns, tidemark.Invalidf("location", ns.Location, "not a readable directory: %v", err)
	}
	fi, err := os.Stat(resolved)
	if err != nil || !fi.IsDir() {
		return ns, tidemark.Invalidf("location", ns.Location, "not a directory")
	}
	ns.Location = resolved
	if ns.Name == "" {
		ns.Name = filepath.Base(abs)
	}
	return ns, nil
}
