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

// BenchmarkSelectTied: every provider has the same mean and none has a
// call in flight, so every provider is tied (a quiet service): the draw
// among the idle providers of the smallest mean (drawLeast) reads a few
// of them, not all; dubbo-go's leastactive on the same lists, in the same
// run.
func BenchmarkSelectTied(b *testing.B) {
	defer lblog.Capture(func(string) {})()
	lbtest.BenchSelect(b, lbtest.With(lbtest.Named{Name: Name, LB: New(Options{})}, lbtest.DubboGo("leastactive")...),
		func(n int) []base.Invoker {
			l := lbtest.Mixed(n)
			lbtest.FeedAll(l, rpcstatus.Nanotime()-int64(time.Second), 16, 2*time.Millisecond)
			return l
		}, lbtest.Call("Say"))
}

// BenchmarkSelectBusyTied is the most work a pick does: every provider has
// the same mean and one call in flight, so the shortcut does not apply,
// the scan cannot stop early and every provider is tied: every count in
// flight is read, as Java reads them on every pick; dubbo-go's leastactive
// on the same lists, in the same run.
func BenchmarkSelectBusyTied(b *testing.B) {
	defer lblog.Capture(func(string) {})()
	lbtest.BenchSelect(b, lbtest.With(lbtest.Named{Name: Name, LB: New(Options{})}, lbtest.DubboGo("leastactive")...),
		func(n int) []base.Invoker {
			l := lbtest.Mixed(n)
			at := rpcstatus.Nanotime() - int64(time.Second)
			lbtest.FeedAll(l, at, 16, 2*time.Millisecond)
			for _, p := range l {
				pr := rpcstatus.Of(p.GetURL())
				pr.Begin(pr.Method("Say"), at) // one call in flight, never ended
			}
			return l
		}, lbtest.Call("Say"))
}
