package loadaware

import (
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// benchList returns n providers with latencies and fresh reports, past
// their blackout by the time the benchmark runs (Blackout 0).
func benchList(n int) []base.Invoker {
	l, now := lbtest.FeedCycle(lbtest.N(n), 200*time.Millisecond, 64, 0)
	for i, p := range l {
		report(p, now, 100+float64(i%7)*10, 0.2+float64(i%5)/10)
	}
	return l
}

// BenchmarkSelect compares loadaware (both costs) with dubbo-go's p2c and
// random on the same lists, in the same run.
func BenchmarkSelect(b *testing.B) {
	lbtest.BenchSelect(b, lbtest.With(
		lbtest.Named{Name: Name, LB: New(Options{Blackout: time.Nanosecond})},
		append([]lbtest.Named{{Name: Name + "-java", LB: New(Options{Cost: CostJava, Blackout: time.Nanosecond})}},
			lbtest.DubboGo("p2c", "random")...)...),
		benchList, lbtest.Call("Say"))
}
