package lalb

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// exactView returns b's view of list, built.
func exactView(t *testing.T, b *Balancer, list []base.Invoker) *member.View[table] {
	t.Helper()
	v, exact := b.sk.View(list, "Say")
	require.True(t, exact)
	return v
}

// A change weighs the providers as a build from nothing over the same
// statistics does.
func TestAChangeWeighsAsABuildFromNothing(t *testing.T) {
	var clock atomic.Int64
	clock.Store(int64(100 * sec))
	list := lbtest.NoEjection(24000, 1000, nil)
	for i, p := range list {
		feed(p, int64(90*sec), 64, time.Duration(1+i%7)*ms, false)
	}
	b := New(Options{Env: lbenv.Env{Now: clock.Load, Rand: algo.Seeded(3).Uint64}})
	v1 := exactView(t, b, list)
	checkTree(t, v1.Table.tree)

	// Some providers everywhere in the list slow down; then the last
	// provider is replaced.
	for i := 0; i < len(list); i += 50 {
		feed(list[i], int64(95*sec), 64, 40*ms, false)
	}
	changed := append(slices.Clone(list[:len(list)-1]), lbtest.EjectionOff(lbtest.Provider(25000, nil))...)
	v2 := exactView(t, b, changed)
	checkTree(t, v2.Table.tree)

	scratch := New(Options{Env: lbenv.Env{Now: clock.Load, Rand: algo.Seeded(4).Uint64}})
	assert.Equal(t, scratch.weights(changed, "Say"), b.weights(changed, "Say"), "the weights of a build from nothing")
	assert.Equal(t, exactView(t, scratch, changed).Table.tree.Total(), v2.Table.tree.Total())
}

// A provider that a new snapshot drains (ejected) has no weight in its
// tree, whatever the snapshot before, whose refreshes still give it
// weight, does with its own.
func TestADrainedProviderHasNoWeightInTheNewTree(t *testing.T) {
	list := lbtest.Ports(28000, 1000)
	b := New(Options{Env: lbenv.Env{Rand: algo.Seeded(9).Uint64}})
	v1 := exactView(t, b, list)
	lbtest.OutlierFail(list[700], rpcstatus.Nanotime(), 5)
	b.Select(list, lbtest.Call("Say")) // the news reaches the snapshot on a pick
	lbtest.WaitBuilds(b)
	v2 := exactView(t, b, list)
	require.NotSame(t, v1, v2)
	require.True(t, v2.IsEjected(700), "ejected")
	assert.Zero(t, v2.Table.tree.Weight(700))

	b.refresh(v1, 700) // the snapshot before still weighs it
	assert.Positive(t, v1.Table.tree.Weight(700))
	assert.Zero(t, v2.Table.tree.Weight(700), "the new snapshot's tree")
}
