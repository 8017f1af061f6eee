package lbtest_test

import (
	"slices"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lalb"
	"github.com/dubbogo-lb/lb/loadbalance/ringhash"
	"github.com/dubbogo-lb/lb/loadbalance/swrr"
	"github.com/dubbogo-lb/lb/loadbalance/warmrandom"
)

// BenchmarkZones is the cost of zone-aware routing on Select at 100
// providers in two zones: off (the consumer names no zone), direct (every
// call local) and spill (a share of the calls leaves its zone).
func BenchmarkZones(b *testing.B) {
	defer lblog.Capture(func(string) {})()
	for _, c := range []struct {
		name string
		new  func() loadbalance.LoadBalance
	}{
		{warmrandom.Name, func() loadbalance.LoadBalance { return warmrandom.New(warmrandom.Options{}) }},
		{swrr.Name, func() loadbalance.LoadBalance { return swrr.New(swrr.Options{}) }},
		{lalb.Name, func() loadbalance.LoadBalance { return lalb.New(lalb.Options{}) }},
		{ringhash.Name, func() loadbalance.LoadBalance { return ringhash.New(ringhash.Options{}) }},
	} {
		for _, m := range []struct {
			name  string
			n     []int
			local map[string]string
		}{
			{"off", []int{50, 50}, nil},
			{"direct", []int{50, 50}, map[string]string{"lb.zone.local": "a"}},
			{"spill", []int{20, 80}, map[string]string{"lb.zone.local": "a", "lb.zone.callers": "a:1,b:1"}},
		} {
			b.Run(c.name+"/"+m.name, func(b *testing.B) {
				lb := c.new()
				list := lbtest.Zoned(22000, []string{"a", "b"}, m.n, m.local)
				l1, l2 := slices.Clone(list), slices.Clone(list)
				inv := lbtest.Call("Say", "user-7")
				lb.Select(l1, inv)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					if i&1 == 0 {
						lb.Select(l1, inv)
					} else {
						lb.Select(l2, inv)
					}
				}
			})
		}
	}
}
