package shortestresponse

import (
	"math"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// scanCase is a scan's input: each provider's mean, calls in flight and
// weight.
type scanCase struct {
	mean, active []int64
	weight       []float64
}

// ents packs the providers of c, sorted by mean when sorted.
func (c scanCase) ents(sorted bool) []atomic.Uint64 {
	xs := make([]uint64, len(c.mean))
	for i, m := range c.mean {
		xs[i] = pack(m, i)
	}
	if sorted {
		slices.Sort(xs)
	}
	ents := make([]atomic.Uint64, len(xs))
	for k, x := range xs {
		ents[k].Store(x)
	}
	return ents
}

func (c scanCase) stats() []*rpcstatus.Stats {
	st := make([]*rpcstatus.Stats, len(c.active))
	for i, a := range c.active {
		st[i] = new(rpcstatus.Stats)
		for range a {
			st[i].Begin(0)
		}
	}
	return st
}

// want is the full scan, written plainly: each provider's share of the
// picks, its weight over the weight of the providers of the smallest
// estimate.
func (c scanCase) want() []float64 {
	best := int64(math.MaxInt64)
	for i := range c.mean {
		best = min(best, estimate(c.mean[i], c.active[i]))
	}
	share, total := make([]float64, len(c.mean)), 0.0
	for i := range c.mean {
		if estimate(c.mean[i], c.active[i]) == best {
			share[i] = c.weight[i]
			total += c.weight[i]
		}
	}
	for i := range share {
		share[i] /= total
	}
	return share
}

// got runs shortest with picks random words of r and returns each
// provider's share.
func (c scanCase) got(r algo.Rand, sorted bool, all *algo.Alias, picks int) []float64 {
	ents, st := c.ents(sorted), c.stats()
	uniform := !slices.ContainsFunc(c.weight, func(w float64) bool { return w != c.weight[0] })
	got := make([]float64, len(c.mean))
	for range picks {
		got[shortest(ents, sorted, st, skeleton.Failures{}, c.weight, uniform, all, r.Uint64())] += 1 / float64(picks)
	}
	return got
}

// randomCase draws n providers whose means take few values and whose
// calls in flight are few, so that ties across different means are
// frequent (1 ms × 4 = 2 ms × 2).
func randomCase(r algo.Rand, n int, weighted bool) scanCase {
	c := scanCase{make([]int64, n), make([]int64, n), make([]float64, n)}
	for i := range n {
		c.mean[i] = int64(1+algo.IntN(r.Uint64(), 4)) * ms
		c.active[i] = int64(algo.IntN(r.Uint64(), 4))
		c.weight[i] = 100
		if weighted {
			c.weight[i] = float64(50 * (1 + algo.IntN(r.Uint64(), 4)))
		}
	}
	return c
}

// TestShortestIsTheFullScan: the scan that stops at the first mean above
// the shortest estimate, unsorted or sorted, with the alias for the
// all-tied draw, past the ties its stack keeps (n = 300, uniform and
// weighted), and with drawLeast's shortcut (taken, and missed), never
// picks a provider that the plain full scan does not, and draws the tied
// ones in proportion to weight.
func TestShortestIsTheFullScan(t *testing.T) {
	r := algo.Seeded(21)
	const picks = 4096
	for round := range 36 {
		n := []int{2, 3, 10, 100, 300}[round%5]
		c := randomCase(r, n, round%2 == 0)
		if round%3 == 0 { // every provider of one mean: all tied, or (idle ones) drawLeast's whole run
			for i := range c.mean {
				c.mean[i], c.active[i] = 3*ms, int64((round/6)%2)
			}
		}
		if round >= 30 { // one mean, a tenth idle: drawLeast misses, then the scan
			for i := range c.mean {
				c.mean[i], c.active[i] = 3*ms, 1
				if i%10 == 0 {
					c.active[i] = 0
				}
			}
		}
		if round == 29 { // weighted, past the stack, not all tied: the second reading by weight
			c = randomCase(r, n, true)
			for i := range c.mean {
				c.mean[i], c.active[i] = 3*ms, 1
			}
			c.mean[0] = 4 * ms
		}
		want := c.want()
		for _, sorted := range []bool{true, false} {
			got := c.got(r, sorted, algo.NewAlias(c.weight), picks)
			for i := range want {
				if want[i] == 0 {
					require.Zero(t, got[i], "round %d (n=%d), sorted %v: provider %d is not the shortest", round, n, sorted, i)
					continue
				}
				require.InDelta(t, 100*want[i], 100*got[i], lbtest.Tol(want[i], picks), "round %d (n=%d), sorted %v, provider %d", round, n, sorted, i)
			}
		}
	}
}

// TestShortestStopsAtTheFirstLargerMean: a sorted scan does not read the
// calls in flight of a provider whose mean alone exceeds the shortest
// estimate; its stats may even be missing.
func TestShortestStopsAtTheFirstLargerMean(t *testing.T) {
	c := scanCase{mean: []int64{ms, 2 * ms, 5 * ms}, active: []int64{1, 0, 0}, weight: []float64{1, 1, 1}}
	st := c.stats()
	st[2] = nil // read: a nil dereference
	// 1 ms × 2 = 2 ms × 1: tied; the lowest word draws the first by mean,
	// the highest the second.
	assert.Equal(t, 0, shortest(c.ents(true), true, st, skeleton.Failures{}, c.weight, true, nil, 0))
	assert.Equal(t, 1, shortest(c.ents(true), true, st, skeleton.Failures{}, c.weight, true, nil, math.MaxUint64))
}

func TestPackSaturatesAndKeepsTheSlot(t *testing.T) {
	x := pack(math.MaxInt64, 7)
	assert.Equal(t, uint64(7), x&slotMask)
	assert.Equal(t, uint64(maxMean), x>>slotBits)
	assert.Equal(t, uint64(0)<<slotBits|3, pack(-5, 3), "a negative mean is 0")
	assert.Less(t, pack(ms, slotMask), pack(ms+1, 0), "entries sort by mean first")
}

// TestDrawLeast: the shortcut takes the run of the smallest mean when its
// first entry is idle, draws only idle entries of that mean (all of them
// when the mean is 0), and gives up where it cannot draw as the scan does.
func TestDrawLeast(t *testing.T) {
	r := algo.Seeded(5)
	c := scanCase{mean: []int64{ms, ms, ms, ms, 2 * ms, 2 * ms}, active: []int64{0, 3, 0, 3, 0, 0}, weight: []float64{1, 1, 1, 1, 1, 1}}
	ents, st := c.ents(true), c.stats()
	seen := map[int]int{}
	for range 1000 {
		if slot, ok := drawLeast(ents, ents[0].Load()>>slotBits, st, skeleton.Failures{}, true, nil, r.Uint64()); ok {
			seen[slot]++
		}
	}
	assert.ElementsMatch(t, []int{0, 2}, keys(seen), "only the idle providers of the smallest mean")
	assert.InDelta(t, 0.5, float64(seen[0])/float64(seen[0]+seen[2]), 0.1)

	c.mean = []int64{0, 0, 0, 0, 2 * ms, 2 * ms} // mean 0: every estimate of it is 0
	ents = c.ents(true)
	seen = map[int]int{}
	for range 1000 {
		slot, ok := drawLeast(ents, ents[0].Load()>>slotBits, st, skeleton.Failures{}, true, nil, r.Uint64())
		require.True(t, ok)
		seen[slot]++
	}
	assert.ElementsMatch(t, []int{0, 1, 2, 3}, keys(seen))

	// Weights differ and the run is not every entry: the scan's job.
	_, ok := drawLeast(ents, ents[0].Load()>>slotBits, st, skeleton.Failures{}, false, algo.NewAlias(c.weight), 1)
	assert.False(t, ok)
	// Every entry busy but the first: four misses are likely, then false.
	c = scanCase{mean: make([]int64, 100), active: make([]int64, 100), weight: make([]float64, 100)}
	for i := range c.mean {
		c.mean[i], c.active[i], c.weight[i] = ms, 1, 1
	}
	c.active[0] = 0
	ents, st = c.ents(true), c.stats()
	misses := 0
	for range 1000 {
		if slot, ok := drawLeast(ents, ents[0].Load()>>slotBits, st, skeleton.Failures{}, true, nil, r.Uint64()); !ok {
			misses++
		} else {
			require.Equal(t, 0, slot)
		}
	}
	assert.Greater(t, misses, 900, "(99/100)^4 of the draws miss")
}

func keys(m map[int]int) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
