package swrr

import (
	"math/rand/v2"
	"slices"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
)

// worstBurst returns the largest excess or shortfall (burst, as burst
// measures it) of any provider in picks, at the fixed shares of the
// weights w. It looks at each provider's running surplus only around its
// own picks, in between which the surplus only falls: O(picks), where
// burst is O(picks × providers).
func worstBurst(picks []int, w []float64) float64 {
	total := 0.0
	for _, x := range w {
		total += x
	}
	n := len(w)
	count, lo, hi := make([]float64, n), make([]float64, n), make([]float64, n)
	worst := 0.0
	see := func(i int, d float64) {
		worst = max(worst, d-lo[i], hi[i]-d)
		lo[i], hi[i] = min(lo[i], d), max(hi[i], d)
	}
	for t, i := range picks {
		share := w[i] / total
		see(i, count[i]-float64(t)*share) // after the pick before
		count[i]++
		see(i, count[i]-float64(t+1)*share)
	}
	for i := range w {
		see(i, count[i]-float64(len(picks))*w[i]/total)
	}
	return worst
}

// picksOf returns the positions in list of n successive picks of lb, as
// picks does, finding them in a map: the lists here are long.
func picksOf(lb loadbalance.LoadBalance, list []base.Invoker, inv base.Invocation, n int) []int {
	at := make(map[base.Invoker]int, len(list))
	for i, p := range list {
		at[p] = i
	}
	out := make([]int, n)
	for k := range out {
		i, ok := at[lb.Select(list, inv)]
		if !ok {
			panic("pick outside the list")
		}
		out[k] = i
	}
	return out
}

// weightedRandom returns n picks drawn at random in proportion to w, as
// dubbo-go's random picks (seeded: the same every run).
func weightedRandom(w []float64, n int) []int {
	cum := make([]float64, len(w))
	total := 0.0
	for i, x := range w {
		total += x
		cum[i] = total
	}
	r := rand.New(rand.NewPCG(9, 9))
	out := make([]int, n)
	for k := range out {
		i, _ := slices.BinarySearch(cum, r.Float64()*total)
		out[k] = min(i, len(w)-1)
	}
	return out
}

// mixedWeights returns the weights of lbtest.Mixed(n).
func mixedWeights(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = []float64{100, 200, 50}[i%3]
	}
	return w
}

// Above one part, the parts' cycles and the spread over them keep every
// provider within a little more than one cycle's burst of its due (2
// picks); weighted random picks, the negative control, do not.
func TestPartsStaySmooth(t *testing.T) {
	const n = 1000
	list, w := lbtest.Mixed(n), mixedWeights(n)
	b := New(seeded(11))
	inv := lbtest.Call("Say")
	v, exact := b.sk.View(list, "Say")
	require.True(t, exact)
	require.NotNil(t, v.Table.top, "more than one part")
	const picks = 3 * 2334 // three times the sum of the integer weights
	ours := worstBurst(picksOf(b, list, inv, picks), w)
	theirs := worstBurst(weightedRandom(w, picks), w)
	t.Logf("largest burst: ours %.2f, weighted random %.2f picks", ours, theirs)
	assert.Less(t, ours, maxPartsBurst)
	assert.Greater(t, theirs, maxPartsBurst)
}

// maxPartsBurst bounds the burst of a provider above one part: 2 within
// its part's cycle, plus the spread's error on the part's count (a few
// picks) times the provider's share of its part (1/128 or less).
const maxPartsBurst = 2.5

// A one-provider change makes the cycles of the parts it touches; the
// others keep theirs, counter included, and the picks stay smooth across
// the change.
func TestAChangeKeepsTheCyclesOfPartsThatStay(t *testing.T) {
	const n = 1000
	list := lbtest.Mixed(n)
	b := New(seeded(12))
	inv := lbtest.Call("Say")
	v1, exact := b.sk.View(list, "Say")
	require.True(t, exact)
	before := picksOf(b, list, inv, 2334)

	changed := append(slices.Clone(list[:n-1]), lbtest.Provider(29000, map[string]string{"weight": "50"}))
	v2, exact := b.sk.View(changed, "Say")
	require.True(t, exact)
	kept := 0
	for k := range v2.Table.parts.Len() {
		c, _, _ := v2.Table.parts.At(k)
		for j := range v1.Table.parts.Len() {
			if d, _, _ := v1.Table.parts.At(j); c == d {
				kept++
			}
		}
	}
	assert.GreaterOrEqual(t, kept, v2.Table.parts.Len()-2, "cycles kept")

	after := picksOf(b, changed, inv, 2334)
	w := mixedWeights(n)
	w[n-1] = 50
	// The last provider is another one after the change, of weight 50 as
	// the other was: one stream, the same shares throughout.
	assert.Less(t, worstBurst(append(before, after...), w), maxPartsBurst)
}

// The spread gives each part its due within a few picks at every point
// and never picks a part of weight 0; a weighted random choice, the
// negative control, strays further.
func TestSpreadFollowsWeights(t *testing.T) {
	w := []float64{3, 0, 1, 5.5, 0, 20, 0.25}
	total := 0.0
	for _, x := range w {
		total += x
	}
	r := rand.New(rand.NewPCG(3, 4))
	worst := func(pick func() int) float64 {
		count := make([]float64, len(w))
		dev := 0.0
		for k := 1; k <= 200_000; k++ {
			count[pick()]++
			for i, x := range w {
				dev = max(dev, count[i]-float64(k)*x/total, float64(k)*x/total-count[i])
			}
		}
		return dev
	}
	s := newSpread(w, r.Uint64(), 0)
	ours := worst(func() int {
		k := s.next()
		require.Positive(t, w[k], "part %d", k)
		return k
	})
	theirs := worst(func() int {
		x := r.Float64() * total
		for i, y := range w {
			if x -= y; x < 0 {
				return i
			}
		}
		return len(w) - 1
	})
	t.Logf("largest deviation: spread %.2f, random %.2f picks", ours, theirs)
	// The golden-ratio sequence strays by the logarithm of the picks at
	// most: 4.3 picks over 50 starts of 200 000 picks with these weights.
	assert.Less(t, ours, 6.0)
	assert.Greater(t, theirs, 6.0)

	// No usable weight: equal shares. One part: always it.
	s = newSpread([]float64{0, -1}, 7, 0)
	assert.ElementsMatch(t, []int{0, 1}, []int{s.next(), s.next()})
	s = newSpread([]float64{2}, 7, 0)
	assert.Equal(t, 0, s.next())
}

// A part made again of the very providers of one cycle before, in order,
// at the same integer weights (their warm weights moved in proportion)
// goes on with that cycle; any other part gets a cycle of its own.
func TestSameCycleOnlyForTheSameProvidersAndWeights(t *testing.T) {
	q := []int64{5, 1, 1}
	c, d := newSmoothCycle(slices.Clone(q), 0), newSmoothCycle([]int64{1, 1, 1}, 0)
	from := func(of func(i int) (*smoothCycle, int, bool)) member.Was[smoothCycle] { return of }
	in := func(c *smoothCycle, shift int) member.Was[smoothCycle] {
		return from(func(i int) (*smoothCycle, int, bool) { return c, i - 10 + shift, true })
	}
	assert.Same(t, c, sameCycle(q, 10, in(c, 0)))
	assert.Nil(t, sameCycle([]int64{5, 2, 1}, 10, in(c, 0)), "other weights")
	assert.Nil(t, sameCycle(q, 10, in(c, 1)), "shifted")
	assert.Nil(t, sameCycle(q[:2], 10, in(c, 0)), "fewer providers")
	assert.Nil(t, sameCycle(q, 10, from(func(i int) (*smoothCycle, int, bool) {
		if i == 11 {
			return d, 1, true
		}
		return c, i - 10, true
	})), "from two cycles")
	assert.Nil(t, sameCycle(q, 10, from(func(i int) (*smoothCycle, int, bool) {
		if i == 10 {
			return nil, 0, false
		}
		return c, i - 10, true
	})), "a newcomer first")
}
