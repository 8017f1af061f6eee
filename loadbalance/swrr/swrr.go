package swrr

import (
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name is the name the balancer is registered under with dubbo-go.
const Name = "swrr"

// Options configure a Balancer. The zero value is ready to use.
type Options struct {
	// Warmup configures the warmup of new providers.
	Warmup warmup.Options
	// Env is the balancer's clocks and random source; the zero value is
	// the real ones (see lbenv.Env).
	Env lbenv.Env
}

// Balancer is the smooth weighted round-robin balancer. It is safe for
// concurrent use; one Balancer serves every service and method. Select
// returns the next provider of the cycle of the invocation's method.
type Balancer struct {
	skeleton.Front[smoothCycle] // Select, Describe, Rebuilds

	sk *skeleton.Balancer[smoothCycle]
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	opts.Env = opts.Env.WithDefaults()
	b := &Balancer{}
	b.sk = skeleton.New(skeleton.Spec[smoothCycle]{
		Name: Name, Warmup: opts.Warmup, Env: opts.Env,
		Build: b.build,
		Pick:  func(v *member.View[smoothCycle], _ base.Invocation) int { return v.Table.Next() },
	})
	b.Front = skeleton.FrontOf(b.sk)
	return b
}

// build makes the cycle of a snapshot: at a random position for the first
// snapshot of a (service, method), following the previous one after that
// (followCycle).
func (b *Balancer) build(s *member.Set, prev *member.View[smoothCycle]) *smoothCycle {
	q := quantizeWeights(s.Weights())
	if prev == nil {
		return newSmoothCycle(q, b.sk.Rand())
	}
	from := intWork.Get(s.Len())
	defer intWork.Put(from)
	for i := range from {
		from[i] = -1
	}
	member.Carry(s, prev, func(i, j int) { from[i] = j })
	return followCycle(prev.Table, q, from)
}
