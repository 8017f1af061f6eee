package rtadaptive

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// benchList returns n providers whose statistics hold a window of
// completions, latencies of 1 to 4 ms and, on one provider in 17, errors,
// so that every estimate is computed in full.
func benchList(n int) []base.Invoker {
	list, now := lbtest.FeedCycle(lbtest.N(n), 200*ms, 128, 0)
	for i := 0; i < n; i += 17 {
		feed(list[i], now-int64(50*ms), 8, 2*ms, true)
	}
	return list
}

// BenchmarkSelect compares ours with dubbo-go's p2c (and random, for
// scale) on the same lists, sequentially and in parallel.
func BenchmarkSelect(b *testing.B) {
	lbtest.BenchSelect(b, lbtest.With(lbtest.Named{Name: Name, LB: New(Options{})}, lbtest.DubboGo("p2c", "random")...), benchList, lbtest.Call("Say"))
}

// BenchmarkSelectWeighted is the same with unequal weights, where the
// candidates come from an alias table.
func BenchmarkSelectWeighted(b *testing.B) {
	weighted := func(n int) []base.Invoker {
		list, _ := lbtest.FeedCycle(lbtest.Mixed(n), 200*ms, 128, 0)
		return list
	}
	lbtest.BenchSelect(b, lbtest.With(lbtest.Named{Name: Name, LB: New(Options{})}, lbtest.DubboGo("p2c")...), weighted, lbtest.Call("Say"))
}
