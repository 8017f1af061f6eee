package lbtest_test

import (
	"testing"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/fewestactive"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lalb"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
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
	return append(ours(lbenv.Env{}), lbtest.DubboGo("random", "leastactive", "roundrobin", "consistenthashing", "p2c")...)
}

// ours are every balancer of the module, on the clocks of env.
func ours(env lbenv.Env) []lbtest.Named {
	return []lbtest.Named{
		{Name: warmrandom.Name, LB: warmrandom.New(warmrandom.Options{Env: env})},
		{Name: fewestactive.Name, LB: fewestactive.New(fewestactive.Options{Env: env})},
		{Name: swrr.Name, LB: swrr.New(swrr.Options{Env: env})},
		{Name: ringhash.Name, LB: ringhash.New(ringhash.Options{Env: env})},
		{Name: rtadaptive.Name, LB: rtadaptive.New(rtadaptive.Options{Env: env})},
		{Name: lalb.Name, LB: lalb.New(lalb.Options{Env: env})},
		{Name: loadaware.Name, LB: loadaware.New(loadaware.Options{Env: env})},
	}
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

// BenchmarkScaleDeploy: a rolling deploy at 1 000 and 10 000 providers,
// 10 providers replaced a push: the CPU of builds and Selects a push and the Selects' latency
// (lbtest.BenchDeploy). "warm": the new providers warm up (10 min);
// "cold": they do not. dubbo-go's random, which reads every provider's
// URL on every call, runs at 1 000 only (half a second of CPU a push).
func BenchmarkScaleDeploy(b *testing.B) {
	defer lblog.Capture(func(string) {})()
	for _, warm := range []bool{true, false} {
		name := map[bool]string{true: "warm", false: "cold"}[warm]
		d := lbtest.Deploy{Batch: 10, Warm: warm}
		b.Run(name, func(b *testing.B) {
			lbtest.BenchDeploy(b, scaleSizes[1:], ours, d)
			lbtest.BenchDeploy(b, scaleSizes[1:2], func(lbenv.Env) []lbtest.Named { return lbtest.DubboGo("random") }, d)
		})
	}
}
