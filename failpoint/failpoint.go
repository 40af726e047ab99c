// Package failpoint names the step boundaries where a crash or a fault
// matters, so tests, operators and outside checkers can kill a real process
// at a precise point.
//
// Points are registered by the packages that own them and are inert unless
// armed. They are armed from TIDEMARK_FAILPOINTS with the syntax
//
//	name=action[@N][;name=action[@N]...]
//
// where action is crash (the process kills itself with SIGKILL, as if
// killed from outside), error (Hit returns an *Error), delay(ms) (Hit sleeps,
// or returns early when its context ends) or off. With @N the point fires
// only the Nth time it is reached; without it, every time. An unknown name or
// action is an error, never silently ignored.
package failpoint

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark/tidemark/internal/fieldtext"
)

// EnvVar is the environment variable that arms failpoints at start-up.
const EnvVar = "TIDEMARK_FAILPOINTS"

// Point is a named step boundary.
type Point struct {
	Name string `json:"name"`
	// Separates says which two steps the point stands between.
	Separates string `json:"separates"`

	mu     sync.Mutex
	action *action
	hits   int
}

type actionKind int

const (
	actOff actionKind = iota
	actCrash
	actError
	actDelay
)

type action struct {
	kind  actionKind
	delay time.Duration
	nth   int // 0: every time
	spec  string
}

// Error is returned by Hit when a point armed with "error" fires.
type Error struct{ Name string }

func (e *Error) Error() string { return "failpoint " + e.Name + ": injected error" }

var (
	regMu    sync.RWMutex
	registry = map[string]*Point{}
	armed    atomic.Int32 // number of armed points: the production fast path
)

// Register declares a point. Packages call it from a package-level var, so
// every point of a linked package is known before start-up arms any.
// Registering one name twice panics: two steps cannot share a boundary name.
func Register(name, separates string) *Point {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("failpoint: duplicate registration of " + name)
	}
	p := &Point{Name: name, Separates: separates}
	registry[name] = p
	return p
}

// List returns every registered point, sorted by name.
func List() []*Point {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]*Point, 0, len(registry))
	for _, p := range registry {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Active reports whether any point is armed. A step that can skip a
// boundary's natural place (a single-statement write has no moment between
// its last write and its commit) takes the path with the boundary instead
// while any point is armed.
func Active() bool { return armed.Load() != 0 }

// Hit is called at the boundary. Unarmed it costs one atomic load.
func (p *Point) Hit(ctx context.Context) error {
	if armed.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	a := p.action
	if a == nil {
		p.mu.Unlock()
		return nil
	}
	p.hits++
	fire := a.nth == 0 || p.hits == a.nth
	p.mu.Unlock()
	if !fire {
		return nil
	}
	switch a.kind {
	case actCrash:
		crash(p.Name)
	case actError:
		return &Error{Name: p.Name}
	case actDelay:
		t := time.NewTimer(a.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// crash ends the process on the spot, as SIGKILL from outside would: no
// deferred function runs, no buffer is flushed, no transaction is closed.
// os.Process.Kill is SIGKILL on Unix and TerminateProcess on Windows, so the
// same code builds and behaves alike on both, with no build tag.
func crash(name string) {
	fmt.Fprintf(os.Stderr, "failpoint %s: crash\n", name)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	// SIGKILL cannot be caught; should the kill fail, exit without cleanup.
	os.Exit(137)
}

// Arm parses spec and arms the points it names, replacing every earlier
// arming. On any error nothing is armed.
func Arm(spec string) error {
	type pair struct {
		p *Point
		a *action
	}
	var pairs []pair
	regMu.RLock()
	for _, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, act, ok := strings.Cut(part, "=")
		if !ok {
			regMu.RUnlock()
			return fmt.Errorf("failpoint: %q: want name=action[@N]", part)
		}
		name = strings.TrimSpace(name)
		p := registry[name]
		if p == nil {
			regMu.RUnlock()
			return fmt.Errorf("failpoint: unknown point %q (tidemark failpoints lists them)", name)
		}
		a, err := parseAction(strings.TrimSpace(act))
		if err != nil {
			regMu.RUnlock()
			return fmt.Errorf("failpoint: %s: %w", name, err)
		}
		pairs = append(pairs, pair{p, a})
	}
	regMu.RUnlock()
	Reset()
	for _, pr := range pairs {
		pr.p.mu.Lock()
		if pr.a.kind != actOff {
			if pr.p.action == nil {
				armed.Add(1)
			}
			pr.p.action = pr.a
		}
		pr.p.hits = 0
		pr.p.mu.Unlock()
	}
	return nil
}

// ArmFromEnv arms the points named in TIDEMARK_FAILPOINTS, if it is set.
func ArmFromEnv() error {
	spec, ok := os.LookupEnv(EnvVar)
	if !ok || strings.TrimSpace(spec) == "" {
		return nil
	}
	if err := Arm(spec); err != nil {
		return fmt.Errorf("%s: %w", EnvVar, err)
	}
	return nil
}

// Reset disarms every point and clears hit counts.
func Reset() {
	regMu.RLock()
	defer regMu.RUnlock()
	for _, p := range registry {
		p.mu.Lock()
		if p.action != nil {
			armed.Add(-1)
		}
		p.action = nil
		p.hits = 0
		p.mu.Unlock()
	}
}

// State is a point as `tidemark failpoints` shows it.
type State struct {
	Name      string `json:"name"`
	Separates string `json:"separates"`
	Armed     string `json:"armed,omitempty"`
}

// States lists points' states.
type States []State

// Snapshot returns every registered point's state, sorted by name.
func Snapshot() States {
	points := List()
	out := make(States, 0, len(points))
	for _, p := range points {
		out = append(out, State{p.Name, p.Separates, p.Armed()})
	}
	return out
}

// WriteText writes a table of the points, the steps each separates and
// what it is armed with.
func (l States) WriteText(w io.Writer) error {
	lines := []string{"NAME\tSEPARATES\tARMED"}
	for _, s := range l {
		lines = append(lines, s.Name+"\t"+s.Separates+"\t"+s.Armed)
	}
	return fieldtext.Table(w, lines...)
}

// Armed returns the spec a point is armed with, or "".
func (p *Point) Armed() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.action == nil {
		return ""
	}
	return p.action.spec
}

func parseAction(s string) (*action, error) {
	a := &action{spec: s}
	body := s
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		n, err := strconv.Atoi(s[i+1:])
		if err != nil || n < 1 {
			return nil, fmt.Errorf("action %q: @N needs a positive whole number", s)
		}
		a.nth = n
		body = s[:i]
	}
	switch {
	case body == "crash":
		a.kind = actCrash
	case body == "error":
		a.kind = actError
	case body == "off":
		a.kind = actOff
	case strings.HasPrefix(body, "delay(") && strings.HasSuffix(body, ")"):
		ms, err := strconv.Atoi(body[len("delay(") : len(body)-1])
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("action %q: delay takes milliseconds, delay(250)", s)
		}
		a.kind = actDelay
		a.delay = time.Duration(ms) * time.Millisecond
	default:
		return nil, fmt.Errorf("unknown action %q (want crash, error, delay(ms) or off)", body)
	}
	return a, nil
}
