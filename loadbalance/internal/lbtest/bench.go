package lbtest

import (
	"fmt"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/consistenthashing" // registers dubbo-go's own
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/leastactive"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/p2c"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/random"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/roundrobin"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/builds"
)

// Sizes are the provider counts every balancer benchmark runs at.
var Sizes = []int{10, 100, 1000}

// BenchSelect benchmarks Select of each balancer in lbs (name → balancer)
// on the lists that list(n) makes, for every n in Sizes, sequentially and
// with b.RunParallel. Calls alternate between two copies of the list, as
// dubbo-go's router chain hands out a fresh slice per call, so no balancer
// can recognise the list by its address. Run ours and dubbo-go's built-in
// in one call so that they are measured in the same run.
func BenchSelect(b *testing.B, lbs []Named, list func(n int) []base.Invoker, inv base.Invocation) {
	BenchSelectSizes(b, Sizes, lbs, list, inv)
}

// BenchSelectSizes is BenchSelect at the provider counts sizes.
func BenchSelectSizes(b *testing.B, sizes []int, lbs []Named, list func(n int) []base.Invoker, inv base.Invocation) {
	for _, n := range sizes {
		l := list(n)
		copies := [2][]base.Invoker{append([]base.Invoker(nil), l...), append([]base.Invoker(nil), l...)}
		for _, lb := range lbs {
			// The snapshot is built before the clock starts (in the
			// background above member.DefaultInlineUpTo providers).
			lb.LB.Select(copies[0], inv)
			WaitBuilds(lb.LB)
			b.Run(fmt.Sprintf("%s/N=%d/seq", lb.Name, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					sinkInvoker = lb.LB.Select(copies[i&1], inv)
				}
			})
			b.Run(fmt.Sprintf("%s/N=%d/par", lb.Name, n), func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					var got base.Invoker
					for i := 0; pb.Next(); i++ {
						got = lb.LB.Select(copies[i&1], inv)
					}
					_ = got
				})
			})
		}
	}
}

// Named is a balancer and the name its benchmarks carry.
type Named struct {
	Name string
	LB   loadbalance.LoadBalance
}

var sinkInvoker base.Invoker

// DubboGo returns dubbo-go's own balancers of the given names, as its
// cluster finds them, to benchmark beside ours; each is named
// "dubbo-go-<name>".
func DubboGo(names ...string) []Named {
	out := make([]Named, len(names))
	for i, n := range names {
		out[i] = Named{Name: "dubbo-go-" + n, LB: dgext.GetLoadbalance(n)}
	}
	return out
}

// With returns ours followed by others.
func With(ours Named, others ...Named) []Named { return append([]Named{ours}, others...) }

// WaitBuilds waits until lb, a balancer of the module, builds no snapshot
// off a call's path; it returns at once for any other balancer.
func WaitBuilds(lb any) {
	if c, ok := builds.Of(lb); ok {
		c.WaitBuilds()
	}
}
