package lalb

import (
	"fmt"
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

// keptTrees returns how many trees of b are trees of a.
func keptTrees(a, b *table) int {
	kept := 0
	for k := range b.trees.Len() {
		tr, _ := b.tree(k)
		for j := range a.trees.Len() {
			if old, _ := a.tree(j); old == tr {
				kept++
			}
		}
	}
	return kept
}

// exactView returns b's view of list, built.
func exactView(t *testing.T, b *Balancer, list []base.Invoker) *member.View[table] {
	t.Helper()
	v, exact := b.sk.View(list, "Say")
	require.True(t, exact)
	return v
}

// A change makes again only the trees of the parts it touches, and sets
// the leaves of the others in place: the weights are those a build from
// nothing gives over the same statistics.
func TestAChangeKeepsTheTreesOfPartsThatStay(t *testing.T) {
	var clock atomic.Int64
	clock.Store(int64(100 * sec))
	list := lbtest.NoEjection(24000, 1000, nil)
	for i, p := range list {
		feed(p, int64(90*sec), 64, time.Duration(1+i%7)*ms, false)
	}
	b := New(Options{Env: lbenv.Env{Now: clock.Load, Rand: algo.Seeded(3).Uint64}})
	v1 := exactView(t, b, list)
	checkTable(t, v1.Table)
	require.Greater(t, v1.Table.trees.Len(), 4, "parts")

	// Some providers everywhere in the list slow down; then the last
	// provider is replaced.
	for i := 0; i < len(list); i += 50 {
		feed(list[i], int64(95*sec), 64, 40*ms, false)
	}
	changed := append(slices.Clone(list[:len(list)-1]), lbtest.EjectionOff(lbtest.Provider(25000, nil))...)
	v2 := exactView(t, b, changed)
	checkTable(t, v2.Table)
	assert.GreaterOrEqual(t, keptTrees(v1.Table, v2.Table), v2.Table.trees.Len()-2, "trees kept")

	scratch := New(Options{Env: lbenv.Env{Now: clock.Load, Rand: algo.Seeded(4).Uint64}})
	assert.Equal(t, scratch.weights(changed, "Say"), b.weights(changed, "Say"), "the weights of a build from nothing")
	assert.Equal(t, exactView(t, scratch, changed).Table.total(), v2.Table.total())
}

// choose draws each provider in proportion to its tree weight across
// parts; a uniform draw (the negative control) fails the same check.
func TestChooseDrawsInProportionAcrossParts(t *testing.T) {
	var clock atomic.Int64
	clock.Store(int64(100 * sec))
	list := lbtest.NoEjection(26000, 1000, nil)
	b := New(Options{Env: lbenv.Env{Now: clock.Load, Rand: algo.Seeded(5).Uint64}})
	tab := exactView(t, b, list).Table
	require.NotNil(t, tab.top, "more than one part")
	heavy := []int{3, 500, 998} // in three parts
	for i := range list {
		tab.set(i, int64(1+i%10))
	}
	small := tab.total()
	for _, i := range heavy {
		tab.set(i, small/5)
	}
	checkTable(t, tab)

	rng := algo.Seeded(6)
	const picks = 400_000
	// misfit returns what of draw's picks is off its share by more than
	// lbtest.Tol, "" when nothing is: the heavy providers and each part.
	misfit := func(draw func(r uint64) int) string {
		counts := make([]int, len(list))
		for range picks {
			counts[draw(rng.Uint64())]++
		}
		total := float64(tab.total())
		off := func(what string, w int64, n int) string {
			p := float64(w) / total
			if d := 100 * (float64(n)/picks - p); d > lbtest.Tol(p, picks) || -d > lbtest.Tol(p, picks) {
				return fmt.Sprintf("%s: %d picks of %d, share %.4f", what, n, picks, p)
			}
			return ""
		}
		for _, i := range heavy {
			if m := off(fmt.Sprint("provider ", i), tab.weight(i), counts[i]); m != "" {
				return m
			}
		}
		for k := range tab.trees.Len() {
			tr, start := tab.tree(k)
			n := 0
			for o := range tr.Len() {
				n += counts[start+o]
			}
			if m := off(fmt.Sprint("part ", k), tab.top.Weight(k), n); m != "" {
				return m
			}
		}
		return ""
	}
	assert.Empty(t, misfit(tab.choose))
	assert.NotEmpty(t, misfit(func(r uint64) int { return algo.IntN(r, len(list)) }), "a uniform draw")
}

// A part whose item in the top is stale (a set of the table before on a
// tree the two share) is not drawn once its tree has no weight, and the
// draw brings the item up to date.
func TestChooseHealsAStaleTop(t *testing.T) {
	list := lbtest.NoEjection(27000, 1000, nil)
	b := New(Options{Env: lbenv.Env{Rand: algo.Seeded(7).Uint64}})
	tab := exactView(t, b, list).Table
	require.NotNil(t, tab.top)
	tr, start := tab.tree(0)
	for o := range tr.Len() {
		tr.Set(o, 0) // behind the top's back
	}
	require.Positive(t, tab.top.Weight(0))
	rng := algo.Seeded(8)
	for range 10_000 {
		i := tab.choose(rng.Uint64())
		require.GreaterOrEqual(t, i, start+tr.Len(), "a provider of weight 0")
	}
	assert.Zero(t, tab.top.Weight(0), "the stale item")
}

// A provider that a new snapshot drains (ejected) gets a tree of its part
// of its own: the tree it had is the snapshot before's, whose refreshes
// still give it weight, and must not serve the new one.
func TestADrainedProviderLeavesItsTree(t *testing.T) {
	list := lbtest.Ports(28000, 1000)
	b := New(Options{Env: lbenv.Env{Rand: algo.Seeded(9).Uint64}})
	v1 := exactView(t, b, list)
	lbtest.OutlierFail(list[700], rpcstatus.Nanotime(), 5)
	b.Select(list, lbtest.Call("Say")) // the news reaches the snapshot on a pick
	lbtest.WaitBuilds(b)
	v2 := exactView(t, b, list)
	require.NotSame(t, v1, v2)
	require.True(t, v2.IsEjected(700), "ejected")
	assert.Zero(t, v2.Table.weight(700))
	assert.Equal(t, v2.Table.trees.Len()-1, keptTrees(v1.Table, v2.Table), "trees kept: all but the drained one's")

	b.refresh(v1, 700) // the snapshot before still weighs it
	assert.Positive(t, v1.Table.weight(700))
	assert.Zero(t, v2.Table.weight(700), "the new snapshot's tree")
}
