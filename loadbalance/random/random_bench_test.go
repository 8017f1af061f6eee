package random

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

var _ loadbalance.LoadBalance = (*Balancer)(nil)

// BenchmarkSelect compares ours with dubbo-go's random on weighted lists.
func BenchmarkSelect(b *testing.B) {
	lbtest.BenchSelect(b, lbtest.With(lbtest.Named{Name: Name, LB: New(Options{})}, lbtest.DubboGo("random")...),
		lbtest.Mixed, lbtest.Call("Say"))
}
