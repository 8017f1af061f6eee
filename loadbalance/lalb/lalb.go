package lalb

import (
	"math/bits"

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

// Refresh rates (see "Feedback" in DESIGN.md), as masks on the low random bits of a pick: the picked
// provider is refreshed on 1 pick in 4, a uniformly drawn one on 1 in 8.
// TestRefreshRates measures what these rates cost against refreshing both
// on every pick.
const (
	pickRefreshMask  = 3
	otherRefreshMask = 7
	refreshBits      = 2 // bits of pickRefreshMask
)

// Options configure a Balancer. The zero value is ready to use.
type Options struct {
	// Tuning tunes the weight function. Its zero value means the defaults
	// listed with Tuning; invalid fields are replaced by their defaults.
	Tuning Tuning
	// Warmup configures the warmup of new providers. A provider that warms
	// up (package warmup: uptime below its warmup period) starts at the
	// average weight times its warm fraction and then follows the ramp,
	// about its warm fraction of a warm provider's traffic (see
	// table.warming). Uptimes are read on Env.Wall.
	Warmup warmup.Options
	// Env is the balancer's clocks and random source; the zero value is
	// the real ones (see lbenv.Env).
	Env lbenv.Env
	// ChargeTimeout charges every error at least the method's timeout
	// (methods.<m>.timeout, Java's <m>.timeout, then
	// timeout, else 3 s), brpc's rule for a call
	// with no retry left. By default (false) an error costs
	// PunishErrorRatio × its latency, brpc's rule while retries remain (the
	// failover cluster retries twice by default): charging a 3 s timeout
	// for every error would let one business exception in a window of 128
	// divide a 1 ms provider's weight by 25.
	ChargeTimeout bool
}

// Balancer is the locality-aware balancer. It is safe for concurrent use;
// one Balancer serves every service and method. Select picks a provider
// with probability proportional to its LALB weight.
type Balancer struct {
	skeleton.Front[table] // Select, Describe, Rebuilds

	sk            *skeleton.Balancer[table]
	rand          algo.Rand
	opts          Tuning
	now           func() int64
	chargeTimeout bool
	// pickMask and otherMask are pickRefreshMask and otherRefreshMask;
	// tests change them to measure other rates.
	pickMask, otherMask uint64
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

// pick draws a slot of v in proportion to its tree weight and refreshes
// weights on the pick side (see "Feedback" in DESIGN.md): the picked
// provider on 1 pick in 4, a uniformly drawn one on 1 in 8.
func (b *Balancer) pick(v *member.View[table], _ base.Invocation) int {
	// One random word: its high bits choose the provider (Choose keeps the
	// high word of r × total), its low bits, which move that choice by at
	// most one unit of weight, decide the refreshes.
	r := b.rand.Uint64()
	i := v.Table.tree.choose(r)
	if i < 0 {
		// Every leaf 0: impossible, as a snapshot never drains every
		// provider, but a pick must not fail.
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

// pickAmong picks from list, a subset of the snapshot (a failover retry's,
// or the two candidates of a pick while a new snapshot is built), in
// proportion to the current tree weights: a retry should go where the
// first try would most likely have gone, not to a hung provider. O(len(list)).
func (b *Balancer) pickAmong(v *member.View[table], list []base.Invoker, _ base.Invocation) base.Invoker {
	t := v.Table
	var total int64
	for _, inv := range list {
		if i, ok := v.Index(inv); ok {
			total += t.tree.Weight(i)
		}
	}
	if total <= 0 {
		return v.PickAmong(list, b.rand.Uint64())
	}
	hi, _ := bits.Mul64(b.rand.Uint64(), uint64(total))
	r := int64(hi)            // uniform in [0, total)
	pick := list[len(list)-1] // if concurrent refreshes lowered the weights meanwhile
	for _, inv := range list {
		if i, ok := v.Index(inv); ok {
			if r -= t.tree.Weight(i); r < 0 {
				pick = inv
				break
			}
		}
	}
	if i, ok := v.Index(pick); ok {
		b.refresh(v, i)
	}
	return pick
}

// weights returns the current tree weight of each provider of invokers
// for method, in the order of invokers (0 for a provider the balancer
// does not know). It is for inspection (tests, simulators, debugging): it
// allocates, and builds a snapshot if none matches invokers.
func (b *Balancer) weights(invokers []base.Invoker, method string) []int64 {
	out := make([]int64, len(invokers))
	if len(invokers) == 0 {
		return out
	}
	v, _ := b.sk.View(invokers, method)
	if v == nil {
		return out
	}
	for k, inv := range invokers {
		if i, ok := v.Index(inv); ok {
			out[k] = v.Table.tree.Weight(i)
		}
	}
	return out
}
