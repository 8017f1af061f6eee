package warmrandom

import (
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
)

// Select implements dubbo-go's loadbalance.LoadBalance: it returns the
// provider of l that the balancer picks for inv, nil for an empty
// list. It allocates nothing and takes no lock.
func (b *Balancer) Select(l []base.Invoker, inv base.Invocation) base.Invoker {
	return b.sk.Select(l, inv)
}

// Describe implements describe.Source: every (service, method) the
// balancer holds providers for, their figures read at now
// (rpcstatus.Nanotime's clock).
func (b *Balancer) Describe(now int64) []describe.Method { return b.sk.Describe(now) }

// Rebuilds implements describe.Source.
func (b *Balancer) Rebuilds() describe.Rebuilds { return b.sk.Rebuilds() }
