package lalb

import (
	"math/rand/v2"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// benchSizes are the provider counts of the Balancer's benchmarks (1024 is the
// size the LALB target is stated for).
var benchSizes = []int{10, 100, 1024}

// benchList returns n providers whose statistics hold a full window of
// completions, with latencies of 1 to 4 ms, so that every refresh computes
// a real weight.
func benchList(n int) []base.Invoker {
	list, _ := lbtest.FeedCycle(lbtest.N(n), 200*ms, 128, 17)
	return list
}

var sinkInvoker base.Invoker

// BenchmarkSelect compares LALB with dubbo-go's p2c and random, sequentially
// and in parallel. Calls alternate between two copies of the list, as
// dubbo-go's router chain hands out a fresh slice per call.
func BenchmarkSelect(b *testing.B) {
	ours := lbtest.Named{Name: Name, LB: New(Options{})}
	lbtest.BenchSelectSizes(b, benchSizes, lbtest.With(ours, lbtest.DubboGo("p2c", "random")...), benchList, lbtest.Call("Say"))
}

// BenchmarkAdapterFeedback is the feedback path alone: recompute one provider's
// weight from rpcstatus and write it into the tree of N = 1024 providers.
// Select runs it twice (the picked provider and a random one).
func BenchmarkAdapterFeedback(b *testing.B) {
	bl := New(Options{})
	list := benchList(1024)
	v, _ := bl.sk.View(list, "Say")
	b.Run("seq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bl.refresh(v, rand.IntN(len(list)))
		}
	})
	b.Run("par", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bl.refresh(v, rand.IntN(len(list)))
			}
		})
	})
}

// BenchmarkSelectParts splits Select at N = 1024 into the snapshot lookup
// that every balancer of the module shares (member.Registry.Lookup, which
// compares the list with the snapshot: O(N) when dubbo-go hands over a
// fresh slice) and the rest, LALB's own pick and refreshes ("same list":
// the very slice the snapshot was built from, whose check is O(1)).
func BenchmarkSelectParts(b *testing.B) {
	bl := New(Options{})
	l := benchList(1024)
	copies := [2][]base.Invoker{append([]base.Invoker(nil), l...), append([]base.Invoker(nil), l...)}
	inv := lbtest.Call("Say")
	bl.Select(copies[0], inv)
	b.Run("lookup-only", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			v, _ := bl.sk.View(copies[i&1], "Say")
			_ = v
		}
	})
	b.Run("same-list", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkInvoker = bl.Select(copies[0], inv)
		}
	})
}
