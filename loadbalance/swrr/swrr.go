// Package swrr is nginx's smooth weighted round robin over warm weights:
// providers are picked in a fixed, evenly interleaved order in which each
// appears in proportion to its weight. Weights 5, 1, 1 give the cycle
// A A B A C A A, never A A A A A B C.
//
// The reference is Dubbo's RoundRobinLoadBalance, which runs nginx's step
// on every pick over shared per-provider counters. This balancer differs in
// three ways:
//
//   - The pick costs one atomic increment. The cycle is computed when the
//     providers or their warm weights change, into an immutable array, and
//     each (service, method) walks it with its own atomic counter: the
//     exact nginx sequence, with no lock and no pass over the providers.
//   - A weight change (a provider's weight, or its warm weight, recomputed
//     every 100 ms while it warms up) rescales nginx's current values to
//     the new sum of weights instead of resetting them as Dubbo does: each
//     provider keeps the picks it is owed, and the new cycle starts at the
//     state nearest to that (see Follow), so the order stays smooth across
//     the change. Providers that leave are dropped, new ones start owing
//     nothing.
//   - Each consumer starts its first cycle of a (service, method) at a
//     random position, so a fleet of consumers started together does not
//     send its first calls to the same provider in lock-step. Starting
//     part-way is the same as having made that many picks already: the
//     order is exactly nginx's cycle, rotated.
//
// State is kept per (service key, method), the service key including group
// and version, as dubbo-go's URLs give it; Dubbo keys it by path and method
// only, so two groups of one interface share it.
//
// Integer weights give the exact cycle when it is at most MinMaxLen (or 4
// per provider) long and cheap to build (MaxWork); others are rounded to a
// shorter cycle of the same proportions within one unit per provider, and
// fractional warm weights are scaled to integers with Resolution steps (see
// Quantize). A provider whose weight is 0 is never picked, unless every
// provider has weight 0: they then share calls evenly. A failover retry,
// which offers a subset of the providers, is answered by a weighted random
// pick within the subset.
package swrr

import (
	"math/rand/v2"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name is the name the balancer is registered under with dubbo-go.
const Name = "swrr"

// Options configure a Balancer. The zero value is ready to use.
type Options struct {
	// Warmup configures the warmup of new providers.
	Warmup warmup.Options
}

// Balancer is the smooth weighted round-robin balancer. It is safe for
// concurrent use; one Balancer serves every service and method.
type Balancer struct {
	views *member.Registry[Cycle]
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	return &Balancer{views: member.NewRegistry(opts.Warmup, build)}
}

// build makes the cycle of a snapshot: at a random position for the first
// snapshot of a (service, method), following the previous one after that.
func build(s *member.Set, prev *member.View[Cycle]) *Cycle {
	q := Quantize(s.Weights)
	if prev == nil {
		return NewCycle(q, rand.Uint64())
	}
	from := make([]int, s.Len())
	for i, inv := range s.Invokers {
		if j, ok := prev.Index(inv); ok {
			from[i] = j
		} else {
			from[i] = -1
		}
	}
	return Follow(prev.Table, q, from)
}

// Select returns the next provider of the smooth weighted round robin of
// invokers for the invocation's method: nil for an empty list, the only
// provider of a list of one.
func (b *Balancer) Select(invokers []base.Invoker, inv base.Invocation) base.Invoker {
	switch len(invokers) {
	case 0:
		return nil
	case 1:
		return invokers[0]
	}
	v, i, exact := b.views.Pick(invokers, inv.MethodName(), next)
	if !exact {
		return v.PickAmong(invokers)
	}
	return invokers[i]
}

// next returns the next slot of v's cycle.
func next(v *member.View[Cycle]) int { return v.Table.Next() }
