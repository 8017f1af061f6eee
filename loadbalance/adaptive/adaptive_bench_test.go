package adaptive

import (
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// benchList returns n weighted providers (lbtest.Mixed) with latencies and
// Java load reports.
func benchList(n int) []base.Invoker {
	l, now := lbtest.FeedCycle(lbtest.Mixed(n), 200*time.Millisecond, 64, 0)
	for i, p := range l {
		report(p, now, 10+float64(i%7)*10)
	}
	return l
}

// BenchmarkSelect compares adaptive with dubbo-go's p2c, the closest
// built-in (two choices over the provider's success rate and latency), on
// the same lists, in the same run.
func BenchmarkSelect(b *testing.B) {
	defer lblog.Capture(func(string) {})() // the benchmark never calls: not a missing filter
	lbtest.BenchSelect(b, lbtest.With(lbtest.Named{Name: Name, LB: New(Options{})}, lbtest.DubboGo("p2c")...),
		benchList, lbtest.Call("Say"))
}
