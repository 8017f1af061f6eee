package fewestactive

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// statsWith returns fresh statistics with the given calls in flight.
func statsWith(actives ...int) []*rpcstatus.Stats {
	out := make([]*rpcstatus.Stats, len(actives))
	for i, a := range actives {
		out[i] = new(rpcstatus.Stats)
		for range a {
			out[i].Begin(0)
		}
	}
	return out
}

// sweep calls pick with m (a power of two) random numbers spread evenly
// over the uint64 range and counts the answers: an exact picture of the
// draw.
func sweep(n, m int, pick func(u uint64) int) []int {
	counts := make([]int, n)
	step := math.MaxUint64/uint64(m) + 1
	for j := range m {
		counts[pick(uint64(j)*step)]++
	}
	return counts
}

func TestScanTakesTheFewestActive(t *testing.T) {
	stats := statsWith(3, 1, 2, 1, 4)
	w := []float64{100, 100, 100, 100, 100}
	got := sweep(5, 1024, func(u uint64) int { return scanFewest(stats, w, true, u, failureCharge{}) })
	assert.Equal(t, []int{0, 512, 0, 512, 0}, got)

	// A single minimum wins whatever the weights.
	stats = statsWith(2, 0, 1)
	assert.Equal(t, []int{0, 128, 0}, sweep(3, 128, func(u uint64) int { return scanFewest(stats, []float64{1000, 1, 1000}, false, u, failureCharge{}) }))
}

// The draw among tied providers is in [0, total): weights 1:1:2 give exactly
// 25/25/50 %. dubbo-go's [1, total] draw gives 1/4 of the range minus one
// unit to the first provider.
func TestScanTieDrawIsUnbiased(t *testing.T) {
	stats := statsWith(0, 0, 0)
	w := []float64{1, 1, 2}
	got := sweep(3, 4096, func(u uint64) int { return scanFewest(stats, w, false, u, failureCharge{}) })
	assert.Equal(t, []int{1024, 1024, 2048}, got)

	// Only tied providers take part: the busy one's weight is not in the
	// total.
	stats = statsWith(0, 7, 0)
	got = sweep(3, 4096, func(u uint64) int { return scanFewest(stats, []float64{1, 1000, 3}, false, u, failureCharge{}) })
	assert.Equal(t, []int{1024, 0, 3072}, got)
}

func TestScanExcludesUnusableWeights(t *testing.T) {
	// The drained provider has the fewest calls in flight but weight 0.
	stats := statsWith(0, 2, 2)
	w := []float64{0, 1, 1}
	got := sweep(3, 1024, func(u uint64) int { return scanFewest(stats, w, false, u, failureCharge{}) })
	assert.Equal(t, []int{0, 512, 512}, got)

	for _, bad := range []float64{math.NaN(), -1, math.Inf(1), math.Inf(-1)} {
		got = sweep(2, 1024, func(u uint64) int { return scanFewest(statsWith(0, 1), []float64{bad, 1}, false, u, failureCharge{}) })
		assert.Equal(t, []int{0, 1024}, got, "weight %v", bad)
	}
	// Nothing usable: every provider counts as equal, fewest active first.
	got = sweep(3, 1024, func(u uint64) int {
		return scanFewest(statsWith(1, 0, 0), []float64{0, 0, math.NaN()}, false, u, failureCharge{})
	})
	assert.Equal(t, []int{0, 512, 512}, got)
}

func TestChoose(t *testing.T) {
	stats := statsWith(0, 0, 0, 0)
	alias := algo.NewAlias([]float64{1, 1, 2, 0})
	var seq []uint64
	next := func() uint64 { u := seq[0]; seq = seq[1:]; return u }

	// Equal counts: the first draw wins, so shares follow the weights.
	got := sweep(4, 4096, func(u uint64) int {
		seq = []uint64{u, math.MaxUint64 - u}
		return choosePair(flatStats(stats), alias, 2, next, failureCharge{})
	})
	assert.InDeltaSlice(t, []float64{1024, 1024, 2048, 0}, []float64{float64(got[0]), float64(got[1]), float64(got[2]), float64(got[3])}, 40)

	// The less busy of the two draws wins.
	stats = statsWith(5, 1, 0, 0)
	seq = []uint64{0, 1 << 62} // uniform draws: providers 0 and 1
	assert.Equal(t, 1, choosePair(flatStats(stats), nil, 2, next, failureCharge{}))
	seq = []uint64{1 << 62, 0}
	assert.Equal(t, 1, choosePair(flatStats(stats), nil, 2, next, failureCharge{}))

	// d < 1 still draws once.
	seq = []uint64{3 << 62}
	assert.Equal(t, 3, choosePair(flatStats(stats), nil, 0, next, failureCharge{}))
}

// With a charge, each failure of a provider's recent run counts as a call
// in flight; ties among the rest are drawn in proportion to weight (the
// reservoir draw of scanCharged), and an old run is not charged.
func TestScanChargesRecentFailures(t *testing.T) {
	stats := statsWith(0, 1, 1, 1)
	var b rpcstatus.Board
	b.Configure(0, 1) // failures without a code count
	stats[0].Link(&b)
	for range 2 {
		stats[0].Judge(1000, true, rpcstatus.NoCode)
	}
	w := []float64{100, 100, 100, 200}
	c := failureCharge{Now: 1500, Window: 1000}
	const m = 1 << 14
	got := sweep(4, m, func(u uint64) int { return scanFewest(stats, w, false, u, c) })
	assert.Zero(t, got[0], "0 in flight + a run of 2 is 2: busier than the others' 1")
	for i, want := range []float64{0, 0.25, 0.25, 0.5} {
		assert.InDelta(t, want, float64(got[i])/m, 0.02, "provider %d: %v", i, got)
	}
	got = sweep(4, m, func(u uint64) int { return scanFewest(stats, w, true, u, c) })
	assert.InDelta(t, 1.0/3, float64(got[3])/m, 0.02, "uniform ties: %v", got)
	assert.Equal(t, []int{m, 0, 0, 0}, sweep(4, m, func(u uint64) int { return scanFewest(stats, w, false, u, failureCharge{Now: 2000, Window: 1000}) }),
		"a run whose latest failure is a window old is not charged")

	// Drained providers stay out; all drained count as equal.
	assert.Equal(t, []int{0, 0, 0, m}, sweep(4, m, func(u uint64) int { return scanFewest(stats, []float64{100, 0, 0, 100}, false, u, c) }))
	got = sweep(4, m, func(u uint64) int { return scanFewest(stats, []float64{0, 0, 0, 0}, false, u, c) })
	assert.Zero(t, got[0])
	assert.InDelta(t, 1.0/3, float64(got[1])/m, 0.02, "%v", got)
}

// flatStats gives choosePair the statistics of a slice.
type flatStats []*rpcstatus.Stats

func (f flatStats) Len() int                    { return len(f) }
func (f flatStats) Stat(i int) *rpcstatus.Stats { return f[i] }
