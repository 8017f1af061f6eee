package lbmetrics

import (
	"context"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"
	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogo-lb/lb/filter"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/fewestactive"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lalb"
	"github.com/dubbogo-lb/lb/loadbalance/ringhash"
	"github.com/dubbogo-lb/lb/loadbalance/rtadaptive"
	"github.com/dubbogo-lb/lb/loadbalance/swrr"
	"github.com/dubbogo-lb/lb/loadbalance/warmrandom"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// answering is a provider that answers every call at once with one shared
// result, so that the benchmark measures the balancer and the filter.
type answering struct{ base.Invoker }

var okResult result.Result = &result.RPCResult{}

func (answering) Invoke(context.Context, base.Invocation) result.Result { return okResult }

// BenchmarkOverhead measures what the metrics cost per call, on and off
// (rpcstatus.SetDetailed) side by side, for every balancer on 10 providers
// of mixed weights: Select alone, and a whole call as the consumer makes
// it, Select then the lbactive filter around a provider that answers at
// once, from one goroutine and from every core at once. With metrics on,
// a pick adds one atomic add (the pick counter) and a call one more (the
// latency histogram); everything else is read at scrape time.
func BenchmarkOverhead(b *testing.B) {
	list := lbtest.Mixed(10)
	for i, inv := range list {
		list[i] = answering{inv}
	}
	copies := [2][]base.Invoker{append([]base.Invoker(nil), list...), append([]base.Invoker(nil), list...)}
	inv := lbtest.Call("Say", "user-12345")
	f := filter.New(filter.Options{})
	ctx := context.Background()
	for _, lb := range []struct {
		name string
		lb   loadbalance.LoadBalance
	}{
		{warmrandom.Name, warmrandom.New(warmrandom.Options{})},
		{fewestactive.Name, fewestactive.New(fewestactive.Options{})},
		{swrr.Name, swrr.New(swrr.Options{})},
		{ringhash.Name, ringhash.New(ringhash.Options{})},
		{lalb.Name, lalb.New(lalb.Options{})},
		{rtadaptive.Name, rtadaptive.New(rtadaptive.Options{})},
	} {
		for _, on := range []bool{false, true} {
			state := map[bool]string{false: "off", true: "on"}[on]
			b.Run(lb.name+"/select/metrics="+state, func(b *testing.B) {
				rpcstatus.SetDetailed(on)
				defer rpcstatus.SetDetailed(true)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					sink = lb.lb.Select(copies[i&1], inv)
				}
			})
			b.Run(lb.name+"/call/metrics="+state, func(b *testing.B) {
				rpcstatus.SetDetailed(on)
				defer rpcstatus.SetDetailed(true)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					p := lb.lb.Select(copies[i&1], inv)
					f.OnResponse(ctx, f.Invoke(ctx, p, inv), p, inv)
				}
			})
			// Every core calling at once: the counters' cache lines move
			// between cores as the filter's own do.
			b.Run(lb.name+"/call-parallel/metrics="+state, func(b *testing.B) {
				rpcstatus.SetDetailed(on)
				defer rpcstatus.SetDetailed(true)
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for i := 0; pb.Next(); i++ {
						p := lb.lb.Select(copies[i&1], inv)
						f.OnResponse(ctx, f.Invoke(ctx, p, inv), p, inv)
					}
				})
			})
		}
	}
}

var sink base.Invoker

// BenchmarkScrape measures a scrape of the balancers' metrics: one
// balancer serving 100 providers, all their series gathered by a
// Prometheus registry, as dubbo-go's endpoint does. Off the hot path: it
// runs on the scraping goroutine.
func BenchmarkScrape(b *testing.B) {
	lb := warmrandom.New(warmrandom.Options{})
	list := lbtest.N(100)
	lbtest.Counts(lb, list, lbtest.Call("Say"), 1000)
	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)
	pr := prom.NewRegistry()
	pr.MustRegister(New(Options{Registry: reg}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pr.Gather(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/provider")
}
