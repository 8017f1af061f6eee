package loadaware

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
)

// table is the balancer's state for one snapshot of providers.
type table struct {
	// alias draws candidates in proportion to warm weight; nil when every
	// weight is equal.
	alias *algo.Alias
	cfg   config
	// next is when the values are next computed (ns).
	next atomic.Int64
	// fallback is true while no provider has a usable report.
	fallback atomic.Bool
	// providers are what the balancer keeps of each provider.
	providers []provider
	// mean is the mean value of the providers with a usable report
	// (float64 bits): a provider without one borrows it.
	mean atomic.Uint64
	// meanRTT is the mean latency EWMA of the providers that have one
	// (ns, float64 bits), for the fallback and Java's cost.
	meanRTT atomic.Uint64
	// problems are those of the configuration, reported once.
	problems []string
}

// provider is what the balancer keeps of one provider.
type provider struct {
	// val is the provider's value (float64 bits), the WRR weight, the
	// capacity or the Java load, when own is true.
	val atomic.Uint64
	own atomic.Bool
	// since is when the provider's current run of usable reports began
	// (ns, the report's arrival); 0: none. Carried over from the table
	// before for the providers that stay.
	since atomic.Int64
}

// value returns provider i's value: its own, or the mean it borrows.
func (t *table) value(i int) float64 {
	p := &t.providers[i]
	if p.own.Load() {
		return math.Float64frombits(p.val.Load())
	}
	return math.Float64frombits(t.mean.Load())
}

// build makes the table of a snapshot, with the parameters of its first
// provider's URL. A provider that stays carries its since over.
func (b *Balancer) build(s *member.Set, prev *member.View[table]) *table {
	t := &table{alias: s.WarmAlias()}
	o, problems := parseConfig(b.opts, skeleton.Params(s, nil))
	t.problems = problems
	var before []string
	if prev != nil {
		before = prev.Table.problems
	}
	skeleton.Report(Name, s, problems, before)
	t.cfg = o.config()
	t.fallback.Store(true)
	t.providers = make([]provider, s.Len())
	member.Carry(s, prev, func(i, j int) { t.providers[i].since.Store(prev.Table.providers[j].since.Load()) })
	return t
}

// update computes the providers' values from their reports at now, once
// per update period: the caller that wins the period does it, the others
// go on with the values as they are.
func (b *Balancer) update(v *member.View[table], now int64) {
	t := v.Table
	next := t.next.Load()
	if now < next || !t.next.CompareAndSwap(next, now+t.cfg.update) {
		return
	}
	n := v.Len()
	var sum, rttSum float64
	var usable, rtts int
	for i := range n {
		if d, ok := v.Stat(i).EWMA().Value(now); ok {
			rttSum += float64(d)
			rtts++
		}
	}
	if rtts > 0 {
		t.meanRTT.Store(math.Float64bits(rttSum / float64(rtts)))
	} else {
		t.meanRTT.Store(math.Float64bits(minRTT))
	}
	for i := range n {
		p := &t.providers[i]
		val, ok := b.reported(v, p, i, now)
		if ok {
			p.val.Store(math.Float64bits(val))
			sum += val
			usable++
		}
		p.own.Store(ok)
	}
	if usable == 0 {
		t.fallback.Store(true)
		return
	}
	mean := sum / float64(usable)
	if !algo.Finite(mean) {
		mean = math.MaxFloat64 // values near the float's limit, not from a parsed report
	}
	t.mean.Store(math.Float64bits(mean))
	t.fallback.Store(false)
}

// reported returns provider i's value by its last report at now, and
// false when the report is missing, expired, in its blackout or gives no
// finite value; p is what the table keeps of it.
func (b *Balancer) reported(v *member.View[table], p *provider, i int, now int64) (float64, bool) {
	t := v.Table
	l := v.Provider(i).Load()
	at := l.At()
	if at == 0 || now-at > t.cfg.expiration {
		p.since.Store(0)
		return 0, false
	}
	util, hasUtil := l.Utilization()
	var val float64
	var ok bool
	switch t.cfg.cost {
	case CostJava:
		// Dubbo Java's cost weighs every provider by Java's load, which
		// Java providers and ours (lbload) both send; a provider's own
		// utilization only where it sends no load (not one of ours).
		if val, ok = l.JavaLoad(); !ok {
			val, ok = util*100, hasUtil
		}
	default:
		// A report without our fields (a Dubbo Java provider's) has no
		// utilization and no rates: the provider borrows the mean value.
		// Its load is the machine's, not its own (DESIGN.md).
		qps, eps, rates := l.Rates()
		if !hasUtil {
			break
		}
		if t.cfg.cost == CostWRR {
			val, ok = wrrWeight(qps, eps, util, t.cfg.penalty)
			ok = ok && rates
			break
		}
		// The RTT of its last call, not decayed: the pick's decayed RTT
		// over it makes a silent provider cheaper (Balancer.cost).
		rtt, known := v.Stat(i).EWMA().Last()
		if !known {
			rtt = time.Duration(math.Float64frombits(t.meanRTT.Load()))
		}
		val, ok = concurrencyCapacity(l.Report().Capacity, qps, eps, util, t.cfg.penalty, float64(rtt))
	}
	if !ok || !(val >= 0) || !algo.Finite(val) {
		p.since.Store(0)
		return 0, false
	}
	since := p.since.Load()
	if since == 0 {
		since = at
		p.since.Store(since)
	}
	if now-since < t.cfg.blackout {
		return 0, false
	}
	return val, true
}
