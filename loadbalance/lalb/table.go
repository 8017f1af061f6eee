package lalb

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// table is the state of one snapshot; only the tree changes once built.
type table struct {
	tree        *weightTree
	timeouts    []time.Duration // what an error is charged at least; nil without ChargeTimeout
	live        int             // providers not drained: floorWeight's n
	ref, refQPS float64         // the warm providers' mean weight and throughput (warming)
	// refLatency is the providers' mean success latency (ns, float64 bits),
	// for newcomer; at a cold start, the first refresh with samples sets it.
	refLatency atomic.Uint64
}

// timeout returns what an error of provider i is charged at least.
func (t *table) timeout(i int) time.Duration {
	if t.timeouts == nil {
		return 0
	}
	return t.timeouts[i]
}

// refresh recomputes the tree weight of provider i from its statistics.
func (b *Balancer) refresh(v *member.View[table], i int) {
	t := v.Table
	warm := warmFraction(v.Set, i)
	if warm == 0 {
		return // drained
	}
	st := v.Stat(i)
	var now int64
	var delay time.Duration
	if st.Active() > 0 { // the clock matters only for calls in flight
		now = b.now()
		delay = st.InflightDelay(now)
	}
	w, known, lat, qps := b.weight(st, t.timeout(i), delay, now)
	total := t.tree.Total()
	if known {
		w = t.warming(w, qps, warm)
		if lat > 0 && t.refLatency.Load() == 0 {
			t.refLatency.CompareAndSwap(0, math.Float64bits(float64(lat)))
		}
	} else {
		w = t.newcomer(newProviderWeight(total, t.live, b.opts), warm, delay, b.opts)
	}
	nw := treeWeight(w, total, t.live, b.opts)
	old := t.tree.Weight(i)
	if d := nw - old; old > 0 && d <= old>>6 && -d <= old>>6 {
		return
	}
	t.tree.Set(i, nw)
}

// recentHorizon: a window spanning more is read from its completions of
// the last recentHorizon, at least MinSamples ("Sparse statistics").
const recentHorizon = 500 * time.Millisecond

// weight returns providerWeight of st's window, timeout and calls in
// flight (mean age delay), its mean success latency and throughput.
func (b *Balancer) weight(st *rpcstatus.Stats, timeout, delay time.Duration, now int64) (float64, bool, time.Duration, float64) {
	sum := st.Window().Summary()
	if sum.Span > recentHorizon {
		if now == 0 {
			now = b.now()
		}
		sum = st.Window().Recent(now-int64(recentHorizon), b.opts.MinSamples)
	}
	w, ok := providerWeight(callStats{Samples: sum.Samples, Errors: sum.Errors, Span: sum.Span,
		SuccessLatency: sum.SuccessLatency, ErrorLatency: sum.ErrorLatency, Timeout: timeout, Delay: delay}, b.opts)
	return w, ok, sum.SuccessLatency, rate(sum.Samples, sum.Span)
}

// warming returns the weight of a provider with samples, w at throughput
// qps, given its warm fraction: w when warm, else its warm fraction of w
// at the warm providers' mean throughput (w × refQPS / qps), at most their
// mean weight ref ("Warmup" in DESIGN.md).
func (t *table) warming(w, qps, warm float64) float64 {
	if warm >= 1 || t.ref <= 0 || t.refQPS <= 0 {
		return w
	}
	return warm * min(w*t.refQPS/qps, t.ref)
}

// newcomer returns the weight of a provider without samples enough: avg
// times its warm fraction, with the in-flight penalty of refLatency.
func (t *table) newcomer(avg, warm float64, delay time.Duration, o Tuning) float64 {
	if ref := math.Float64frombits(t.refLatency.Load()); ref > 0 {
		return penalize(avg*warm, ref, delay, o)
	}
	return avg * warm
}

// build makes the table of a snapshot, every leaf from the statistics
// (carried over with the providers that stay); a provider without samples
// starts at the average weight of those with samples times its warm
// fraction. prev supplies the timeouts and, failing samples, refLatency.
func (b *Balancer) build(s *member.Set, prev *member.View[table]) *table {
	n := s.Len()
	now := b.now()
	t := &table{}
	if b.chargeTimeout {
		t.timeouts = make([]time.Duration, n)
		member.Carry(s, prev, func(i, j int) { t.timeouts[i] = prev.Table.timeouts[j] })
		for i, d := range t.timeouts {
			if d == 0 { // a newcomer
				t.timeouts[i], _ = urlparam.MethodTimeout(s.Invokers[i].GetURL(), s.Method)
			}
		}
	}
	rows, leaves := rowWork.Get(n), leafWork.Get(n)
	defer rowWork.Put(rows)
	defer leafWork.Put(leaves)
	var knownSum, refSum, refQPS, latSum float64
	var knownN, refN, latN int
	for i := range rows {
		r := &rows[i]
		if r.warm = warmFraction(s, i); r.warm == 0 {
			continue
		}
		t.live++
		st := s.Stat(i)
		r.delay = st.InflightDelay(now)
		w, ok, lat, q := b.weight(st, t.timeout(i), r.delay, now)
		if !ok {
			continue
		}
		r.w, r.known, r.qps = w, true, q
		knownSum += w
		knownN++
		if r.warm >= 1 {
			refSum += w
			refQPS += q
			refN++
		}
		if lat > 0 {
			latSum += float64(lat)
			latN++
		}
	}
	if refN > 0 {
		t.ref = refSum / float64(refN)
		t.refQPS = refQPS / float64(refN)
	}
	switch {
	case latN > 0:
		t.refLatency.Store(math.Float64bits(latSum / float64(latN)))
	case prev != nil:
		t.refLatency.Store(prev.Table.refLatency.Load())
	}
	avg := newProviderWeight(int64(min(knownSum, maxSum)), knownN, b.opts)
	var total float64
	for i := range rows {
		switch r := &rows[i]; {
		case r.warm == 0:
		case r.known:
			r.w = t.warming(r.w, r.qps, r.warm)
		default:
			r.w = t.newcomer(avg, r.warm, r.delay, b.opts)
		}
		total += rows[i].w
	}
	sum := int64(min(total, maxSum))
	for i, r := range rows {
		if r.warm > 0 {
			leaves[i] = treeWeight(r.w, sum, t.live, b.opts)
		}
	}
	t.tree = newWeightTree(leaves)
	return t
}

// buildRow is what build knows of one provider.
type buildRow struct {
	warm, w, qps float64 // warm fraction, weight, throughput
	delay        time.Duration
	known        bool // w is the provider's own
}

// The work memory of builds.
var (
	rowWork  algo.Work[buildRow]
	leafWork algo.Work[int64]
)

// maxSum bounds float sums of weights converted to int64.
const maxSum = float64(1 << 62)

// warmFraction returns the share of its full weight provider i of s gets
// now, in (0, 1]; 0 when drained. Static weights mean nothing more to LALB.
func warmFraction(s *member.Set, i int) float64 {
	switch w, full := s.Weight(i), s.Meta(i).Weight; {
	case !(w > 0):
		return 0
	case !(full > 0) || w >= full: // all drained: the Set gives each weight 1
		return 1
	default:
		return w / full
	}
}
