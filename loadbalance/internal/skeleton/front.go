package skeleton

import (
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/builds"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
)

// Front is the public face a balancer embeds: Select, Describe and
// Rebuilds, and the build knobs for the module's tests and simulator
// (package internal/builds) without a public method.
type Front[T any] struct {
	hook
	sk *Balancer[T]
}

type hook = builds.Hook // unexported: the knobs stay out of the API

// FrontOf returns the Front of sk.
func FrontOf[T any](sk *Balancer[T]) Front[T] { return Front[T]{hook: builds.NewHook(sk), sk: sk} }

// Select implements dubbo-go's loadbalance.LoadBalance (Balancer.Select).
func (f Front[T]) Select(l []base.Invoker, inv base.Invocation) base.Invoker {
	return f.sk.Select(l, inv)
}

// Describe implements describe.Source.
func (f Front[T]) Describe(now int64) []describe.Method { return f.sk.Describe(now) }

// Rebuilds implements describe.Source.
func (f Front[T]) Rebuilds() describe.Rebuilds { return f.sk.Rebuilds() }
