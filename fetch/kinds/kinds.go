// Package kinds knows every source kind: how a location is recognised as
// one, how a new source of it is checked and normalised, which config keys
// it reads, and the fetcher that reads it. It is the one place that knows
// them all, as outbox/providers is for provider kinds; a program that
// embeds tidemark gets every kind from New.
package kinds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch"
	"github.com/tidemark/tidemark/fetch/detect"
	"github.com/tidemark/tidemark/fetch/dir"
	"github.com/tidemark/tidemark/fetch/feed"
	"github.com/tidemark/tidemark/fetch/git"
	"github.com/tidemark/tidemark/fetch/httpx"
	"github.com/tidemark/tidemark/fetch/jsonsrc"
	"github.com/tidemark/tidemark/fetch/page"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/redact"
)

// Kind is one source kind.
type Kind struct {
	Name string
	// ConfigKeys are the config keys the kind understands; any other key
	// is refused when a source is added, so a typo does not pass silently.
	ConfigKeys []string
	// detect tells the kind of a location, if it can (the web kinds share
	// one detector, held by the first of them); err says why it could not
	// ask (an address the guard refused). It may ask the location
	// (an HTTP probe), so it takes the caller's context.
	detect func(ctx context.Context, s *Set, loc string) (kind string, ok bool, err error)
	// prepare checks and normalises a new source of this kind (resolve a
	// path, verify a repository, follow a page's announced feed).
	prepare func(ctx context.Context, s *Set, ns ingest.NewSource) (ingest.NewSource, error)
	// fetcher reads sources of this kind.
	fetcher func(s *Set) tidemark.Fetcher
	// configSelects: a different config on one location may read other
	// items (a selector, a jq expression, include patterns, a branch), so
	// it is another source. Without it (a feed: its config only bounds
	// and cleans what it reads), the location alone is the source.
	configSelects bool
	// settable are the config keys a source of the kind may change after
	// it has been read (ChangeConfig): those its cursor still stands for
	// under the new value. A git cursor is commits read, which are the
	// same commits on any branch; a dir manifest, a page's text or a
	// feed's validators belong to what the old config selected.
	settable []string
}

// Options configure a Set.
type Options struct {
	// GitCache is the directory that holds mirrors of remote repositories
	// (required for the git kind to fetch remotes).
	GitCache string
	// Warn receives what a check could not decide but did not refuse (a
	// remote that cannot be reached now is added as given). Nil drops it.
	Warn func(msg string)
}

// Set is every kind, sharing one HTTP client per process so that the
// per-host limits hold across every source. The client refuses private
// addresses unless the fetch's context carries a source that allows them
// (httpx.WithAllowPrivate): the setting is each source's, never the
// process's.
type Set struct {
	opt    Options
	client *httpx.Client
	kinds  []Kind

	mu sync.Mutex
	// probes remembers what detection found, so the preparation that
	// follows does not ask the upstream again.
	probes map[probeKey]detect.Result
}

type probeKey struct {
	allow bool
	loc   string
}

// New returns every kind. The order is the order of detection: the first
// kind that recognises a location wins.
func New(opt Options) *Set {
	s := &Set{opt: opt, client: httpx.New(httpx.Options{}), probes: map[probeKey]detect.Result{}}
	s.kinds = []Kind{
		{Name: "git", ConfigKeys: []string{git.ConfigBranch}, detect: detectGit, prepare: prepareGit,
			fetcher: func(s *Set) tidemark.Fetcher { return &git.Fetcher{CacheDir: s.opt.GitCache, Guard: s.client} }, configSelects: true,
			settable: []string{git.ConfigBranch}},
		{Name: "feed", ConfigKeys: []string{feed.ConfigMaxBytes, feed.ConfigMaxItems, feed.ConfigIgnore, feed.ConfigIgnoreQuery}, detect: detectWeb, prepare: prepareWeb("feed"),
			fetcher: func(s *Set) tidemark.Fetcher { return &feed.Fetcher{Client: s.client} }},
		{Name: "page", ConfigKeys: []string{page.ConfigSelector, page.ConfigIgnore, page.ConfigMaxBytes, page.ConfigMaxNodes},
			prepare: prepareWeb("page"),
			fetcher: func(s *Set) tidemark.Fetcher { return &page.Fetcher{Client: s.client} }, configSelects: true},
		{Name: "json", ConfigKeys: []string{jsonsrc.ConfigItems, jsonsrc.ConfigID, jsonsrc.ConfigTitle, jsonsrc.ConfigURL,
			jsonsrc.ConfigIgnore, jsonsrc.ConfigDeclared, jsonsrc.ConfigMaxItems, jsonsrc.ConfigMaxBytes,
			jsonsrc.ConfigJQSteps, jsonsrc.ConfigJQTimeout},
			prepare: prepareWeb("json"),
			fetcher: func(s *Set) tidemark.Fetcher { return &jsonsrc.Fetcher{Client: s.client} }, configSelects: true},
		{Name: "dir", ConfigKeys: []string{dir.ConfigInclude, dir.ConfigExclude, dir.ConfigHidden, dir.ConfigMaxFiles},
			detect: detectDir, prepare: prepareDir,
			fetcher: func(*Set) tidemark.Fetcher { return &dir.Fetcher{} }, configSelects: true},
	}
	return s
}

// Duplicate returns the source among existing that a new source ns (as
// Resolve left it) would duplicate, if one does: the same kind on the same
// location (URLs compared with their scheme and host in lower case, a
// default port and an empty path spelled out), with the same config where
// the kind's config may select other items (page, json, dir, git). Two
// such sources would file every change twice.
//
// It compares Keys: the database holds each key for one source, so a
// duplicate that a concurrent add stored after this check is refused by
// the store (ingest.DuplicateError) by the same rule.
func (s *Set) Duplicate(existing []tidemark.Source, ns ingest.NewSource) (tidemark.Source, bool) {
	key := s.Key(ns)
	for _, src := range existing {
		if src.Kind == ns.Kind && s.Key(ingest.NewSource{Kind: src.Kind, Location: src.Location, Config: src.Config}) == key {
			return src, true
		}
	}
	return tidemark.Source{}, false
}

// Key is a new source's duplicate key (ingest.NewSource.Key), which the
// store holds for one source at a time: the hex SHA-256 of its kind, its
// location in the form Duplicate compares, and, where the kind's config
// selects other items, its config (values trimmed, an empty one unset).
func (s *Set) Key(ns ingest.NewSource) string {
	k, _ := s.Kind(ns.Kind)
	parts := []string{ns.Kind, sameLocation(ns.Location)}
	if k.configSelects {
		cfg := normConfig(ns.Config)
		for _, name := range slices.Sorted(maps.Keys(cfg)) {
			parts = append(parts, name, cfg[name])
		}
	}
	b, _ := json.Marshal(parts) // strings only: an unambiguous encoding
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ChangeConfig checks a change of a stored source's config (keys set to
// values, "" unsetting one) and returns the config it leaves. Only keys
// the kind lets change on a source it has read are taken (git's branch:
// its cursor is commits read, the same commits on any branch, so the next
// run reads on from them, or fails as a rewritten history when the new
// branch does not hold them, for an operator to skip); any other is
// refused, naming the way out (a new source). The new config is checked
// as source add checks one: a branch that does not exist is refused; a
// remote that cannot be reached now is taken as given.
func (s *Set) ChangeConfig(ctx context.Context, src tidemark.Source, change map[string]string) (map[string]string, error) {
	k, ok := s.Kind(src.Kind)
	if !ok {
		return nil, tidemark.Invalidf("kind", src.Kind, "unknown kind (known: %s)", strings.Join(s.Names(), ", "))
	}
	if err := k.CheckConfig(change); err != nil {
		return nil, err
	}
	for key := range change {
		if !slices.Contains(k.settable, key) {
			return nil, tidemark.Invalidf("config", key, "cannot be changed on a %s source that has been added: its cursor stands for what "+
				"the old value selected; add a source with the new config instead", k.Name)
		}
	}
	cfg := ingest.Settings{Config: change}.ApplyConfig(src.Config)
	if err := k.CheckConfig(cfg); err != nil {
		return nil, err
	}
	ns := ingest.NewSource{Name: src.Name, Kind: src.Kind, Location: src.Location, Config: cfg, AllowPrivate: src.AllowPrivate}
	if _, err := k.prepare(httpx.WithAllowPrivate(ctx, src.AllowPrivate), s, ns); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ConfigSelects reports whether a different config on one location makes
// another source of the kind (Duplicate).
func (s *Set) ConfigSelects(kind string) bool {
	k, _ := s.Kind(kind)
	return k.configSelects
}

// sameLocation is the form of a location Duplicate compares: a URL's
// scheme and host in lower case, its default port dropped, an empty path
// as "/"; anything else (a path, which Resolve made absolute and
// resolved) as it is.
func sameLocation(loc string) string {
	u, err := url.Parse(loc)
	if err != nil || u.Host == "" {
		return loc
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		u.Host = u.Hostname()
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String()
}

// normConfig is a config as Key compares it: values trimmed, an empty
// value unset.
func normConfig(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v = strings.TrimSpace(v); v != "" {
			out[k] = v
		}
	}
	return out
}

// Client is the process's shared HTTP client.
func (s *Set) Client() *httpx.Client { return s.client }

// Names lists the kinds, sorted.
func (s *Set) Names() []string {
	var ns []string
	for _, k := range s.kinds {
		ns = append(ns, k.Name)
	}
	sort.Strings(ns)
	return ns
}

// Kind finds a kind by name.
func (s *Set) Kind(name string) (Kind, bool) {
	for _, k := range s.kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Fetchers returns a fetcher per kind, for ingest.Service.
func (s *Set) Fetchers() ingest.Fetchers {
	fs := ingest.Fetchers{}
	for _, k := range s.kinds {
		fs[k.Name] = k.fetcher(s)
	}
	return fs
}

func (s *Set) warn(format string, args ...any) {
	if s.opt.Warn != nil {
		s.opt.Warn(fmt.Sprintf(format, args...))
	}
}

// Resolve completes a new source: the kind (detected unless named), its
// config checked against the kind's keys, the kind's own preparation, and
// a default name. It refuses a location that carries a credential, and
// what ctx's Admission does not admit, before anything reads it. Detection and checks reach only what the source will
// be allowed to (ns.AllowPrivate).
func (s *Set) Resolve(ctx context.Context, ns ingest.NewSource) (ingest.NewSource, error) {
	if err := CheckLocationCredentials(ns.Location); err != nil {
		return ns, err
	}
	if err := admitBefore(ctx, ns); err != nil {
		return ns, err
	}
	ctx = httpx.WithAllowPrivate(ctx, ns.AllowPrivate)
	var undetected error // why a detector could not ask the location
	if ns.Kind == "" {
		for _, k := range s.kinds {
			if k.detect == nil {
				continue
			}
			kind, ok, err := k.detect(ctx, s, ns.Location)
			if ok {
				ns.Kind = kind
				break
			}
			if undetected == nil {
				undetected = err
			}
		}
	}
	if ns.Kind == "" {
		if err := ctx.Err(); err != nil {
			// The caller's context ended (its deadline, a cancel) while
			// the location was asked: not the location's fault.
			return ns, fmt.Errorf("tell the kind of %s: %w", redact.Location(ns.Location), err)
		}
		if err := refusedPrivate(ns.Location, undetected); err != nil {
			return ns, err
		}
		if de := (*detect.DiscoveryError)(nil); errors.As(undetected, &de) {
			// Never the page's first announced feed unchecked: it would
			// fail every run.
			return ns, tidemark.Invalidf("location", ns.Location, "%v; add a feed that answers by its own URL, or watch the page itself with %s page",
				de, tidemark.Input("kind"))
		}
		if ue := (*detect.UnparsedError)(nil); errors.As(undetected, &ue) {
			// Never a page: a page source on a feed or JSON answer would
			// fail every run, even once the upstream is fixed.
			return ns, tidemark.Invalidf("location", ns.Location, "%v; fix it or name the kind with %s", ue, tidemark.Input("kind"))
		}
		if scheme := unknownScheme(ns.Location); scheme != "" {
			return ns, tidemark.Invalidf("location", ns.Location, "not an http(s) URL, a git remote or a directory: "+
				"unknown scheme %q (want http:// or https://)", scheme)
		}
		return ns, tidemark.Invalidf("location", ns.Location, "cannot tell its kind; name it with %s", tidemark.Input("kind"))
	}
	k, ok := s.Kind(ns.Kind)
	if !ok {
		return ns, tidemark.Invalidf("kind", ns.Kind, "unknown kind (known: %s)", strings.Join(s.Names(), ", "))
	}
	if err := k.CheckConfig(ns.Config); err != nil {
		return ns, err
	}
	var err error
	if ns, err = k.prepare(ctx, s, ns); err != nil {
		return ns, err
	}
	if err := admitAfter(ctx, ns); err != nil {
		return ns, err
	}
	if ns.Name == "" {
		ns.Name = defaultName(ns.Location)
	}
	return ns, nil
}

// CheckConfig refuses a key the kind does not read, and a bound (max_…)
// that is not a positive integer.
func (k Kind) CheckConfig(cfg map[string]string) error {
	for key, v := range cfg {
		if !slices.Contains(k.ConfigKeys, key) {
			list := strings.Join(k.ConfigKeys, ", ")
			if list == "" {
				list = "none"
			}
			return tidemark.Invalidf("config", key, "not a %s setting (known: %s)", k.Name, list)
		}
		if strings.HasPrefix(key, "max_") {
			if _, err := fetch.IntConfig(cfg, key, 1); err != nil {
				return tidemark.Invalidf("config", key+"="+v, "want a positive integer")
			}
		}
	}
	return nil
}

// CheckLocationCredentials refuses a location that carries a credential: a
// password in its userinfo (any scheme), any userinfo in an http(s) URL,
// where a token rides as the user name (https://TOKEN@host/...), or a query
// parameter named like a credential (?token=, ?api_key=, ?sig=: see
// redact.CredentialParam). A location is shown everywhere (source list,
// --json, the API, the status pages, the public wiki, run errors), so a
// credential in it would be shown too; git's credential helpers, ~/.netrc
// and SSH keys hold credentials instead. An SSH user name
// (ssh://git@host/...) is not a secret and is kept. A source stored with one
// before it was refused keeps working, its location shown by
// redact.Location.
func CheckLocationCredentials(loc string) error {
	u, err := url.Parse(loc)
	if err != nil {
		// A password url.Parse refuses (with a # or a / in it) is a
		// password all the same: redact.Credentials splits such a URL
		// leniently.
		if len(redact.Credentials(loc)) > 0 {
			return errCredentialInUserinfo(loc)
		}
		return nil
	}
	if u.Host == "" {
		return nil
	}
	if name, found := redact.QueryCredential(u.RawQuery); found {
		return tidemark.Invalidf("location", redact.Location(loc), "carries a credential in its query (%s=); "+
			"tidemark shows locations everywhere, the public wiki included, and keeps no credential for a feed, page "+
			"or JSON source: track an address that needs none, and give git its credentials with a credential "+
			"helper, ~/.netrc or an SSH key", name)
	}
	if u.User == nil {
		return nil
	}
	_, hasPassword := u.User.Password()
	web := u.Scheme == "http" || u.Scheme == "https"
	if hasPassword || (web && u.User.Username() != "") {
		return errCredentialInUserinfo(loc)
	}
	return nil
}

func errCredentialInUserinfo(loc string) error {
	return tidemark.Invalidf("location", redact.URL(loc, false), "carries a credential (user:password@ or token@); "+
		"tidemark shows locations everywhere and never stores credentials in them: "+
		"give git its credentials with a credential helper, ~/.netrc or an SSH key, and drop them from the URL")
}

func defaultName(loc string) string {
	loc = strings.TrimRight(loc, "/")
	loc = strings.TrimSuffix(loc, ".git")
	if i := strings.LastIndexAny(loc, "/:"); i >= 0 && i < len(loc)-1 {
		loc = loc[i+1:]
	}
	return loc
}

// probe asks a URL once what it is; the answer is remembered for the
// preparation that follows.
func (s *Set) probe(ctx context.Context, loc string) (detect.Result, error) {
	key := probeKey{httpx.AllowsPrivate(ctx), loc}
	s.mu.Lock()
	r, ok := s.probes[key]
	s.mu.Unlock()
	if ok {
		return r, nil
	}
	// A page and the feeds it announces: a few requests, a second apart.
	ctx, cancel := context.WithTimeout(ctx, 2*httpx.DefaultTimeout)
	defer cancel()
	r, err := detect.Probe(ctx, s.client, loc)
	if err != nil {
		return r, err
	}
	s.mu.Lock()
	s.probes[key] = r
	s.mu.Unlock()
	return r, nil
}

func isHTTP(loc string) bool {
	return strings.HasPrefix(loc, "http://") || strings.HasPrefix(loc, "https://")
}

// detectWeb tells an http(s) location's kind by asking it once.
func detectWeb(ctx context.Context, s *Set, loc string) (string, bool, error) {
	if !isHTTP(loc) {
		return "", false, nil
	}
	r, err := s.probe(ctx, loc)
	if err != nil {
		var ue *detect.UnparsedError
		var de *detect.DiscoveryError
		if refusedPrivate(loc, err) == nil && !errors.As(err, &ue) && !errors.As(err, &de) && ctx.Err() == nil {
			s.warn("could not probe %s to tell its kind: %v", loc, err)
		}
		return "", false, err
	}
	return r.Kind, true, nil
}

// refusedPrivate is the refusal of a new source at loc when err is the
// address guard's (the location is private, loopback or link-local and the
// source does not allow that), naming the fix at add time; else nil. The
// guard's own words name `source set`, the fix for a source already added.
func refusedPrivate(loc string, err error) error {
	var ae *httpx.AddrError
	if !errors.As(err, &ae) {
		return nil
	}
	return tidemark.Invalidf("location", loc, "%s is a %s address, which a source reaches only if it allows private addresses: "+
		"add it with %s (or set %s=1 to make that the default of `source add`, and of Pipeline.NewSource in a program embedding tidemark)",
		ae.Addr, ae.Reason, tidemark.Input("allow_private"), httpx.AllowPrivateEnv)
}

// CheckAddress is the address check source add makes of a web location,
// for a source that may (allowPrivate) or may not reach private addresses:
// an OPML import's feeds are checked as one source added by hand is.
func (s *Set) CheckAddress(ctx context.Context, loc string, allowPrivate bool) error {
	return s.checkAddress(httpx.WithAllowPrivate(ctx, allowPrivate), loc)
}

// checkAddress refuses a web location whose host is, every address of it,
// one the source may not reach (a loopback, private or link-local address
// while the source does not allow them): added, it would fail every run. A
// host that cannot be resolved now is left to the runs.
func (s *Set) checkAddress(ctx context.Context, loc string) error {
	if httpx.AllowsPrivate(ctx) {
		return nil
	}
	u, err := url.Parse(loc)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	ctx, cancel := context.WithTimeout(ctx, httpx.DefaultTimeout)
	defer cancel()
	allowed, refused, err := s.client.ResolveChecked(ctx, u.Hostname(), port)
	if err != nil || len(allowed) > 0 {
		return nil
	}
	return refusedPrivate(loc, refused)
}

// unknownScheme is the scheme of a URL-like location that no kind reads
// (a typo such as htp://), or "".
func unknownScheme(loc string) string {
	u, err := url.Parse(loc)
	if err != nil || !strings.Contains(loc, "://") {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "git", "ssh", "git+ssh", "ssh+git", "file", "ftp", "ftps":
		return "" // git reads these
	}
	return u.Scheme
}

func prepareWeb(kind string) func(ctx context.Context, s *Set, ns ingest.NewSource) (ingest.NewSource, error) {
	return func(ctx context.Context, s *Set, ns ingest.NewSource) (ingest.NewSource, error) {
		if err := detect.CheckURL(ns.Location); err != nil {
			return ns, err
		}
		if err := s.checkAddress(ctx, ns.Location); err != nil {
			return ns, err
		}
		switch kind {
		case "feed":
			if err := feed.CheckConfig(ns.Config); err != nil {
				return ns, err
			}
			// An HTML page named as a feed: follow its announced feed. A
			// feed that cannot be probed now is added as given.
			r, err := s.probe(ctx, ns.Location)
			if de := (*detect.DiscoveryError)(nil); errors.As(err, &de) {
				return ns, tidemark.Invalidf("location", ns.Location, "%v; add a feed that answers by its own URL", de)
			}
			if cerr := ctx.Err(); err != nil && cerr != nil {
				return ns, fmt.Errorf("probe %s: %w", redact.Location(ns.Location), cerr)
			}
			if rerr := refusedPrivate(ns.Location, err); rerr != nil {
				return ns, rerr
			}
			if fe := (*tidemark.FetchError)(nil); errors.As(err, &fe) && fe.Outcome == tidemark.OutcomeUnreachable {
				s.warn("could not reach %s to check it now (%v); adding it as given", ns.Location, err)
			}
			if err == nil && r.Kind == "feed" && r.Discovered {
				if len(r.Alternatives) > 0 {
					s.warn("%s announces other feeds too (%s); this source watches %s", ns.Location, strings.Join(r.Alternatives, ", "), r.Location)
				}
				ns.Location = r.Location
			}
		case "page":
			for _, k := range []string{page.ConfigSelector, page.ConfigIgnore} {
				if sel := ns.Config[k]; sel != "" {
					if err := page.CheckSelector(sel); err != nil {
						return ns, tidemark.Invalidf("config", k+"="+sel, "not a CSS selector: %v", err)
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

func detectDir(_ context.Context, _ *Set, loc string) (string, bool, error) {
	if fi, err := os.Stat(loc); err == nil && fi.IsDir() {
		return "dir", true, nil
	}
	return "", false, nil
}

func prepareDir(_ context.Context, _ *Set, ns ingest.NewSource) (ingest.NewSource, error) {
	if err := dir.CheckConfig(ns.Config); err != nil {
		return ns, err
	}
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

func detectGit(_ context.Context, _ *Set, loc string) (string, bool, error) {
	if strings.HasSuffix(loc, ".git") || strings.HasSuffix(loc, ".git/") {
		return "git", true, nil
	}
	if !strings.Contains(loc, "://") && git.IsRemote(loc) {
		return "git", true, nil // user@host:path is only ever git
	}
	if path, ok := fileURLPath(loc); ok {
		// A file:// remote names a repository of this machine: it is git
		// when a repository is there.
		return "git", isGitDir(path), nil
	}
	return "git", isGitDir(loc), nil
}

// fileURLPath is the local path a file:// URL names (of this host: no
// host, or localhost).
func fileURLPath(loc string) (string, bool) {
	if !strings.HasPrefix(strings.ToLower(loc), "file://") {
		return "", false
	}
	u, err := url.Parse(loc)
	if err != nil || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", false
	}
	return filepath.FromSlash(u.Path), true
}

// isGitDir tells a local repository: a work tree (with .git, a directory or
// a file) or a bare repository by its layout.
func isGitDir(loc string) bool {
	if fi, err := os.Stat(filepath.Join(loc, ".git")); err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
		return true
	}
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
func prepareGit(ctx context.Context, s *Set, ns ingest.NewSource) (ingest.NewSource, error) {
	f := &git.Fetcher{Guard: s.client}
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
	err := f.Check(ctx, ns.Source())
	var fe *tidemark.FetchError
	switch {
	case err == nil:
	case refusedPrivate(ns.Location, err) != nil:
		return ns, refusedPrivate(ns.Location, err)
	case errors.Is(err, tidemark.ErrInvalid):
		return ns, err
	case errors.As(err, &fe) && fe.Outcome == tidemark.OutcomeInvalid:
		return ns, tidemark.Invalidf("location", ns.Location, "%s", fe.Error())
	case errors.As(err, &fe) && fe.Outcome == tidemark.OutcomeUnreachable:
		s.warn("could not reach %s to check it now (%v); adding it as given", ns.Location, err)
	default:
		return ns, err
	}
	return ns, nil
}
