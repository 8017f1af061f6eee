package warmrandom

import (
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name: the balancer's name in dubbo-go's registry ("loadbalance: warmrandom").
const Name = "warmrandom"

// Options of New; the zero value gives Dubbo's warmup and math/rand/v2.
type Options struct {
	Warmup warmup.Options // warmup of new providers (curve, refresh step)
	// Env is the balancer's clocks and random source; the zero value is
	// the real ones (see lbenv.Env).
	Env lbenv.Env
}

// Balancer picks at random in proportion to warm weight, for every service
// and method, safely from concurrent callers.
type Balancer struct {
	skeleton.Front[algo.Alias] // Select, Describe, Rebuilds

	sk   *skeleton.Balancer[algo.Alias]
	rand algo.Rand
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	opts.Env = opts.Env.WithDefaults()
	b := &Balancer{rand: algo.Source(opts.Env.Rand)}
	b.sk = skeleton.New(skeleton.Spec[algo.Alias]{
		Name: Name, Warmup: opts.Warmup, Env: opts.Env,
		Build: table,
		Pick:  b.pick,
	})
	b.Front = skeleton.FrontOf(b.sk)
	return b
}

// table is the alias table of a snapshot's warm weights; nil when they are
// all equal, as a uniform pick needs none.
func table(s *member.Set, _ *member.View[algo.Alias]) *algo.Alias { return s.WarmAlias() }

// pick draws a slot of v in proportion to its warm weight.
func (b *Balancer) pick(v *member.View[algo.Alias], _ base.Invocation) int {
	return v.Table.Draw(b.rand.Uint64(), v.Len())
}
