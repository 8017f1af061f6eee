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
	skeleton.Front[table] // Select, Describe, Rebuilds

	sk *skeleton.Balancer[table]
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	opts.Env = opts.Env.WithDefaults()
	b := &Balancer{}
	b.sk = skeleton.New(skeleton.Spec[table]{
		Name: Name, Warmup: opts.Warmup, Env: opts.Env,
		Build: b.build,
		Pick:  func(v *member.View[table], _ base.Invocation) int { return v.Table.next() },
	})
	b.Front = skeleton.FrontOf(b.sk)
	return b
}
