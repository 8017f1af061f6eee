package lalb

// The balancer's state for one snapshot: the weight tree and how a pick
// refreshes its leaves from the statistics (see "Feedback" in DESIGN.md).

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// table is the state of one snapshot: the tree and what a refresh needs.
// Only the tree changes after it is built.
type table struct {
	// tree holds the providers' weights.
	tree *weightTree
	// timeouts are what each error of a provider is charged at least; nil
	// when the latency rule alone charges errors (ChargeTimeout off).
	timeouts []time.Duration
	// live is the number of providers that are not drained: the n of floorWeight.
	live int
	// ref and refQPS are the mean weight and the mean throughput (calls/s)
	// of the fully warm providers with samples when the table was built,
	// 0 if there were none; they set the weight of a warming provider (see
	// warming). The snapshot is rebuilt every warmup refresh step while a
	// provider warms up, so they are never older than that.
	ref, refQPS float64
	// refLatency is the mean success latency (ns, float64 bits) of the
	// providers with samples when the table was built: calls in flight on
	// a provider without samples of its own are judged against it. If none
	// had samples (a cold start), the first refresh of a provider with
	// samples sets it, once.
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

// recentHorizon is the age beyond which a window's completions are dropped
// from a provider's weight, once it has MinSamples newer ones.
const recentHorizon = 500 * time.Millisecond

// weight returns the provider's own LALB weight from its window and calls
// in flight (delay is their mean age), whether it has enough samples for
// one, its mean success latency and its throughput (calls/s, as providerWeight
// counts it before discounting errors).
//
// A window that spans more than recentHorizon (a provider that gets few
// calls: one held at its floor, or any provider of a consumer that sees a
// slice of the traffic) is read from its completions of the last
// recentHorizon only, at least MinSamples of them, so that old samples do
// not outlive a change (see DESIGN.md, "Sparse statistics").
func (b *Balancer) weight(st *rpcstatus.Stats, timeout, delay time.Duration, now int64) (float64, bool, time.Duration, float64) {
	sum := st.Window().Summary()
	if sum.Span > recentHorizon {
		if now == 0 {
			now = b.now()
		}
		sum = st.Window().Recent(now-int64(recentHorizon), b.opts.MinSamples)
	}
	in := callStats{
		Samples:        sum.Samples,
		Errors:         sum.Errors,
		Span:           sum.Span,
		SuccessLatency: sum.SuccessLatency,
		ErrorLatency:   sum.ErrorLatency,
		Timeout:        timeout,
	}
	if delay > 0 {
		// providerWeight needs only the mean age: one call started delay ago.
		in.Inflight, in.InflightStartSum = 1, now-int64(delay)
	}
	w, ok := providerWeight(in, now, b.opts)
	qps := minQPS
	if sum.Samples >= 2 && sum.Span > 0 {
		qps = max(float64(sum.Samples-1)/sum.Span.Seconds(), minQPS)
	}
	return w, ok, sum.SuccessLatency, qps
}

// warming returns the weight of a provider with samples, w, at throughput
// qps, given its warm fraction. A warm provider keeps w. A warming one gets
// its warm fraction of the weight it would have at the warm providers'
// mean throughput, w × refQPS / qps, capped at their mean weight ref: so
// its traffic follows the warmup ramp, still lowered by its latency,
// errors and hanging calls, but never raised above the ramp because it is
// faster than the others.
//
// Scaling w by the warm fraction alone would compound: LALB's weight grows
// with the provider's throughput, which the scaled weight itself holds
// down, so the provider would sit at its floor for the whole warmup and
// take its full share only at the end. Normalising the throughput to the
// warm providers' mean, which the warming provider does not drive, avoids
// that.
func (t *table) warming(w, qps, warm float64) float64 {
	if warm >= 1 || t.ref <= 0 || t.refQPS <= 0 {
		return w
	}
	return warm * min(w*t.refQPS/qps, t.ref)
}

// newcomer returns the weight of a provider without enough samples of its
// own: the average weight avg times its warm fraction, lowered as the
// in-flight penalty would if its calls hang (brpc has no penalty for a
// server without samples, so a new provider that never answers keeps the
// average until its calls time out).
func (t *table) newcomer(avg, warm float64, delay time.Duration, o Tuning) float64 {
	w := avg * warm
	if ref := math.Float64frombits(t.refLatency.Load()); delay > 0 && ref > 0 {
		if limit := o.PunishInflightRatio * ref; float64(delay) > limit {
			w *= limit / float64(delay)
		}
	}
	return w
}

// build makes the table of a snapshot. Every leaf is recomputed from the
// statistics, which the snapshot carries over by pointer for the providers
// that stay, so what the tree learned about them is kept (it is a function
// of those statistics) and is as fresh as it can be; a provider without
// samples of its own starts at the average weight of those with samples
// times its warm fraction. prev supplies the reference latency when no
// provider has samples. A staying provider's timeout is carried over.
func (b *Balancer) build(s *member.Set, prev *member.View[table]) *table {
	n := s.Len()
	now := b.now()
	t := &table{}
	if b.chargeTimeout {
		t.timeouts = make([]time.Duration, n)
		if prev != nil && prev.Table.timeouts != nil {
			member.Carry(s, prev, func(i, j int) { t.timeouts[i] = prev.Table.timeouts[j] })
		}
		for i, d := range t.timeouts {
			if d == 0 { // a newcomer
				t.timeouts[i], _ = urlparam.MethodTimeout(s.Invokers[i].GetURL(), s.Method)
			}
		}
	}
	warm, raw, qps := floatWork.Get(n), floatWork.Get(n), floatWork.Get(n)
	defer floatWork.Put(warm)
	defer floatWork.Put(raw)
	defer floatWork.Put(qps)
	known := boolWork.Get(n)
	defer boolWork.Put(known)
	delays := durationWork.Get(n)
	defer durationWork.Put(delays)
	var knownSum, refSum, refQPS, latSum float64
	var knownN, refN, latN int
	for i := range n {
		warm[i] = warmFraction(s, i)
		if warm[i] == 0 {
			continue
		}
		t.live++
		st := s.Stat(i)
		delays[i] = st.InflightDelay(now)
		w, ok, lat, q := b.weight(st, t.timeout(i), delays[i], now)
		if !ok {
			continue
		}
		raw[i], known[i], qps[i] = w, true, q
		knownSum += w
		knownN++
		if warm[i] >= 1 {
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
	for i := range n {
		switch {
		case warm[i] == 0:
		case known[i]:
			raw[i] = t.warming(raw[i], qps[i], warm[i])
		default:
			raw[i] = t.newcomer(avg, warm[i], delays[i], b.opts)
		}
		total += raw[i]
	}
	sum := int64(min(total, maxSum))
	leaves := int64Work.Get(n)
	defer int64Work.Put(leaves)
	for i := range n {
		if warm[i] > 0 {
			leaves[i] = treeWeight(raw[i], sum, t.live, b.opts)
		}
	}
	t.tree = newWeightTree(leaves)
	return t
}

// The work memory of builds (see algo.Work): at 10 000 providers a change
// would otherwise leave about 500 KB of it to the garbage collector.
var (
	floatWork    algo.Work[float64]
	int64Work    algo.Work[int64]
	boolWork     algo.Work[bool]
	durationWork algo.Work[time.Duration]
)

// maxSum bounds float sums of weights converted to int64.
const maxSum = float64(1 << 62)

// warmFraction returns the share of its full weight that provider i of s
// gets now, in (0, 1], or 0 for a drained provider (weight 0 while others
// have weight). LALB has no use for static weights beyond that: the
// latencies it measures say what a provider can take.
func warmFraction(s *member.Set, i int) float64 {
	w := s.Weight(i)
	if !(w > 0) {
		return 0
	}
	full := s.Meta(i).Weight
	if !(full > 0) || w >= full { // all drained: the Set gives each weight 1
		return 1
	}
	return w / full
}
