// Package random is the warmrandom balancer: weighted random selection
// over warm weights, each provider picked with a probability proportional
// to its weight, reduced while it warms up (package warmup). The pick is
// O(1) from an alias table rebuilt only when the providers or their warm
// weights change.
//
// The package keeps the name of its algorithm; it registers as warmrandom
// to stay apart from dubbo-go's own "random" (see the README's design
// section). Design notes: DESIGN.md beside this file.
package random

import (
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name is the name the balancer is registered under with dubbo-go.
const Name = "warmrandom"

// Options configure a Balancer. The zero value is ready to use.
type Options struct {
	// Warmup configures the warmup of new providers.
	Warmup warmup.Options
	// Rand is the random source, safe for concurrent use; default
	// math/rand/v2's Uint64. Tests inject a seeded one.
	Rand func() uint64
}

// Balancer is the weighted random balancer. It is safe for concurrent use;
// one Balancer serves every service and method. Select picks a provider at
// random in proportion to its warm weight.
type Balancer struct {
	*skeleton.Balancer[algo.Alias]
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	b := &Balancer{}
	b.Balancer = skeleton.New(skeleton.Spec[algo.Alias]{
		Name: Name, Warmup: opts.Warmup, Rand: opts.Rand,
		Build: func(s *member.Set, _ *member.View[algo.Alias]) *algo.Alias {
			if s.Uniform {
				return nil // a uniform pick needs no table
			}
			return algo.NewAlias(s.Weights)
		},
		Pick: b.pick,
	})
	return b
}
