package member

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/warmup"
)

func TestCarryMapsTheProvidersThatStay(t *testing.T) {
	var pairs [][2]int
	r := NewRegistry(warmup.Options{}, nil, func(s *Set, prev *View[table]) *table {
		pairs = nil
		Carry(s, prev, func(i, j int) { pairs = append(pairs, [2]int{i, j}) })
		return &table{}
	})
	p := lbtest.N(4)
	r.Lookup(p[:3], "Say")
	assert.Empty(t, pairs, "the first snapshot has nothing to carry over")
	// p[0] left, p[3] joined, p[2] moved to the front.
	r.Lookup([]base.Invoker{p[2], p[1], p[3]}, "Say")
	assert.Equal(t, [][2]int{{0, 2}, {1, 1}}, pairs)
}

func TestWarmAliasOnlyWhenWeightsDiffer(t *testing.T) {
	r, _ := newCounting()
	v, _ := r.Lookup(lbtest.Weighted("100", "100"), "Say")
	assert.Nil(t, v.WarmAlias(), "equal weights: a uniform draw")
	v, _ = r.Lookup(lbtest.Weighted("100", "300"), "Say")
	a := v.WarmAlias()
	if assert.NotNil(t, a) {
		n, rnd := 0, algo.Seeded(1)
		for range 1 << 12 {
			n += a.Draw(rnd.Uint64(), 2)
		}
		assert.InDelta(t, 0.75, float64(n)/(1<<12), 0.05, "the provider of weight 300 draws 3/4")
	}
}
