package warmrandom

import (
	"testing"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// BenchmarkSelect compares ours with dubbo-go's random on weighted lists.
func BenchmarkSelect(b *testing.B) {
	lbtest.BenchSelect(b, lbtest.With(lbtest.Named{Name: Name, LB: New(Options{})}, lbtest.DubboGo("random")...),
		lbtest.Mixed, lbtest.Call("Say"))
}
