package ringhash

import (
	"strconv"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// BenchmarkSelect compares ours with dubbo-go's consistenthashing on the same
// providers and a string key.
// Every balancer has seen each list once before it is timed, so that
// building a ring (milliseconds at N = 1000, once per membership) is not
// averaged into the per-call figures.
func BenchmarkSelect(b *testing.B) {
	lbs := []lbtest.Named{
		{Name: Name, LB: New(Options{})},
		{Name: Name + "-bounded", LB: New(Options{BalanceFactor: 1.25})},
		lbtest.DubboGo("consistenthashing")[0],
	}
	inv := lbtest.Call("Say", "user-12345")
	lists := map[int][]base.Invoker{}
	for _, n := range lbtest.Sizes {
		lists[n] = lbtest.N(n)
		for _, lb := range lbs {
			lb.LB.Select(lists[n], inv)
		}
	}
	lbtest.BenchSelect(b, lbs, func(n int) []base.Invoker { return lists[n] }, inv)
}

// BenchmarkSelectKeys is ours on other kinds of keys, N = 100.
func BenchmarkSelectKeys(b *testing.B) {
	list := ports(20880, 100, map[string]string{"hash.arguments": "0,1"})
	for _, c := range []struct {
		name string
		args []any
	}{
		{"string+int", []any{"tenant-7", 123456789}},
		{"int+float", []any{42, 1.5e21}},
		{"long strings", []any{string(make([]byte, 200)), string(make([]byte, 200))}},
	} {
		b.Run(c.name, func(b *testing.B) {
			lb := New(Options{})
			inv := lbtest.Call("Say", c.args...)
			b.ReportAllocs()
			for b.Loop() {
				sinkInv = lb.Select(list, inv)
			}
		})
	}
	b.Run("owner unavailable", func(b *testing.B) {
		l := ports(20880, 100, nil)
		lb := New(Options{})
		inv := lbtest.Call("Say", "user-"+strconv.Itoa(12345))
		lb.Select(l, inv).(*base.BaseInvoker).SetAvailable(false)
		b.ReportAllocs()
		for b.Loop() {
			sinkInv = lb.Select(l, inv)
		}
	})
}

var sinkInv base.Invoker
