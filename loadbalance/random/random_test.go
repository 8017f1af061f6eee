package random

import (
	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"github.com/dubbogo-lb/lb/warmup"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

func TestSharesFollowWeights(t *testing.T) {
	b := New(Options{})
	for _, c := range []struct {
		weights []string
		want    []float64
	}{
		{[]string{"1", "9"}, []float64{10, 90}},
		{[]string{"1", "1", "2"}, []float64{25, 25, 50}},
		{[]string{"100", "100"}, []float64{50, 50}},
	} {
		got := lbtest.Shares(b, lbtest.Weighted(c.weights...), lbtest.Call("Say"), 100_000)
		assert.InDeltaSlice(t, c.want, got, 1.5, "weights %v", c.weights)
	}
}

// Dubbo decides "weighted or not" from the first invoker alone; equal first
// weights must not make us uniform.
func TestWeightedEvenWhenTheFirstTwoAreEqual(t *testing.T) {
	got := lbtest.Shares(New(Options{}), lbtest.Weighted("1", "1", "2"), lbtest.Call("Say"), 100_000)
	assert.InDelta(t, 50, got[2], 1.5)
}

func TestConformance(t *testing.T) {
	lbtest.Conformance(t, lbtest.Subject{WarmShares: true,
		New: func(w warmup.Options) loadbalance.LoadBalance { return New(Options{Warmup: w}) }})
}
