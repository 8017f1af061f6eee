package random

import (
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/warmup"
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

func TestWarmupThroughMergedNacosURL(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := lbtest.NewClock(start.Add(60 * time.Second))
	b := New(Options{Warmup: warmup.Options{Now: clock.Now}})
	list := []base.Invoker{
		lbtest.Started(20000, start.Add(-time.Hour), 600*time.Second),
		lbtest.Started(20001, start, 600*time.Second), // up 60 s of 600 s
	}
	c := lbtest.Counts(b, list, lbtest.Call("Say"), 100_000)
	assert.InDelta(t, 0.10, float64(c[1])/float64(c[0]), 0.01, "≈10 %% of a warm peer's traffic")

	clock.Advance(240 * time.Second) // half way
	c = lbtest.Counts(b, list, lbtest.Call("Say"), 100_000)
	assert.InDelta(t, 0.5, float64(c[1])/float64(c[0]), 0.03)

	clock.Advance(time.Hour)
	c = lbtest.Counts(b, list, lbtest.Call("Say"), 100_000)
	assert.InDelta(t, 1, float64(c[1])/float64(c[0]), 0.04)
}
