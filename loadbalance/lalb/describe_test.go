package lalb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Described, each provider's weight is its weight in the LALB tree.
func TestDescribeWeights(t *testing.T) {
	b := New(Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	list := lbtest.N(3)
	lbtest.Feed(list[0], 0, 200, time.Millisecond, false)
	lbtest.Feed(list[1], 0, 200, 4*time.Millisecond, false)
	lbtest.Counts(b, list, lbtest.Call("Say"), 2000) // refreshes the tree
	want := b.weights(list, "Say")
	require.Greater(t, want[0], 2*want[1], "the fast provider weighs more")
	methods := b.Describe(rpcstatus.Nanotime())
	require.Len(t, methods, 1)
	for i, p := range methods[0].Providers {
		assert.Equal(t, float64(want[i]), p.Weight, p.Address)
	}
}
