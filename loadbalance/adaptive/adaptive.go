package adaptive

import (
	"math"
	"sync/atomic"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name is Dubbo Java's name of the balancer, under which package extension
// registers it.
const Name = "adaptive"

// Options configure a Balancer. The zero value is ready to use.
type Options struct {
	// Warmup configures the warmup of new providers (the weight in the
	// cost and in the draw among ties).
	Warmup warmup.Options
	// Env is the balancer's clocks and random source; the zero value is
	// the real ones (see lbenv.Env).
	Env lbenv.Env
}

// Balancer is the adaptive balancer. It is safe for concurrent use; one
// Balancer serves every service and method.
type Balancer struct {
	skeleton.Front[table] // Select, Describe, Rebuilds

	sk   *skeleton.Balancer[table]
	rand algo.Rand
	now  func() int64
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	opts.Env = opts.Env.WithDefaults()
	b := &Balancer{rand: algo.Source(opts.Env.Rand), now: opts.Env.Now}
	b.sk = skeleton.New(skeleton.Spec[table]{
		Name: Name, Warmup: opts.Warmup, Env: opts.Env,
		Build: b.build, Pick: b.pick, Among: b.among, Describe: b.describe,
		Uncounted: "no provider is asked for its load and response times are unknown, so adaptive picks at random",
	})
	b.Front = skeleton.FrontOf(b.sk)
	return b
}

// table is a snapshot's state.
type table struct {
	// picked is when each provider was last picked (ns), carried over; a
	// newcomer counts as picked when first seen, as Java's pickTime.
	picked []atomic.Int64
	probe  []int64 // twice each provider's timeout (ns): unpicked for that long, it costs 0
}

func (b *Balancer) build(s *member.Set, prev *member.View[table]) *table {
	now := b.now()
	t := &table{picked: make([]atomic.Int64, s.Len()), probe: make([]int64, s.Len())}
	member.Carry(s, prev, func(i, j int) {
		t.picked[i].Store(prev.Table.picked[j].Load())
		t.probe[i] = prev.Table.probe[j]
	})
	for i, inv := range s.Invokers {
		if t.probe[i] != 0 {
			continue // carried over: only newcomers' URLs are read
		}
		d, _ := urlparam.MethodTimeout(inv.GetURL(), s.Method)
		t.probe[i] = 2 * int64(d)
		t.picked[i].Store(now)
	}
	return t
}

// pick returns the better of two distinct providers drawn uniformly, as
// Java's selectByP2C; a winner in a run of recent failures gives way to the
// winner of another pair, up to skeleton.FailurePairs pairs (DESIGN.md).
func (b *Balancer) pick(v *member.View[table], _ base.Invocation) int {
	now := b.now()
	k := b.pair(v, now)
	f := skeleton.RecentFailures(v.Set, failureWindow, b.now)
	for n := 1; n < skeleton.FailurePairs && f.Penalty(v.Stat(k)) > 0; n++ {
		k = b.pair(v, now)
	}
	v.Table.picked[k].Store(now)
	return k
}

// failureWindow is how long a provider's latest failure weighs (ns).
const failureWindow = int64(skeleton.FailureWindow)

// pair returns the better of two distinct providers of v drawn uniformly.
func (b *Balancer) pair(v *member.View[table], now int64) int {
	i, j := algo.Pair(b.rand.Uint64(), v.Len())
	return b.better(v, i, j, now)
}

// among applies the same rule to list, a subset of v.
func (b *Balancer) among(v *member.View[table], list []base.Invoker, _ base.Invocation) base.Invoker {
	k, l := algo.Pair(b.rand.Uint64(), len(list))
	i, okI := v.Index(list[k])
	j, okJ := v.Index(list[l])
	if !okI || !okJ {
		return list[k]
	}
	now := b.now()
	m := b.better(v, i, j, now)
	v.Table.picked[m].Store(now)
	return v.Invokers[m]
}

// better returns whichever of providers i and j of v costs less at now,
// as Java's chooseLowLoadInvoker: on equal costs one drawn in proportion
// to warm weight; a provider of unusable weight (drained, ejected) loses
// to one with a usable weight.
func (b *Balancer) better(v *member.View[table], i, j int, now int64) int {
	wi, wj := v.Weight(i), v.Weight(j)
	switch ui, uj := algo.Usable(wi), algo.Usable(wj); {
	case ui && !uj:
		return i
	case uj && !ui:
		return j
	case !ui:
		wi, wj = 1, 1
	}
	ci, cj := b.cost(v, i, now), b.cost(v, j, now)
	switch {
	case ci < cj:
		return i
	case cj < ci:
		return j
	}
	if algo.Float64(b.rand.Uint64())*(wi+wj) < wi {
		return i
	}
	return j
}

// cost is provider i's cost at now: 0 when it was not picked for twice
// its timeout, else Java's load with this consumer's RTT.
func (b *Balancer) cost(v *member.View[table], i int, now int64) float64 {
	t := v.Table
	if now-t.picked[i].Load() > t.probe[i] {
		return 0
	}
	load, _ := v.Provider(i).Load().JavaLoad()
	st := v.Stat(i)
	rtt, _ := st.EWMA().Value(now)
	return javaCost(load, float64(rtt)/1e6, st.Active(), algo.JavaSuccess(st.Total(), st.Failed(), st.Active()), v.Weight(i))
}

// javaCost is algo.JavaCost, a NaN or infinite one counted as the largest.
func javaCost(load, rttMs float64, inflight int64, success, weight float64) float64 {
	if c := algo.JavaCost(load, rttMs, inflight, success, weight); algo.Finite(c) {
		return c
	}
	return math.MaxFloat64
}

// describe gives each provider its cost.
func (b *Balancer) describe(v *member.View[table], now int64, ps []describe.Provider) {
	for i := range ps {
		ps[i].CostMs = b.cost(v, i, now)
	}
}
