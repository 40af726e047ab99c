package fetchtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// peakChildEnv marks a test binary re-executed by PeakRSS.
const peakChildEnv = "TIDEMARK_PEAK_RSS_CHILD"

// InPeakChild reports whether this process is a child started by PeakRSS
// to run the named test; a test used as a PeakRSS child skips otherwise.
func InPeakChild(name string) bool { return os.Getenv(peakChildEnv) == name }

// PeakRSS runs the test named name in a fresh process of this test binary
// and returns that process's peak resident set size (VmHWM) in bytes, as
// the child printed it with PrintPeakRSS. A fresh process is the only
// honest way to read a peak RSS: this process's high-water mark holds
// whatever ran before.
func PeakRSS(tb testing.TB, name string) uint64 {
	tb.Helper()
	if runtime.GOOS != "linux" {
		tb.Skip("peak RSS is read from /proc/self/status")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), peakChildEnv+"="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s: %v\n%s", name, err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "peak-rss-bytes "); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				tb.Fatalf("%s: %q", name, sc.Text())
			}
			return n
		}
	}
	tb.Fatalf("%s printed no peak RSS:\n%s", name, out)
	return 0
}

// PrintPeakRSS prints this process's peak resident set size for PeakRSS.
func PrintPeakRSS(tb testing.TB) {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				tb.Fatalf("VmHWM: %q", line)
			}
			fmt.Printf("peak-rss-bytes %d\n", kb<<10)
			return
		}
	}
	tb.Fatal("no VmHWM in /proc/self/status")
}

// PeakHeap runs f while sampling the heap's live objects, and returns the
// peak above the heap in use before f started.
func PeakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	<-stopped
	if v := read(); v > peak.Load() {
		peak.Store(v)
	}
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}
