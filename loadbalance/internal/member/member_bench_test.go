package member

import (
	"fmt"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/warmup"
)

var sink float64

// BenchmarkWarmWeight reads the warm weight of every provider of a list, as
// a weight-aware balancer must on each pick: ours from the cached snapshot
// (found with Lookup on a fresh copy of the list, as dubbo-go's router
// chain hands one over per call), dubbo-go's with loadbalance.GetWeight.
// ns/provider is the figure to compare.
func BenchmarkWarmWeight(b *testing.B) {
	for _, n := range []int{10, 100} {
		list := make([]base.Invoker, n)
		for i := range list {
			list[i] = lbtest.Started(20000+i, time.Now().Add(-time.Duration(i)*time.Second), 600*time.Second)
		}
		copies := [2][]base.Invoker{append([]base.Invoker(nil), list...), append([]base.Invoker(nil), list...)}
		inv := lbtest.Call("Say")
		b.Run(fmt.Sprintf("lb/N=%d", n), func(b *testing.B) {
			r := NewRegistry(warmup.Options{}, nil, func(*Set, *View[table]) *table { return &table{} })
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				v, _ := r.Lookup(copies[i&1], "Say")
				for i := range n {
					sink += v.Weight(i)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/provider")
		})
		b.Run(fmt.Sprintf("dubbo-go/N=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				for _, ivk := range copies[i&1] {
					sink += float64(loadbalance.GetWeight(ivk, inv))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/provider")
		})
	}
}
