package outbox_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
)

// memProvider is an in-memory provider holding our own writes, paginated
// like the real ones (100 a page), counting the requests it serves.
type memProvider struct {
	writes   []provider.OwnWrite
	byKey    map[string]string
	now      time.Time
	pageSize int
	requests int
}

func (m *memProvider) meta() provider.Meta {
	return provider.Meta{RequestTime: m.now, Date: m.now.Format(http.TimeFormat), Age: "0"}
}

func (m *memProvider) Post(context.Context, provider.Write) (provider.Posted, error) {
	return provider.Posted{}, provider.ErrUnsupported
}

func (m *memProvider) ListOwn(_ context.Context, q provider.ListQuery) (provider.Page, error) {
	m.requests++
	start, _ := strconv.Atoi(q.Cursor)
	end := min(start+m.pageSize, len(m.writes))
	pg := provider.Page{Writes: m.writes[start:end], Meta: m.meta()}
	if end < len(m.writes) {
		pg.Next = strconv.Itoa(end)
	}
	return pg, nil
}

func (m *memProvider) Probe(_ context.Context, w provider.Write) (provider.Probed, error) {
	m.requests++
	id, ok := m.byKey[w.Target+"\x00"+w.Parent+"\x00"+provider.BodySHA256(w.Body)]
	return provider.Probed{Found: ok, RemoteID: id, Meta: m.meta()}, nil
}

func (m *memProvider) Count(context.Context) (int64, error) { return int64(len(m.writes)), nil }

func (m *memProvider) CanWrite(context.Context, string, string) (provider.Writable, error) {
	return provider.Writable{OK: true}, nil
}

// benchWorld: n intents, of which every one but a few holes and the last
// tenth landed, emitted out of order in places; the process died with the
// last attempt in doubt.
func benchWorld(n int) ([]outbox.Intent, *memProvider) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := &memProvider{byKey: map[string]string{}, now: t0.Add(48 * time.Hour), pageSize: 100}
	intents := make([]outbox.Intent, n)
	landed := n - n/10
	for i := range intents {
		body := fmt.Sprintf("change %d: something happened upstream", i)
		target := fmt.Sprintf("room-%d", i%50)
		intents[i] = outbox.Intent{ID: fmt.Sprintf("i%07d", i), Rank: int64(i + 1), Target: target, Body: body, BodySHA256: outbox.BodySHA256([]byte(body)), State: outbox.StatePending}
		if i < landed && i%997 != 0 {
			at := t0.Add(time.Duration(i) * time.Second)
			if i%10 == 3 {
				at = at.Add(-5 * time.Second) // emitted out of order
			}
			w := provider.OwnWrite{RemoteID: fmt.Sprintf("r%07d", i), CreatedAt: at, Target: target, HasParent: true, BodySHA256: intents[i].BodySHA256}
			m.writes = append(m.writes, w)
			m.byKey[target+"\x00\x00"+w.BodySHA256] = w.RemoteID
		}
	}
	last := t0.Add(time.Duration(landed) * time.Second)
	intents[landed].State, intents[landed].LastAttemptAt = outbox.StateSending, &last
	return intents, m
}

func planInput(intents []outbox.Intent) []outbox.PlanIntent {
	out := make([]outbox.PlanIntent, len(intents))
	for i, it := range intents {
		out[i] = outbox.PlanIntent{ID: it.ID, Rank: it.Rank, Target: it.Target, HasParent: true, BodySHA256: it.BodySHA256, AttemptStartedAt: it.LastAttemptAt}
	}
	return out
}

// BenchmarkReconcile100k reconciles 100,000 intents against 100,000 own
// writes with one ordered, paginated read and the planner, against the
// baseline of one probe per intent (with the freshness rule), measured in
// the same run. It reports the provider requests of each, their ratio, the
// CPU-time ratio, and memory: MB allocated by one reconciliation with the
// collector off (an upper bound on its peak heap) and MB still live
// holding the plan.
func BenchmarkReconcile100k(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	intents, m := benchWorld(n)
	in := planInput(intents)

	// Baseline, once per run: one probe per intent.
	m.requests = 0
	start := time.Now()
	var landedByProbe int
	for _, it := range intents {
		pr, err := m.Probe(ctx, provider.Write{Target: it.Target, Body: []byte(it.Body)})
		if err != nil {
			b.Fatal(err)
		}
		attempt := it.CreatedAt
		if it.LastAttemptAt != nil {
			attempt = *it.LastAttemptAt
		}
		if res, _ := outbox.Resolve(outbox.ProbeAnswer{RequestTime: pr.Meta.RequestTime, Date: pr.Meta.Date, Age: pr.Meta.Age, Found: pr.Found}, attempt, attempt, time.Second); res == outbox.Landed {
			landedByProbe++
		}
	}
	baselineCPU := time.Since(start)
	probeRequests := m.requests

	var (
		plan     *outbox.Plan
		requests int
	)
	reconcile := func() {
		m.requests = 0
		ls, err := outbox.ReadOwn(ctx, m, time.Second, time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		p, err := outbox.MakePlan(outbox.PlanInput{Intents: in, OwnWrites: ls.Writes, ListedAt: ls.ListedAt})
		if err != nil {
			b.Fatal(err)
		}
		plan, requests = p, m.requests
	}
	b.ReportAllocs()
	b.ResetTimer()
	start = time.Now()
	for b.Loop() {
		reconcile()
	}
	perOp := time.Since(start) / time.Duration(b.N)
	b.StopTimer()

	if len(plan.Landed) != landedByProbe || len(plan.ReplayAlreadyLanded) != 0 || !plan.Accounting.Balanced {
		b.Fatalf("plan landed %d, probes landed %d, accounting %+v", len(plan.Landed), landedByProbe, plan.Accounting)
	}
	// Memory: one reconciliation with the collector off.
	runtime.GC()
	old := debug.SetGCPercent(-1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	reconcile()
	runtime.ReadMemStats(&after)
	debug.SetGCPercent(old)
	runtime.GC()
	var live runtime.MemStats
	runtime.ReadMemStats(&live)
	runtime.KeepAlive(plan)

	b.Logf("reconcile %s/op, baseline %s", perOp, baselineCPU)
	b.ReportMetric(float64(requests), "requests")
	b.ReportMetric(float64(probeRequests), "probe-requests")
	b.ReportMetric(float64(requests)/float64(probeRequests), "requests/probe-baseline")
	b.ReportMetric(float64(perOp)/float64(baselineCPU), "cpu-x/probe-baseline")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "MB-peak-bound")
	b.ReportMetric(float64(live.HeapAlloc)/(1<<20), "MB-live")
}
