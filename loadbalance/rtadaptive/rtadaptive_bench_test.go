package rtadaptive

import (
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common/extension"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// benchList returns n providers whose statistics hold a window of
// completions, latencies of 1 to 4 ms and, on one provider in 17, errors,
// so that every estimate is computed in full.
func benchList(n int) []base.Invoker {
	list := lbtest.N(n)
	now := rpcstatus.Nanotime()
	for i, p := range list {
		feed(p, now-int64(200*ms), 128, time.Duration(1+i%4)*ms, false)
		if i%17 == 0 {
			feed(p, now-int64(50*ms), 8, 2*ms, true)
		}
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
		list := lbtest.Mixed(n)
		now := rpcstatus.Nanotime()
		for i, p := range list {
			feed(p, now-int64(200*ms), 128, time.Duration(1+i%4)*ms, false)
		}
		return list
	}
	lbtest.BenchSelect(b, []lbtest.Named{
		{Name: Name, LB: New(Options{})},
		{Name: "dubbo-go-p2c", LB: extension.GetLoadbalance("p2c")},
	}, weighted, lbtest.Call("Say"))
}
