package swrr

import (
	"math"
	"slices"
	"sync/atomic"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
)

const (
	// resolution is how many units the largest weight gets, at least, when
	// some weight is fractional.
	resolution = 1000
	// A cycle is at most max(minMaxLen, 4 × providers) long, and costs at
	// most maxWork (its length times its distinct weights) to build.
	minMaxLen = 1 << 16
	maxWork   = 1 << 20
	// maxLag bounds the picks a provider can be owed, or be ahead, across
	// a change of cycle; beyond is forgotten.
	maxLag = 2
)

// The work memory of builds (see algo.Work).
var (
	floatWork algo.Work[float64]
	int64Work algo.Work[int64]
	intWork   algo.Work[int]
)

// quantizeWeights turns weights into the integer weights of a cycle:
// integers exactly, divided by their greatest common divisor; fractions
// scaled by powers of ten until they are integers or the largest reaches
// resolution, then rounded. A cycle too long or too costly to build is
// shortened by scaling every weight by one factor and rounding. A positive
// weight never becomes 0; a weight that is not positive and finite does,
// unless none is usable: then every provider gets 1.
func quantizeWeights(weights []float64) []int64 {
	q := make([]int64, len(weights))
	top := 0.0
	for _, w := range weights {
		if algo.Usable(w) {
			top = max(top, w)
		}
	}
	if top == 0 {
		for i := range q {
			q[i] = 1
		}
		return q
	}
	scale := 1.0
	if top > 1<<40 {
		scale = (1 << 40) / top
	} else {
		for !integral(weights, scale) && top*scale < resolution {
			scale *= 10
		}
	}
	for i, w := range weights {
		if algo.Usable(w) {
			q[i] = max(1, int64(math.Round(w*scale)))
		}
	}
	reduce(q)
	maxLen := max(minMaxLen, 4*int64(len(q)))
	for {
		n, distinct := sum(q), distinctCount(q)
		if n <= maxLen && float64(n)*float64(distinct) <= maxWork || (distinct == 1 && n <= int64(len(q))) {
			return q
		}
		// Too long: cut to the limit at once. Too costly only: at most
		// halve, as coarser weights are also fewer distinct ones.
		f := max(0.5, float64(maxWork)/(float64(n)*float64(distinct)))
		if n > maxLen {
			f = min(f, float64(maxLen)/float64(n))
		}
		for i, x := range q {
			if x > 0 {
				q[i] = max(1, int64(math.Round(float64(x)*f)))
			}
		}
		if sum(q) >= n { // rounding undid the cut: halve instead
			for i, x := range q {
				if x > 0 {
					q[i] = max(1, x/2)
				}
			}
		}
		reduce(q)
	}
}

// integral reports whether every usable weight times scale is an integer.
func integral(weights []float64, scale float64) bool {
	for _, w := range weights {
		if x := w * scale; algo.Usable(w) && math.Abs(x-math.Round(x)) > 1e-9*x {
			return false
		}
	}
	return true
}

// reduce divides q by the greatest common divisor of its elements.
func reduce(q []int64) {
	g := int64(0)
	for _, x := range q {
		for y := x; y != 0; {
			g, y = y, g%y
		}
	}
	if g > 1 {
		for i := range q {
			q[i] /= g
		}
	}
}

func sum(q []int64) int64 {
	n := int64(0)
	for _, x := range q {
		n += x
	}
	return n
}

// distinctCount returns the number of distinct positive values in q.
func distinctCount(q []int64) int {
	s := int64Work.Get(len(q))
	defer int64Work.Put(s)
	copy(s, q)
	slices.Sort(s)
	n := 0
	for i, x := range s {
		if x > 0 && (i == 0 || x != s[i-1]) {
			n++
		}
	}
	return n
}

// smoothSequence returns one period of nginx's smooth weighted round robin
// over the integer weights q, sum(q) picks: at each step every entry's
// current value grows by its weight, and the largest (the first of equals)
// is picked and loses the sum. Weights 5, 1, 1 give 0 0 1 0 2 0 0. Entries
// of equal weight take turns in index order, so a step follows one
// candidate per distinct weight, not every entry.
func smoothSequence(q []int64) []int32 {
	type group struct {
		weight  int64
		members []int32
		next    int   // index into members of the next to be picked
		rounds  int64 // times every member was picked
	}
	var groups []group
	at := map[int64]int{}
	total := int64(0)
	for i, w := range q {
		if w <= 0 {
			continue
		}
		total += w
		g, ok := at[w]
		if !ok {
			g = len(groups)
			at[w] = g
			groups = append(groups, group{weight: w})
		}
		groups[g].members = append(groups[g].members, int32(i))
	}
	seq := make([]int32, total)
	for k := int64(1); k <= total; k++ {
		// The current value of a member picked r times is k·w − total·r.
		best, bestG, bestIdx := int64(math.MinInt64), -1, int32(0)
		for j := range groups {
			g := &groups[j]
			v, idx := k*g.weight-total*g.rounds, g.members[g.next]
			if v > best || v == best && idx < bestIdx {
				best, bestG, bestIdx = v, j, idx
			}
		}
		seq[k-1] = bestIdx
		g := &groups[bestG]
		if g.next++; g.next == len(g.members) {
			g.next, g.rounds = 0, g.rounds+1
		}
	}
	return seq
}

// smoothCycle is a period of the smooth weighted round robin and a position
// in it. Next, safe for concurrent use, is one atomic increment.
type smoothCycle struct {
	seq     []int32
	weights []int64
	// offset[i] is how many picks entry i is owed beyond what the cycle
	// owes it at the same position: what carryCycle could not match.
	offset []float64
	pos    *position
}

// position is the cycle's counter, alone on its cache lines.
type position struct {
	_ [64]byte
	n atomic.Uint64
	_ [56]byte
}

// newSmoothCycle returns the cycle of q (quantizeWeights), which it keeps,
// whose first Next is entry start mod its length.
func newSmoothCycle(q []int64, start uint64) *smoothCycle {
	c := &smoothCycle{seq: smoothSequence(q), weights: q, offset: make([]float64, len(q)), pos: new(position)}
	c.pos.n.Store(start % uint64(len(c.seq)))
	return c
}

// Next returns the index of the next entry of the sequence.
func (c *smoothCycle) Next() int {
	k := c.pos.n.Add(1) - 1
	return int(c.seq[k%uint64(len(c.seq))])
}

// currentPosition returns the index in the cycle of the entry Next returns next.
func (c *smoothCycle) currentPosition() int {
	return int(c.pos.n.Load() % uint64(len(c.seq)))
}

// lags writes into lags, zeroed and as long as the weights, and returns,
// the picks each entry is owed now, counted since its first cycle
// (positive when it is behind): nginx's current value divided by the sum
// of the weights.
func (c *smoothCycle) lags(lags []float64) []float64 {
	c.cycleLags(c.currentPosition(), lags)
	for i := range lags {
		lags[i] += c.offset[i]
	}
	return lags
}

// cycleLags writes into lags, zeroed, the lags of the cycle alone, from
// zero, before its entry k.
func (c *smoothCycle) cycleLags(k int, lags []float64) {
	for _, i := range c.seq[:k] {
		lags[i]--
	}
	n := float64(len(c.seq))
	for i, w := range c.weights {
		lags[i] += float64(k) * float64(w) / n
	}
}

// carryCycle returns the cycle of q that continues cycles whose entries
// are owed carried (their lags, 0 for a new entry): each keeps its lag,
// within ±maxLag, shifted so that the lags sum to 0 as nginx's values do;
// the cycle starts at the position whose own lags are nearest (least
// squares), and offset keeps the rest.
func carryCycle(q []int64, carried []float64) *smoothCycle {
	c := newSmoothCycle(q, 0)
	target := floatWork.Get(len(q))
	defer floatWork.Put(target)
	mean, active := 0.0, 0
	for i := range q {
		if q[i] > 0 {
			target[i] = max(-maxLag, min(maxLag, carried[i]))
			mean += target[i]
			active++
		}
	}
	mean /= float64(active)
	for i := range target {
		if q[i] > 0 {
			target[i] -= mean
		}
	}
	k := c.nearest(target)
	lags := floatWork.Get(len(q))
	defer floatWork.Put(lags)
	c.cycleLags(k, lags)
	for i := range target {
		if q[i] > 0 {
			c.offset[i] = target[i] - lags[i]
		}
	}
	c.pos.n.Store(uint64(k))
	return c
}

// followCycle returns the cycle of q that continues prev: from[i] is the
// index in prev of entry i, -1 for a new one. The same entries at the same
// weights keep prev itself, counter included; otherwise their lags are
// carried over (carryCycle).
func followCycle(prev *smoothCycle, q []int64, from []int) *smoothCycle {
	if slices.Equal(q, prev.weights) && identity(from) {
		return prev
	}
	old := prev.lags(floatWork.Get(len(prev.weights)))
	defer floatWork.Put(old)
	carried := floatWork.Get(len(q))
	defer floatWork.Put(carried)
	for i, j := range from {
		if j >= 0 {
			carried[i] = old[j]
		}
	}
	return carryCycle(q, carried)
}

func identity(from []int) bool {
	for i, j := range from {
		if i != j {
			return false
		}
	}
	return true
}

// nearest returns the position k of the cycle whose lags are nearest to
// target: the least Σ (lag_i(k) − target_i)², updated in O(1) a step (with
// a_i = lag_i − target_i and p_i entry i's share, a step adds p_i to every
// a_i and takes 1 from the picked one).
func (c *smoothCycle) nearest(target []float64) int {
	n := float64(len(c.seq))
	share := floatWork.Get(len(c.weights))
	defer floatWork.Put(share)
	var sq, dot, p2 float64 // Σ a_i², Σ p_i·a_i, Σ p_i²
	for i, w := range c.weights {
		if w <= 0 {
			continue
		}
		share[i] = float64(w) / n
		a := -target[i]
		sq += a * a
		dot += share[i] * a
		p2 += share[i] * share[i]
	}
	picks := floatWork.Get(len(c.weights))
	defer floatWork.Put(picks)
	best, bestSq := 0, sq
	for k, j := range c.seq[:len(c.seq)-1] {
		sq += 2*dot + p2
		dot += p2
		a := float64(k+1)*share[j] - picks[j] - target[j]
		sq += 1 - 2*a
		dot -= share[j]
		picks[j]++
		if sq < bestSq-1e-9 {
			best, bestSq = k+1, sq
		}
	}
	return best
}
