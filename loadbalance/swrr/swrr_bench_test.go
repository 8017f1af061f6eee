package swrr

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	dgroundrobin "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/roundrobin"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

var _ loadbalance.LoadBalance = (*Balancer)(nil)

// BenchmarkSelect compares ours with dubbo-go's roundrobin, the same smooth
// weighted round robin, on weighted lists.
func BenchmarkSelect(b *testing.B) {
	weighted := func(n int) []base.Invoker {
		w := make([]string, n)
		for i := range w {
			w[i] = []string{"100", "200", "50"}[i%3]
		}
		return lbtest.Weighted(w...)
	}
	lbtest.BenchSelect(b, []lbtest.Named{
		{Name: Name, LB: New(Options{})},
		{Name: "dubbo-go-roundrobin", LB: dgroundrobin.NewRRLoadBalance()},
	}, weighted, lbtest.Call("Say"))
}
