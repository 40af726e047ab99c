package ingest

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
)

// A holder's default identity is host:pid (see HolderID). When a claim's
// holder names a process on this host that is no longer running, the
// process crashed: nobody will heartbeat or settle its run, and waiting
// out its lease only delays the source. Such a claim is taken over at once,
// its run recorded lost, exactly as if its lease had expired. Taking over
// is always safe for the data (a stale holder's settlement is fenced off by
// the token); deciding too eagerly would only waste a fetch, so every doubt
// (another host, a custom identity, a probe that cannot tell) means "not
// gone".

// HolderID is the default holder identity of process pid on host.
func HolderID(host string, pid int) string { return host + ":" + strconv.Itoa(pid) }

// HolderSlot is the identity of the n-th worker at once under the holder
// base in one process (n from 1): base itself for the first, so that a
// restarted worker re-enters its own runs, and base#n for each other one
// working beside it (two Pipelines, or Run beside RunOnce), so that none
// of them takes the others' claims for its own. A slot of a default
// identity (host:pid#n) names the process as host:pid does.
func HolderSlot(base string, n int) string {
	if n <= 1 {
		return base
	}
	return base + "#" + strconv.Itoa(n)
}

// ParseHolder splits a default holder identity, or a slot of one (see
// HolderSlot), into host and pid; ok is false for any other form (a
// custom --holder).
func ParseHolder(holder string) (host string, pid int, ok bool) {
	if i := strings.LastIndexByte(holder, '#'); i >= 0 {
		n, err := strconv.Atoi(holder[i+1:])
		if err != nil || n < 2 || strconv.Itoa(n) != holder[i+1:] {
			return "", 0, false
		}
		holder = holder[:i]
	}
	i := strings.LastIndexByte(holder, ':')
	if i <= 0 {
		return "", 0, false
	}
	pid, err := strconv.Atoi(holder[i+1:])
	if err != nil || pid <= 0 || strconv.Itoa(pid) != holder[i+1:] {
		return "", 0, false
	}
	return holder[:i], pid, true
}

// HolderGone reports whether holder is a process on host that is not
// running, as alive tells. alive is asked only about a pid on host.
func HolderGone(holder, host string, alive func(pid int) bool) bool {
	h, pid, ok := ParseHolder(holder)
	if !ok || host == "" || h != host || alive == nil {
		return false
	}
	return !alive(pid)
}

// Liveness tells a store which holders are gone: processes of this host
// that are no longer running. A nil *Liveness knows of none.
type Liveness struct {
	Host string
	// Alive reports whether the process pid of Host is running; when it
	// cannot tell, it must answer true.
	Alive func(pid int) bool
	// Every bounds how often a store looks among the claims of this host
	// for claims of gone holders, when it claims due sources (ClaimDue)
	// or a drain lists them (TakeOverGone) (0: DefaultLivenessEvery): a
	// process's first look is at once, so a restarted worker takes over
	// its crashed predecessor's claims at once, due or not; later looks
	// come only once this has passed. A claim of one named source that
	// meets a gone holder takes it over at once regardless.
	Every time.Duration
}

// DefaultLivenessEvery is the Liveness.Every of a zero Liveness: the
// scheduler's default poll.
const DefaultLivenessEvery = 5 * time.Second

// Interval returns l.Every, or its default.
func (l *Liveness) Interval() time.Duration {
	if l == nil || l.Every <= 0 {
		return DefaultLivenessEvery
	}
	return l.Every
}

// Gone reports whether holder is a process of l.Host that is not running.
func (l *Liveness) Gone(holder string) bool {
	if l == nil {
		return false
	}
	return HolderGone(holder, l.Host, l.Alive)
}

// Stands reports whether a claim by holder whose lease expires at
// leaseExpiresAt still stands at now: its lease has not expired and its
// holder is not gone. A claim that does not stand is taken over, its run
// lost.
func (l *Liveness) Stands(holder string, leaseExpiresAt, now time.Time) bool {
	return leaseExpiresAt.After(now) && !l.Gone(holder)
}

// ClaimState is the state of src's claim at now, as a reader of this
// host can tell it (see tidemark.ClaimState), by the rule Stands claims by:
// a claim that does not stand is no run under way, whatever its lease
// says. A nil *Liveness knows of no gone holder.
func (l *Liveness) ClaimState(src tidemark.Source, now time.Time) tidemark.ClaimState {
	switch {
	case src.ClaimHolder == "":
		return ""
	case src.LeaseExpiresAt == nil || !src.LeaseExpiresAt.After(now):
		return tidemark.ClaimExpired
	case l.Gone(src.ClaimHolder):
		return tidemark.ClaimGone
	}
	return tidemark.ClaimRunning
}

// Running reports whether holder is a process of this host (host:pid)
// that is running, as far as this host can tell (where it cannot, every
// process counts as running).
func (l *Liveness) Running(holder string) bool {
	if l == nil || l.Alive == nil {
		return false
	}
	host, pid, ok := ParseHolder(holder)
	return ok && host == l.Host && l.Alive(pid)
}

// Local returns this host's Liveness: its host name and a probe of its
// processes (signal 0 on Unix; elsewhere every process counts as alive).
func Local() *Liveness {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return nil
	}
	return &Liveness{Host: host, Alive: processAlive}
}

// Presence is a running daemon as it announces itself under its holder
// (its base holder, before any slot): two live processes must never share
// one, since each would re-enter the other's claims as its own.
type Presence struct {
	Holder string
	// Instance is random, one per process.
	Instance  string
	Host      string
	PID       int
	StartedAt time.Time
	SeenAt    time.Time
}

// PresenceEvery is how often a daemon announces itself; PresenceStale,
// after how long without an announcement a presence is no longer live.
const (
	PresenceEvery = 30 * time.Second
	PresenceStale = 3 * PresenceEvery
)

// Live reports whether o, another presence under me's holder, can be a
// live process: not one of this host (as l tells) whose process is gone,
// and not one with me's own pid on me's host (a predecessor of this very
// process: a container restarted as pid 1). A presence of another host is
// live until it goes stale.
func (me Presence) Live(o Presence, l *Liveness) bool {
	if o.Host == me.Host && o.PID == me.PID {
		return false
	}
	if l != nil && l.Host != "" && o.Host == l.Host && l.Alive != nil && !l.Alive(o.PID) {
		return false
	}
	return true
}
