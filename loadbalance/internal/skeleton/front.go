package skeleton

import (
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/builds"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
)

// Front is the public face of a balancer of the module, which embeds it:
// Select, Describe and Rebuilds of the skeleton the balancer wraps. It
// also carries the skeleton's build knobs to the module's tests and
// simulator (package internal/builds) without a public method.
type Front[T any] struct {
	hook
	sk *Balancer[T]
}

// hook is embedded under an unexported name so that the knobs stay out of
// the balancer's API.
type hook = builds.Hook

// FrontOf returns the Front of sk.
func FrontOf[T any](sk *Balancer[T]) Front[T] { return Front[T]{hook: builds.NewHook(sk), sk: sk} }

// Select implements dubbo-go's loadbalance.LoadBalance: it returns the
// provider of l that the balancer picks for inv, nil for an empty list. It
// allocates nothing and takes no lock.
func (f Front[T]) Select(l []base.Invoker, inv base.Invocation) base.Invoker {
	return f.sk.Select(l, inv)
}

// Describe implements describe.Source: every (service, method) the
// balancer holds providers for, their figures read at now
// (rpcstatus.Nanotime's clock).
func (f Front[T]) Describe(now int64) []describe.Method { return f.sk.Describe(now) }

// Rebuilds implements describe.Source.
func (f Front[T]) Rebuilds() describe.Rebuilds { return f.sk.Rebuilds() }
