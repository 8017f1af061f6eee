package shortestresponse

import (
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// benchList returns n weighted providers (lbtest.Mixed) whose means cycle
// through 1 to 4 ms, so that about a quarter tie at the shortest.
func benchList(n int) []base.Invoker {
	l, _ := lbtest.FeedCycle(lbtest.Mixed(n), time.Second, 16, 0)
	return l
}

// BenchmarkSelect compares shortestresponse with dubbo-go's leastactive,
// the closest built-in (Java's shortestresponse is least-active with the
// mean response as a factor; dubbo-go has none), on the same lists, in the
// same run.
func BenchmarkSelect(b *testing.B) {
	defer lblog.Capture(func(string) {})() // the benchmark never calls: not a missing filter
	lbtest.BenchSelect(b, lbtest.With(lbtest.Named{Name: Name, LB: New(Options{})}, lbtest.DubboGo("leastactive")...),
		benchList, lbtest.Call("Say"))
}

// BenchmarkSelectTied is the most work a pick does: every provider has
// the same mean and none has a call in flight, so the scan cannot stop
// early and every provider is tied (as at the start, before any call
// completes); dubbo-go's leastactive on the same lists, in the same run.
func BenchmarkSelectTied(b *testing.B) {
	defer lblog.Capture(func(string) {})()
	lbtest.BenchSelect(b, lbtest.With(lbtest.Named{Name: Name, LB: New(Options{})}, lbtest.DubboGo("leastactive")...),
		func(n int) []base.Invoker {
			l := lbtest.Mixed(n)
			lbtest.FeedAll(l, rpcstatus.Nanotime()-int64(time.Second), 16, 2*time.Millisecond)
			return l
		}, lbtest.Call("Say"))
}
