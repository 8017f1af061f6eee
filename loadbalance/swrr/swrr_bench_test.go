package swrr

import (
	"fmt"
	"testing"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// BenchmarkSelect compares ours with dubbo-go's roundrobin, the same smooth
// weighted round robin, on weighted lists.
func BenchmarkSelect(b *testing.B) {
	ours := lbtest.Named{Name: Name, LB: New(Options{})}
	lbtest.BenchSelect(b, lbtest.With(ours, lbtest.DubboGo("roundrobin")...), lbtest.Mixed, lbtest.Call("Say"))
}

// BenchmarkRebuild measures what a warmup refresh costs off the hot path:
// quantizing warm weights and building the cycle that follows the old one.
func BenchmarkRebuild(b *testing.B) {
	for _, c := range []struct {
		name    string
		weights func(n int) []float64
	}{
		// One provider warming among equal ones.
		{"one-warming", func(n int) []float64 {
			w := make([]float64, n)
			for i := range w {
				w[i] = 100
			}
			w[0] = 37.6
			return w
		}},
		// Every weight different: the most distinct weights.
		{"all-distinct", func(n int) []float64 {
			w := make([]float64, n)
			for i := range w {
				w[i] = 50 + float64(i)*0.37
			}
			return w
		}},
	} {
		for _, n := range lbtest.Sizes {
			w := c.weights(n)
			from := make([]int, n)
			for i := range from {
				from[i] = i
			}
			prev := newSmoothCycle(quantizeWeights(w), 0)
			b.Run(fmt.Sprintf("%s/N=%d", c.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					w[0] += 0.1 // a new warm weight at every refresh
					prev = followCycle(prev, quantizeWeights(w), from)
				}
				b.ReportMetric(float64(len(prev.seq)), "cycle")
			})
		}
	}
}
