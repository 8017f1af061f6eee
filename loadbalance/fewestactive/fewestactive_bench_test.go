package fewestactive

import (
	"testing"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// BenchmarkSelect compares ours, full scan and two choices, with dubbo-go's
// leastactive on weighted lists where every provider is tied at 0 calls in
// flight: the most work for each of them (a scan plus a weighted draw).
func BenchmarkSelect(b *testing.B) {
	defer lblog.Capture(func(string) {})() // the benchmark never calls: not a missing filter
	lbtest.BenchSelect(b, []lbtest.Named{
		{Name: Name, LB: New(Options{})},
		{Name: Name + "-p2c", LB: New(Options{Choices: 2})},
		lbtest.DubboGo("leastactive")[0],
	}, lbtest.Mixed, lbtest.Call("Say"))
}
