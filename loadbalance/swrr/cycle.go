package swrr

import (
	"math"
	"slices"
	"sync/atomic"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
)

const (
	// resolution is how many units the largest weight gets, at least,
	// when some weight is fractional: weights are multiplied by a power of
	// ten until they are all integers or the largest reaches resolution,
	// then rounded. 1000 keeps a rounding error below 0.05 % of the
	// largest weight.
	resolution = 1000
	// minMaxLen is the longest cycle always allowed; a cycle may also be
	// as long as 4 entries per provider.
	minMaxLen = 1 << 16
	// maxWork bounds the cost of building a cycle, its length times the
	// number of distinct weights: about a millisecond at most.
	maxWork = 1 << 20
)

// The work memory of builds (see algo.Work): at 10 000 providers a change
// would otherwise leave about 600 KB of it to the garbage collector.
var (
	floatWork algo.Work[float64]
	int64Work algo.Work[int64]
	intWork   algo.Work[int]
)

// quantizeWeights turns weights into the integer weights of a cycle. Integer
// weights are kept exactly, divided by their greatest common divisor, when
// the cycle fits the limits (minMaxLen, maxWork); fractional ones are
// scaled to integers first (see resolution). A cycle that would be too long
// or too costly to build is shortened by scaling every weight by one factor
// and rounding, so each provider loses less than one unit of the shorter
// cycle. A positive weight never becomes 0. Weights that are not positive
// and finite become 0 (never picked), unless none is usable: then every
// provider gets 1.
func quantizeWeights(weights []float64) []int64 {
	q := make([]int64, len(weights))
	top := 0.0
	for _, w := range weights {
		if usable(w) {
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
		if usable(w) {
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
		// Too long: cut to the limit at once. Too costly only: shrink by
		// at most half a time, since coarser weights are also fewer
		// distinct ones, and a single cut would overshoot.
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

// usable reports whether w is a weight a provider can be picked with.
func usable(w float64) bool { return w > 0 && w <= math.MaxFloat64 }

// integral reports whether every usable weight times scale is an integer.
func integral(weights []float64, scale float64) bool {
	for _, w := range weights {
		if x := w * scale; usable(w) && math.Abs(x-math.Round(x)) > 1e-9*x {
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

// smoothSequence returns one period of nginx's smooth weighted round robin over
// the integer weights q, sum(q) entries long (quantizeWeights bounds it): at each step every entry's current value grows
// by its weight, the largest (the first of equals) is picked and loses the
// sum of the weights. Starting from all zeros, the values are all zero
// again after sum(q) steps, in which entry i was picked q[i] times, so the
// period repeats forever. Weights 5, 1, 1 give 0 0 1 0 2 0 0.
//
// Entries of equal weight grow alike, so among them the one picked the
// fewest times (the first of equals) is ahead, and they take turns in
// index order. smoothSequence follows one candidate per distinct weight rather
// than every entry, which makes a step cost the number of distinct weights,
// not of entries.
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

// smoothCycle is a precomputed period of the smooth weighted round robin and a
// position in it. Next, safe for concurrent use, costs one atomic
// increment: the sequence is exact without a lock or a pass over the
// providers.
type smoothCycle struct {
	seq     []int32
	weights []int64
	// offset[i] is how many picks entry i is owed beyond what the cycle
	// itself owes it at the same position: the part of the state carried
	// over from the previous cycle that the nearest state of this one could
	// not match (see carryCycle). Zero for a cycle that carried nothing over.
	offset []float64
	pos    *position
}

// position is the cycle's counter, alone on its cache lines: every pick
// writes it.
type position struct {
	_ [64]byte
	n atomic.Uint64
	_ [56]byte
}

// newSmoothCycle returns the cycle of integer weights q (see quantizeWeights), positioned
// at start: the first Next returns entry start mod the cycle's length. When
// no weight is positive every entry counts as 1. The cycle keeps q: do not
// modify it afterwards.
func newSmoothCycle(q []int64, start uint64) *smoothCycle {
	if len(q) > 0 && slices.Max(q) <= 0 {
		for i := range q {
			q[i] = 1
		}
	}
	c := &smoothCycle{seq: smoothSequence(q), weights: q, offset: make([]float64, len(q)), pos: new(position)}
	if len(c.seq) > 0 {
		c.pos.n.Store(start % uint64(len(c.seq)))
	}
	return c
}

// Next returns the index of the next entry of the sequence, or -1 if the
// cycle has no entry.
func (c *smoothCycle) Next() int {
	if len(c.seq) == 0 {
		return -1
	}
	k := c.pos.n.Add(1) - 1
	return int(c.seq[k%uint64(len(c.seq))])
}

// Len returns the length of the cycle, the sum of its integer weights.
func (c *smoothCycle) Len() int { return len(c.seq) }

// Weights returns the integer weights of the cycle; do not modify them.
func (c *smoothCycle) Weights() []int64 { return c.weights }

// currentPosition returns the index in the cycle of the entry Next returns next.
func (c *smoothCycle) currentPosition() int {
	if len(c.seq) == 0 {
		return 0
	}
	return int(c.pos.n.Load() % uint64(len(c.seq)))
}

// lags returns, for each entry, the picks it is owed now: the picks its
// weight entitled it to minus those it got, counted since its first cycle
// (positive when it is behind). It is nginx's current value divided by the
// sum of the weights. Within one cycle every lag stays within [-1, 1] of
// its offset.
func (c *smoothCycle) lags() []float64 {
	return c.lagsInto(make([]float64, len(c.weights)))
}

// lagsInto writes the lags into lags, of the cycle's length and zeroed,
// and returns it.
func (c *smoothCycle) lagsInto(lags []float64) []float64 {
	c.cycleLags(c.currentPosition(), lags)
	for i := range lags {
		lags[i] += c.offset[i]
	}
	return lags
}

// cycleLags writes into lags, of the cycle's length and zeroed, the lags
// of the cycle alone, from zero, before its entry k.
func (c *smoothCycle) cycleLags(k int, lags []float64) {
	for _, i := range c.seq[:k] {
		lags[i]--
	}
	n := float64(len(c.seq))
	for i, w := range c.weights {
		lags[i] += float64(k) * float64(w) / n
	}
}

// maxLag bounds the picks a provider can be owed, or be ahead, across a
// change of cycle; anything beyond is forgotten.
const maxLag = 2

// carryCycle returns the cycle of integer weights q that continues the
// cycles it replaces, whose entries owe the picks carried says (their lags
// there, 0 for a new entry).
//
// The state is carried over as nginx's current values rescaled to the new
// sum of weights: each entry keeps its lag, the picks it is owed (lags),
// bounded by maxLag; entries that left are dropped and new ones start at 0,
// and the lags are shifted so that they sum to 0, as nginx's values always
// do. The new cycle starts at the position whose own state is nearest to
// that (least squares), and what remains is kept as the offset, so a
// provider's debt is never lost however often weights change. In tests
// with random weight changes, no provider gets more than 4 picks beyond or
// short of its due in any window (a fixed cycle: 2). Dubbo resets a changed
// provider's current value to 0 instead, which loses the debt at every
// change: bursts of 20 picks and more in the same tests, and a provider
// that is never picked when every weight changes every few picks. (The
// same providers in the same order at the same integer weights, weights
// that moved in one proportion, keep the very cycle instead: sameCycle.)
func carryCycle(q []int64, carried []float64) *smoothCycle {
	c := newSmoothCycle(q, 0)
	q = c.weights
	if len(c.seq) == 0 {
		return c
	}
	target := floatWork.Get(len(q))
	defer floatWork.Put(target)
	mean, active := 0.0, 0
	for i := range q {
		if q[i] <= 0 {
			continue
		}
		target[i] = max(-maxLag, min(maxLag, carried[i]))
		mean += target[i]
		active++
	}
	if active > 0 {
		mean /= float64(active)
	}
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

// followCycle returns the cycle of integer weights q that continues prev:
// from[i] is the index in prev of entry i, or -1 for a new entry (a from
// of another length than q carries nothing over). The same entries at the
// same weights keep prev itself, counter included, so the order goes on
// as if nothing had changed; otherwise their lags are carried over
// (carryCycle).
func followCycle(prev *smoothCycle, q []int64, from []int) *smoothCycle {
	if len(from) == len(prev.weights) && slices.Equal(q, prev.weights) && identity(from) {
		return prev
	}
	if len(from) != len(q) {
		return newSmoothCycle(q, 0)
	}
	old := prev.lagsInto(floatWork.Get(len(prev.weights)))
	defer floatWork.Put(old)
	carried := floatWork.Get(len(q))
	defer floatWork.Put(carried)
	for i, j := range from {
		if j >= 0 && j < len(old) {
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
// target: the least sum over entries of (lag_i(k) - target_i)². The sum is
// updated in O(1) per step: with a_i = lag_i - target_i and p_i entry i's
// share, a step adds p_i to every a_i and takes 1 from the picked one.
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
