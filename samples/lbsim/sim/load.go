package sim

import (
	"container/heap"
	"math"
	"time"

	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// The load a simulated provider reports, modelled on the lbload filter
// (package providerload): every reportEvery it samples its busy slots over
// its capacity (the utilization a CPU-bound provider's CPU would show),
// its calls in flight and the calls and failures it completed, smooths
// them over reportSmoothing and rebuilds the two answers; a call that asks
// gets the answers of the last sample.
const (
	reportEvery     = 100 * time.Millisecond
	reportSmoothing = time.Second
)

// load is one provider's load state.
type load struct {
	spec         *Provider
	ends         endHeap // ends of the calls in flight (ns)
	fails        endHeap // ends of those that fail
	done, failed int64
	lastDone     int64
	lastFailed   int64
	util, infl   float64
	qps, eps     float64
	answer       map[string]any
}

func newLoad(p *Provider) *load { return &load{spec: p} }

// begin records a call that ends at end.
func (l *load) begin(end int64, fail bool) {
	heap.Push(&l.ends, end)
	if fail {
		heap.Push(&l.fails, end)
	}
}

// sample folds the state at now into the averages and rebuilds the answer.
func (l *load) sample(now int64) {
	for len(l.ends) > 0 && l.ends[0] <= now {
		heap.Pop(&l.ends)
		l.done++
	}
	for len(l.fails) > 0 && l.fails[0] <= now {
		heap.Pop(&l.fails)
		l.failed++
	}
	inflight := float64(len(l.ends))
	c := float64(max(l.spec.CapacityAt(time.Duration(now-Origin)), 1))
	w := math.Exp(-float64(reportEvery) / float64(reportSmoothing))
	sec := reportEvery.Seconds()
	l.util = w*l.util + (1-w)*min(inflight, c)/c
	l.infl = w*l.infl + (1-w)*inflight
	l.qps = w*l.qps + (1-w)*float64(l.done-l.lastDone)/sec
	l.eps = w*l.eps + (1-w)*float64(l.failed-l.lastFailed)/sec
	l.lastDone, l.lastFailed = l.done, l.failed
	ms := WallOrigin.Add(time.Duration(now - Origin)).UnixMilli()
	r := loadreport.Report{TimeMs: ms, JavaLoad: 100 * l.util, CPU: l.util, Inflight: l.infl, Capacity: c, QPS: l.qps, EPS: l.eps,
		Has: loadreport.Own | loadreport.HasTime | loadreport.HasJavaLoad}
	l.answer = map[string]any{
		loadreport.JavaKey: string(loadreport.AppendJava(nil, &r)),
		loadreport.OwnKey:  string(loadreport.AppendOwn(nil, &r)),
	}
}

// sample samples every provider's load now and again after reportEvery.
func (r *run) sample() {
	now := r.s.Now()
	for _, l := range r.loads {
		l.sample(now)
	}
	r.s.At(now+int64(reportEvery), r.sample)
}

// answer is simulate.Options.Answer: the last sample's answers of
// provider p.
func (r *run) answer(p int, _ int64) map[string]any {
	if r.loads == nil || r.loads[p].answer == nil {
		return nil
	}
	return r.loads[p].answer
}

type endHeap []int64

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
