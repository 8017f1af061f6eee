// Package random is weighted random selection over warm weights: each
// provider is picked with a probability proportional to its weight, reduced
// while it warms up (package warmup).
//
// Unlike Dubbo's RandomLoadBalance, which walks prefix sums on every call
// (and decides "weighted or not" from the first invoker alone), the pick is
// O(1) from an alias table rebuilt only when the providers or their warm
// weights change.
package random

import (
	"math/rand/v2"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name is the name the balancer is registered under with dubbo-go.
const Name = "warmrandom"

// Options configure a Balancer. The zero value is ready to use.
type Options struct {
	// Warmup configures the warmup of new providers.
	Warmup warmup.Options
}

// Balancer is the weighted random balancer. It is safe for concurrent use;
// one Balancer serves every service and method.
type Balancer struct {
	views *member.Registry[Alias]
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	return &Balancer{views: member.NewRegistry(opts.Warmup, func(s *member.Set, _ *member.View[Alias]) *Alias {
		if s.Uniform {
			return nil // a uniform pick needs no table
		}
		return NewAlias(s.Weights)
	})}
}

// Select picks a provider of invokers at random in proportion to its warm
// weight: nil for an empty list, the only provider of a list of one.
func (b *Balancer) Select(invokers []base.Invoker, inv base.Invocation) base.Invoker {
	switch len(invokers) {
	case 0:
		return nil
	case 1:
		return invokers[0]
	}
	v, i, exact := b.views.Pick(invokers, inv.MethodName(), pick)
	if !exact {
		return v.PickAmong(invokers)
	}
	return invokers[i]
}

// pick draws a slot of v in proportion to its warm weight.
func pick(v *member.View[Alias]) int {
	if v.Table == nil {
		return rand.IntN(v.Len())
	}
	return v.Table.Pick(rand.Uint64())
}
