package swrr

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nginx runs nginx's smooth weighted round robin step by step for steps
// picks, and returns them and the largest |current value| seen.
func nginx(q []int64, steps int) ([]int32, int64) {
	c := make([]int64, len(q))
	total := sum(q)
	out := make([]int32, steps)
	worst := int64(0)
	for k := range out {
		best := -1
		for i := range q {
			if q[i] <= 0 {
				continue
			}
			c[i] += q[i]
			if best < 0 || c[i] > c[best] {
				best = i
			}
		}
		c[best] -= total
		out[k] = int32(best)
		for _, x := range c {
			worst = max(worst, x, -x)
		}
	}
	return out, worst
}

// dubboReset is Dubbo's round robin (dubbo-go v3.3.2 roundrobin, Java
// RoundRobinLoadBalance): nginx's step on shared counters, where a provider
// whose weight changed restarts from current value 0.
type dubboReset struct{ w, c []int64 }

func (d *dubboReset) pick(w []int64) int {
	if d.w == nil {
		d.w, d.c = make([]int64, len(w)), make([]int64, len(w))
	}
	best, total := -1, int64(0)
	for i := range w {
		if d.w[i] != w[i] {
			d.w[i], d.c[i] = w[i], 0
		}
		d.c[i] += w[i]
		if best < 0 || d.c[i] > d.c[best] {
			best = i
		}
		total += w[i]
	}
	d.c[best] -= total
	return best
}

// burst returns, for each provider, the most picks beyond its due (excess)
// and the most picks short of it (shortfall) in any window of the stream,
// where shares[t] are the providers' shares in force at pick t. A fixed
// smooth cycle keeps both at most 2.
func burst(picks []int, shares [][]float64) (excess, shortfall []float64) {
	n := len(shares[0])
	excess, shortfall = make([]float64, n), make([]float64, n)
	for i := range n {
		d, lo, hi := 0.0, 0.0, 0.0 // picks minus due since the start
		for t, p := range picks {
			d -= shares[t][i]
			if p == i {
				d++
			}
			excess[i] = max(excess[i], d-lo)
			shortfall[i] = max(shortfall[i], hi-d)
			lo, hi = min(lo, d), max(hi, d)
		}
	}
	return excess, shortfall
}

func shares(q []int64) []float64 {
	s := make([]float64, len(q))
	for i, x := range q {
		s[i] = float64(x) / float64(sum(q))
	}
	return s
}

func TestSequenceIsNginx(t *testing.T) {
	assert.Equal(t, []int32{0, 0, 1, 0, 2, 0, 0}, smoothSequence([]int64{5, 1, 1}))
	assert.Equal(t, []int32{1, 0, 1, 2, 1}, smoothSequence([]int64{1, 3, 1}))

	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		q := make([]int64, 1+r.IntN(9))
		for i := range q {
			q[i] = int64(r.IntN(20))
		}
		if sum(q) == 0 {
			q[r.IntN(len(q))] = 1
		}
		seq := smoothSequence(q)
		require.Len(t, seq, int(sum(q)))
		want, worst := nginx(q, 2*len(seq))
		for k := range want {
			require.Equal(t, want[k], seq[k%len(seq)], "weights %v step %d", q, k)
		}
		// Every lag (current value / sum) stays within [-1, 1]: what
		// bounds the bursts of a cycle.
		require.LessOrEqual(t, worst, sum(q), "weights %v", q)
	}
}

func TestQuantize(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want []int64
	}{
		{[]float64{5, 1, 1}, []int64{5, 1, 1}},
		{[]float64{100, 200, 50}, []int64{2, 4, 1}},
		{[]float64{100, 100}, []int64{1, 1}},
		{[]float64{0.4, 0.1}, []int64{4, 1}},
		{[]float64{100, 37.6}, []int64{125, 47}}, // ×10, then ÷8
		{[]float64{3, 1, 1}, []int64{3, 1, 1}},   // integers stay exact
		{[]float64{0, 3, -1, 6}, []int64{0, 1, 0, 2}},
		{[]float64{math.NaN(), math.Inf(1), 2}, []int64{0, 0, 1}},
		{[]float64{0, 0, math.NaN()}, []int64{1, 1, 1}},
		{[]float64{1e-9, 1}, []int64{1, 1000}}, // never rounded to 0
	} {
		assert.Equal(t, c.want, quantizeWeights(c.in), "weights %v", c.in)
	}

	// Fractional weights: within one unit each, so the shares are close.
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		w := make([]float64, 2+r.IntN(50))
		total := 0.0
		for i := range w {
			w[i] = r.Float64() * 100
			total += w[i]
		}
		q := quantizeWeights(w)
		n := float64(sum(q))
		for i := range w {
			require.Positive(t, q[i])
			require.InDelta(t, w[i]/total, float64(q[i])/n, float64(len(w))/n, "weights %v", w)
		}
	}

	// Cycles too long or too costly are shortened, in proportion.
	q := quantizeWeights([]float64{1e6, 1})
	assert.LessOrEqual(t, sum(q), int64(minMaxLen))
	assert.Equal(t, int64(1), q[1])
	assert.InDelta(t, 1e6, float64(q[0]), 1e6*0.94) // about minMaxLen:1
	assert.Greater(t, q[0], int64(minMaxLen/2))

	w := make([]float64, 3000) // every weight different
	for i := range w {
		w[i] = float64(1000 + i)
	}
	q = quantizeWeights(w)
	assert.LessOrEqual(t, sum(q)*int64(distinctCount(q)), int64(maxWork))
	for i := 1; i < len(q); i++ {
		require.GreaterOrEqual(t, q[i], q[i-1], "order kept")
	}
	assert.Equal(t, []int64{1}, quantizeWeights([]float64{1e6}), "one weight, one step")
}

func TestCycleIsExactUnderConcurrency(t *testing.T) {
	q := []int64{5, 1, 1, 3}
	c := newSmoothCycle(q, 12345)
	const perG, goroutines = 11 * 700, 8 // a multiple of the cycle each
	counts := make([][]int, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			counts[g] = make([]int, len(q))
			for range perG {
				counts[g][c.Next()]++
			}
		})
	}
	wg.Wait()
	total := make([]int, len(q))
	for _, cs := range counts {
		for i, x := range cs {
			total[i] += x
		}
	}
	n := goroutines * perG / 10
	assert.Equal(t, []int{5 * n, n, n, 3 * n}, total, "every pick of the cycle handed out exactly once")
	assert.Equal(t, 12345%10, c.currentPosition())
}

func TestNewCycleStartsAnywhere(t *testing.T) {
	want := []int32{0, 0, 1, 0, 2, 0, 0}
	for start := range uint64(20) {
		c := newSmoothCycle([]int64{5, 1, 1}, start)
		for k := range 14 {
			require.Equal(t, int(want[(int(start)+k)%7]), c.Next(), "start %d step %d", start, k)
		}
	}
}

func TestCycleBadInput(t *testing.T) {
	none := newSmoothCycle(quantizeWeights([]float64{0, -3}), 0) // nothing positive: all count as 1
	assert.Equal(t, []int{0, 1, 0, 1}, []int{none.Next(), none.Next(), none.Next(), none.Next()})

	c := newSmoothCycle([]int64{5, 1, 1}, 0)
	assert.Equal(t, 0, followCycle(c, []int64{2, 0}, []int{-9, -7}).Next(), "no entry carried over starts fresh")
}

// lagsOf returns the lags of c.
func lagsOf(c *smoothCycle) []float64 { return c.lags(make([]float64, len(c.weights))) }

func TestFollowSameWeightsContinues(t *testing.T) {
	c := newSmoothCycle([]int64{5, 1, 1}, 3)
	c.Next()
	assert.Same(t, c, followCycle(c, []int64{5, 1, 1}, []int{0, 1, 2}))
	assert.NotSame(t, c, followCycle(c, []int64{5, 1, 1}, []int{1, 0, 2}), "providers moved")
	assert.NotSame(t, c, followCycle(c, []int64{5, 2, 1}, []int{0, 1, 2}))
}

func TestFollowCarriesTheDebt(t *testing.T) {
	c := newSmoothCycle([]int64{5, 1, 1}, 0)
	for range 4 { // A A B A: C is owed 4/7 of a pick, A is 1/7 ahead
		c.Next()
	}
	assert.InDeltaSlice(t, []float64{20./7 - 3, 4./7 - 1, 4. / 7}, lagsOf(c), 1e-9)

	// C's weight doubles: its debt is kept, so C comes next, not A.
	d := followCycle(c, []int64{5, 1, 2}, []int{0, 1, 2})
	assert.Equal(t, 2, d.Next())
	// The lags of the new cycle are those carried over, up to where the
	// nearest state lies; the offset keeps the rest.
	e := followCycle(c, []int64{5, 1, 2}, []int{0, 1, 2})
	assert.InDeltaSlice(t, lagsOf(c), lagsOf(e), 1e-9)

	// B leaves, D arrives: D starts owing nothing, the others keep their
	// lags, shifted to sum to 0.
	f := followCycle(c, []int64{5, 1, 3}, []int{0, 2, -1})
	lags := lagsOf(f)
	shift := (lagsOf(c)[1]) / 3 // B's lag spread over the three
	assert.InDeltaSlice(t, []float64{lagsOf(c)[0] + shift, lagsOf(c)[2] + shift, shift}, lags, 1e-9)
	for range 90 {
		assert.NotEqual(t, -1, f.Next())
	}

	// A lag beyond maxLag is forgotten.
	g := newSmoothCycle([]int64{1, 1}, 0)
	g.offset[0], g.offset[1] = 10, -10
	h := followCycle(g, []int64{1, 2}, []int{0, 1})
	assert.InDeltaSlice(t, []float64{maxLag, -maxLag}, lagsOf(h), 1e-9)
}

// A ramp of one provider's weight, changed every `every` picks, as warmup
// does: the sequence stays as smooth as a fixed cycle.
func TestWeightRampStaysSmooth(t *testing.T) {
	for _, every := range []int{1, 2, 3, 7, 20} {
		w := []float64{100, 100, 100, 1}
		from := []int{0, 1, 2, 3}
		c := newSmoothCycle(quantizeWeights(w), 5)
		d := &dubboReset{}
		var ours, dubbo []int
		var due [][]float64
		for step := 0; w[3] < 100; step++ {
			if step > 0 && step%every == 0 {
				w[3]++
				c = followCycle(c, quantizeWeights(w), from)
			}
			q := quantizeWeights(w)
			ours = append(ours, c.Next())
			dubbo = append(dubbo, d.pick([]int64{100, 100, 100, int64(w[3])}))
			due = append(due, shares(q))
		}
		ex, short := burst(ours, due)
		for i := range ex {
			assert.Less(t, ex[i], 1.5, "every %d provider %d: excess", every, i)
			assert.Less(t, short[i], 1.5, "every %d provider %d: shortfall", every, i)
		}
		if every >= 7 {
			dex, dshort := burst(dubbo, due)
			assert.Greater(t, max(slices.Max(dex), slices.Max(dshort)), 2.5, "every %d: Dubbo's reset is bursty", every)
		}
	}
}

// Weights changing together in proportion, as when a fleet starts at once
// and warms up together: Dubbo resets every current value and starts its
// cycle over each time; ours keeps going.
func TestProportionalChangeKeepsTheCycle(t *testing.T) {
	c := newSmoothCycle([]int64{5, 1, 1}, 0)
	d := &dubboReset{}
	ours, dubbo := make([]int, 3), make([]int, 3)
	for step := range 700 {
		k := int64(10 + step/4) // every weight changes every 4 picks
		q := quantizeWeights([]float64{float64(5 * k), float64(k), float64(k)})
		c = followCycle(c, q, []int{0, 1, 2})
		ours[c.Next()]++
		dubbo[d.pick([]int64{5 * k, k, k})]++
	}
	assert.Equal(t, []int{500, 100, 100}, ours)
	assert.Zero(t, dubbo[2], "Dubbo never reaches C: %v", dubbo)
}

// Random weight changes, one provider at a time at random moments: bursts
// stay within a few picks, where Dubbo's reset makes them ten times larger.
func TestRandomChangesStaySmooth(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var worst, dubboWorst float64
	for trial := range 100 {
		n := 2 + r.IntN(10)
		w := make([]float64, n)
		for i := range w {
			w[i] = float64(1 + r.IntN(50))
		}
		from := make([]int, n)
		for i := range from {
			from[i] = i
		}
		q := quantizeWeights(w)
		c := newSmoothCycle(q, r.Uint64())
		d := &dubboReset{}
		var ours, dubbo []int
		var due [][]float64
		for range 3000 {
			if r.IntN(1+trial%20) == 0 {
				i := r.IntN(n)
				w[i] = max(1, math.Round(w[i]*(0.7+0.6*r.Float64())))
				q = quantizeWeights(w)
				c = followCycle(c, q, from)
			}
			ours = append(ours, c.Next())
			iw := make([]int64, n)
			for i := range iw {
				iw[i] = int64(w[i])
			}
			dubbo = append(dubbo, d.pick(iw))
			due = append(due, shares(q))
		}
		ex, short := burst(ours, due)
		worst = max(worst, slices.Max(ex), slices.Max(short))
		ex, short = burst(dubbo, due)
		dubboWorst = max(dubboWorst, slices.Max(ex), slices.Max(short))
	}
	t.Logf("largest burst: ours %.2f, Dubbo's reset %.2f picks", worst, dubboWorst)
	assert.Less(t, worst, 4.0)
	assert.Greater(t, dubboWorst, 10.0)
}
