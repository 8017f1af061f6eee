package member

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"

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
