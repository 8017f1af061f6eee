// Package lalb is brpc's locality-aware balancer ("la"): each provider is
// picked in proportion to its throughput over its latency, computed from
// the window of recent completions the lbactive filter records, lowered
// while its calls in flight age, with errors charged and a minimum share
// so that every provider is still probed. Picks are O(log N) from a tree
// of weights refreshed on the pick side; new providers start at the
// average weight, scaled by their warmup. It needs the lbactive filter and
// says so once per service and method when it is missing. Notes: DESIGN.md.
package lalb

import (
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name is the name the balancer is registered under with dubbo-go.
const Name = "lalb"

// Refresh rates, as masks on a pick's low random bits: the picked provider
// on 1 pick in 4, a uniformly drawn one on 1 in 8 ("Feedback").
const (
	pickRefreshMask  = 3
	otherRefreshMask = 7
	refreshBits      = 2 // bits of pickRefreshMask
)

// Options configure a Balancer. The zero value is ready to use.
type Options struct {
	// Tuning tunes the weight function; the zero value means its defaults.
	Tuning Tuning
	// Warmup configures the warmup of new providers: a warming provider
	// gets about its warm fraction of a warm one's traffic.
	Warmup warmup.Options
	// Env is the balancer's clocks and random source (lbenv.Env).
	Env lbenv.Env
	// ChargeTimeout charges every error at least the method's timeout
	// (else 3 s), brpc's rule for a call with no retry left. By default an
	// error costs PunishErrorRatio × its latency, brpc's rule while
	// retries remain.
	ChargeTimeout bool
}

// Balancer is the locality-aware balancer. It is safe for concurrent use;
// one Balancer serves every service and method.
type Balancer struct {
	skeleton.Front[table] // Select, Describe, Rebuilds

	sk                  *skeleton.Balancer[table]
	rand                algo.Rand
	opts                Tuning
	now                 func() int64
	chargeTimeout       bool
	pickMask, otherMask uint64 // the refresh rates (tests change them)
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	opts.Env = opts.Env.WithDefaults()
	b := &Balancer{opts: opts.Tuning.withDefaults(), now: opts.Env.Now, chargeTimeout: opts.ChargeTimeout,
		pickMask: pickRefreshMask, otherMask: otherRefreshMask, rand: algo.Source(opts.Env.Rand)}
	b.sk = skeleton.New(skeleton.Spec[table]{
		Name: Name, Warmup: opts.Warmup, Env: opts.Env,
		Build: b.build, Pick: b.pick, Among: b.pickAmong,
		Uncounted: "every provider keeps the weight of a new one: LALB picks at random",
		Describe: func(v *member.View[table], _ int64, ps []describe.Provider) {
			for i := range ps {
				ps[i].Weight = float64(v.Table.tree.Weight(i)) // LALB's weight
			}
		},
	})
	b.Front = skeleton.FrontOf(b.sk)
	return b
}

// pick draws a slot of v by its tree weight and refreshes weights: one
// random word, whose high bits choose the provider and low bits (which
// move the choice by at most one unit of weight) the refreshes.
func (b *Balancer) pick(v *member.View[table], _ base.Invocation) int {
	r := b.rand.Uint64()
	i := v.Table.tree.choose(r)
	if i < 0 { // every leaf 0: a snapshot never drains all, but never fail
		i = algo.IntN(b.rand.Uint64(), v.Len())
	}
	if r&b.pickMask == 0 {
		b.refresh(v, i)
	}
	if r>>refreshBits&b.otherMask == 0 {
		if j := algo.IntN(b.rand.Uint64(), v.Len()); j != i {
			b.refresh(v, j)
		}
	}
	return i
}

// pickAmong picks from list, a subset of v (Spec.Among), by the current
// tree weights, as the first try would have: not to a hung provider.
func (b *Balancer) pickAmong(v *member.View[table], list []base.Invoker, _ base.Invocation) base.Invoker {
	pick := list[algo.Weighted(len(list), func(k int) float64 {
		if i, ok := v.Index(list[k]); ok {
			return float64(v.Table.tree.Weight(i))
		}
		return 0
	}, b.rand.Uint64())]
	if i, ok := v.Index(pick); ok {
		b.refresh(v, i)
	}
	return pick
}
