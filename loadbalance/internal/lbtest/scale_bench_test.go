package lbtest_test

import (
	"testing"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/fewestactive"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lalb"
	"github.com/dubbogo-lb/lb/loadbalance/loadaware"
	"github.com/dubbogo-lb/lb/loadbalance/ringhash"
	"github.com/dubbogo-lb/lb/loadbalance/rtadaptive"
	"github.com/dubbogo-lb/lb/loadbalance/swrr"
	"github.com/dubbogo-lb/lb/loadbalance/warmrandom"
)

// scaleSizes are the fleet sizes of the scale tables (docs/benchmarks.md).
var scaleSizes = []int{100, 1000, 10000}

// scaleBalancers are every balancer of the module, each followed by
// dubbo-go's built-in that does the same job where there is one.
func scaleBalancers() []lbtest.Named {
	return append([]lbtest.Named{
		{Name: warmrandom.Name, LB: warmrandom.New(warmrandom.Options{})},
		{Name: fewestactive.Name, LB: fewestactive.New(fewestactive.Options{})},
		{Name: swrr.Name, LB: swrr.New(swrr.Options{})},
		{Name: ringhash.Name, LB: ringhash.New(ringhash.Options{})},
		{Name: rtadaptive.Name, LB: rtadaptive.New(rtadaptive.Options{})},
		{Name: lalb.Name, LB: lalb.New(lalb.Options{})},
		{Name: loadaware.Name, LB: loadaware.New(loadaware.Options{})},
	}, lbtest.DubboGo("random", "leastactive", "roundrobin", "consistenthashing", "p2c")...)
}

// BenchmarkScaleChange: what a change of membership costs the call that
// sees it ("seen") and, with the build it starts ("built"), at 100, 1 000
// and 10 000 providers.
func BenchmarkScaleChange(b *testing.B) {
	defer lblog.Capture(func(string) {})()
	lbtest.BenchChange(b, scaleSizes, scaleBalancers(), lbtest.Mixed, lbtest.Call("Say", "user-1"))
}

// BenchmarkScaleChangeLatency: the latency of 8 callers while one
// goroutine changes the membership.
func BenchmarkScaleChangeLatency(b *testing.B) {
	defer lblog.Capture(func(string) {})()
	lbtest.BenchChangeLatency(b, scaleSizes, scaleBalancers(), lbtest.Mixed, lbtest.Call("Say", "user-1"))
}

// BenchmarkScaleSteady: Select on an unchanged membership at the same
// sizes.
func BenchmarkScaleSteady(b *testing.B) {
	defer lblog.Capture(func(string) {})()
	lbtest.BenchSelectSizes(b, scaleSizes, scaleBalancers(), lbtest.Mixed, lbtest.Call("Say", "user-1"))
}

// BenchmarkScaleBuild: what the build of a snapshot allocates for a
// one-provider change against a build from nothing.
func BenchmarkScaleBuild(b *testing.B) {
	defer lblog.Capture(func(string) {})()
	lbtest.BenchBuild(b, scaleSizes[1:], scaleBalancers(), lbtest.Mixed, lbtest.Call("Say", "user-1"))
}
