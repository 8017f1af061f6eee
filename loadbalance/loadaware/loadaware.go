package loadaware

import (
	"math"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name is the name the balancer is registered under with dubbo-go.
const Name = "loadaware"

// Defaults of Options (DESIGN.md, "Stale and missing reports"): gRPC
// WRR's, but a shorter blackout.
const (
	defaultBlackout     = 3 * time.Second
	defaultExpiration   = 3 * time.Minute
	defaultUpdatePeriod = time.Second
	defaultErrorPenalty = 1.0
	defaultProbeAfter   = 5 * time.Second
	// failureWindow is how long a provider's latest failure weighs
	// (skeleton.Failures), in ns.
	failureWindow = int64(skeleton.FailureWindow)
	// minRTT is the least RTT a cost charges (1 µs).
	minRTT = float64(time.Microsecond)
)

// Options configure a Balancer. The zero value is ready to use; zero or
// negative durations and penalty mean the default (a zero Blackout or
// ProbeAfter is none when set through its URL parameter). The URL
// parameters loadaware.cost, .blackout, .expiration, .update-period,
// .error-penalty and .probe-after override them per (service, method).
type Options struct {
	// Warmup configures the warmup of new providers.
	Warmup warmup.Options
	// Env is the balancer's clocks and random source; the zero value is
	// the real ones (see lbenv.Env).
	Env lbenv.Env
	// Cost is the cost function; default CostCapacity.
	Cost Cost
	// Blackout is how long after a provider's reports begin (or begin
	// again after expiring) they are not used; default 3 s.
	Blackout time.Duration
	// Expiration is the age past which a provider's last report is no
	// longer used; default 3 min.
	Expiration time.Duration
	// UpdatePeriod is how often weights are computed from the reports;
	// default 1 s.
	UpdatePeriod time.Duration
	// ErrorPenalty weighs the failures a provider reports against its
	// utilization; default 1.
	ErrorPenalty float64
	// ProbeAfter is how much longer than the other candidate a provider
	// with no call in flight may go without a call before it wins a pick
	// whatever its cost, so that its report and latency are fresh again;
	// default 5 s.
	ProbeAfter time.Duration
}

// Balancer is the load-aware balancer. It is safe for concurrent use; one
// Balancer serves every service and method.
type Balancer struct {
	skeleton.Front[table] // Select, Describe, Rebuilds

	sk   *skeleton.Balancer[table]
	opts Options
	rand algo.Rand
	two  skeleton.TwoChoices[table] // the pick: the cheaper of two candidates
	now  func() int64
	// holdSilent, for the tests' negative control only, keeps a silent
	// provider's cost as it was (no decay with the silence; see cost).
	holdSilent bool
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	opts.Env = opts.Env.WithDefaults()
	if opts.Cost == "" {
		opts.Cost = CostCapacity
	}
	if opts.Blackout <= 0 {
		opts.Blackout = defaultBlackout
	}
	if opts.Expiration <= 0 {
		opts.Expiration = defaultExpiration
	}
	if opts.UpdatePeriod <= 0 {
		opts.UpdatePeriod = defaultUpdatePeriod
	}
	if opts.ErrorPenalty <= 0 {
		opts.ErrorPenalty = defaultErrorPenalty
	}
	if opts.ProbeAfter <= 0 {
		opts.ProbeAfter = defaultProbeAfter
	}
	b := &Balancer{opts: opts, rand: algo.Source(opts.Env.Rand), now: opts.Env.Now}
	spec := skeleton.Spec[table]{Name: Name, Warmup: opts.Warmup, Env: opts.Env, Build: b.build, Pick: b.pick, Describe: b.describe}
	b.two = skeleton.TwoChoices[table]{Rand: b.rand, Alias: func(v *member.View[table]) *algo.Alias { return v.Table.alias }, Better: b.better,
		Window: failureWindow, Now: b.now}
	spec.Among = b.two.Among
	spec.Uncounted = "no provider is asked for its load and response times are unknown, so the balancer picks at random"
	b.sk = skeleton.New(spec)
	b.Front = skeleton.FrontOf(b.sk)
	return b
}

// pick returns the cheaper of two candidates drawn from v, the values
// being updated first when their period is over.
func (b *Balancer) pick(v *member.View[table], inv base.Invocation) int {
	if now := b.now(); now >= v.Table.next.Load() {
		b.update(v, now)
	}
	return b.two.Pick(v, inv)
}

// better reports whether provider i of v is the better choice against j:
// a provider with no call in flight that has gone ProbeAfter longer than
// the other without a call; else the cheaper, the RTTs compared as of
// the later of their last samples (rpcstatus.Pair), without reading the
// clock.
func (b *Balancer) better(v *member.View[table], i, j int) bool {
	si, sj := v.Stat(i), v.Stat(j)
	ei, ej := si.EWMA(), sj.EWMA()
	if p := v.Table.cfg.probe; p > 0 {
		switch gap := rpcstatus.SilentLonger(ei, ej); {
		case gap > p && si.Active() == 0:
			return true
		case gap < -p && sj.Active() == 0:
			return false
		}
	}
	ri, rj, ki, kj := rpcstatus.Pair(ei, ej)
	if b.holdSilent {
		ri, rj = lastRTT(si), lastRTT(sj)
	}
	// Each failure of a recent run counts as a call in flight, and the
	// RTT, which fast failures make short, as at least the other's.
	f := skeleton.RecentFailures(v.Set, failureWindow, b.now)
	fi, fj := f.Penalty(si), f.Penalty(sj)
	if fi > 0 && kj {
		ri = max(ri, rj)
	}
	if fj > 0 && ki {
		rj = max(rj, ri)
	}
	ci, cj := b.cost(v, i, si, ri, ki, fi), b.cost(v, j, sj, rj, kj, fj)
	if ci == cj {
		return b.rand.Uint64()&1 == 0
	}
	return ci < cj
}

// cost returns what a pick weighs provider i of v at, st its statistics,
// rtt its RTT (ns) decayed by the silence since its last call (known
// false: none, it borrows the mean), failures the failures charged as
// calls in flight: by its value (or the mean it borrows), else
// rtadaptive's cost. The value is frozen while the provider gets no call,
// so the cost fades with the silence as rtadaptive's does (DESIGN.md,
// "Stale and missing reports"). The cost is finite: NaN or ±Inf is the
// worst cost, math.MaxFloat64.
func (b *Balancer) cost(v *member.View[table], i int, st *rpcstatus.Stats, rtt float64, known bool, failures int64) float64 {
	t := v.Table
	if !known {
		rtt = math.Float64frombits(t.meanRTT.Load())
	}
	active := st.Active() + failures
	if t.fallback.Load() {
		return finiteCost(max(rtt, minRTT) * float64(max(active, 0)+1))
	}
	val := t.value(i)
	switch t.cfg.cost {
	case CostJava:
		return finiteCost(algo.JavaCost(val, rtt/1e6, active, algo.JavaSuccess(st.Total(), st.Failed(), st.Active()), v.Weight(i)))
	case CostWRR:
		return finiteCost(float64(max(active, 0)+1) / val * silence(st, rtt, known))
	}
	return finiteCost(max(rtt, minRTT) * float64(max(active, 0)+1) / val)
}

// finiteCost returns c, or math.MaxFloat64, the worst cost, when c is NaN
// or infinite.
func finiteCost(c float64) float64 {
	if algo.Finite(c) {
		return c
	}
	return math.MaxFloat64
}

// lastRTT returns st's latency average as of its last call (ns).
func lastRTT(st *rpcstatus.Stats) float64 {
	d, _ := st.EWMA().Last()
	return float64(d)
}

// silence returns the decay of st's latency average since its last call,
// given its decayed value rtt: 1 for a provider with no sample.
func silence(st *rpcstatus.Stats, rtt float64, known bool) float64 {
	last, ok := st.EWMA().Last()
	if !known || !ok || last <= 0 {
		return 1
	}
	return min(rtt/float64(last), 1)
}

// describe gives each provider of v its effective weight (the weight its
// report gives, or the mean weight it borrows) and its cost.
func (b *Balancer) describe(v *member.View[table], now int64, ps []describe.Provider) {
	t := v.Table
	f := skeleton.RecentFailures(v.Set, failureWindow, func() int64 { return now })
	for i := range ps {
		st := v.Stat(i)
		d, known := st.EWMA().Value(now)
		ps[i].CostMs = b.cost(v, i, st, float64(d), known, f.Penalty(st)) / 1e6
		if !t.fallback.Load() && t.cfg.cost != CostJava {
			ps[i].Weight = t.value(i) // the weight, or the capacity
		}
	}
}
