package swrr

import (
	"math"
	"slices"

	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
)

// table is the balancer's state for one snapshot: a cycle for each part of
// the Set (member.Parts), over the part's providers, and above one part
// the spread that picks the part. A part that stays with the same weights
// keeps its cycle, counter included, so a change makes only the cycles of
// the parts it touches (DESIGN.md, "Parts").
type table struct {
	parts *member.Parts[smoothCycle]
	one   *smoothCycle // the cycle of a Set of one part, else nil
	top   *spread      // the spread of a Set of more parts, else nil
}

// next returns the position of the next provider, -1 for a Set of none.
func (t *table) next() int {
	if t.one != nil {
		return t.one.Next()
	}
	if t.top == nil {
		return -1
	}
	c, start, _ := t.parts.At(t.top.next())
	return start + c.Next()
}

// build makes the table of a snapshot. A part made again has the cycle of
// its providers' integer weights: at a random position when none of them
// was there before, else carrying over what each was owed in its cycle
// before (carryCycle), or the very cycle before when the part holds the
// same providers at the same integer weights.
func (b *Balancer) build(s *member.Set, prev *member.View[table]) *table {
	t := &table{}
	var old *member.Parts[smoothCycle]
	var oldTop *spread
	if prev != nil {
		old, oldTop = prev.Table.parts, prev.Table.top
	}
	var lags lagCache
	defer lags.release()
	t.parts = member.NewParts(s, old, func(start int, weights []float64, was member.Was[smoothCycle]) *smoothCycle {
		q := quantizeWeights(weights)
		if c := sameCycle(q, start, was); c != nil {
			return c
		}
		carried := floatWork.Get(len(q))
		defer floatWork.Put(carried)
		some := false
		for o := range q {
			if c, j, ok := was(start + o); ok {
				carried[o] = lags.of(c)[j]
				some = true
			}
		}
		if !some {
			return newSmoothCycle(q, b.sk.Rand())
		}
		return carryCycle(q, carried)
	})
	if t.parts.Len() == 1 {
		t.one, _, _ = t.parts.At(0)
		return t
	}
	if n := t.parts.Len(); n > 1 { // (none: a Set of no provider)
		w := floatWork.Get(n)
		defer floatWork.Put(w)
		for k := range w {
			for _, x := range t.parts.Weights(k) {
				w[k] += x
			}
		}
		x0, at := b.sk.Rand(), uint64(0)
		if oldTop != nil { // the order over the parts goes on
			x0, at = oldTop.x0, oldTop.pos.n.Load()
		}
		t.top = newSpread(w, x0, at)
	}
	return t
}

// sameCycle returns the cycle that held the providers at start onwards, in
// the same order and nothing else, when its integer weights are q: the
// part goes on with it, not a single step skipped or repeated. Else nil.
func sameCycle(q []int64, start int, was member.Was[smoothCycle]) *smoothCycle {
	var same *smoothCycle
	for o := range q {
		c, j, ok := was(start + o)
		if !ok || j != o || same != nil && c != same {
			return nil
		}
		same = c
	}
	if same == nil || len(same.weights) != len(q) || !slices.Equal(same.weights, q) {
		return nil
	}
	return same
}

// lagCache holds the lags of the cycles before that a build reads, each
// computed once (a walk of its cycle).
type lagCache struct {
	cycles []*smoothCycle
	lags   [][]float64
}

// of returns the lags of c (smoothCycle.lagsInto).
func (l *lagCache) of(c *smoothCycle) []float64 {
	for k, d := range l.cycles {
		if d == c {
			return l.lags[k]
		}
	}
	l.cycles = append(l.cycles, c)
	l.lags = append(l.lags, c.lagsInto(floatWork.Get(len(c.weights))))
	return l.lags[len(l.lags)-1]
}

// release gives the lags back to the work memory.
func (l *lagCache) release() {
	for _, x := range l.lags {
		floatWork.Put(x)
	}
}

// golden is 2⁶⁴ divided by the golden ratio, rounded to odd: the step of
// spread's sequence.
const golden = 0x9E3779B97F4A7C15

// spread picks parts in proportion to their weights, in an order as even
// as a fixed order can be without a cycle to store: pick k goes to the
// part whose share of [0, 2⁶⁴) holds x0 + k·golden (mod 2⁶⁴), an additive
// recurrence of the golden ratio (a Kronecker sequence). A part's picks
// then come at gaps of at most three lengths (the three-gap theorem), and
// over any number of picks its count is within a few of its due. O(parts)
// memory; a pick is one atomic increment and a binary search.
type spread struct {
	// ends[k] is the end of part k's share of [0, 2⁶⁴), cumulative; the
	// last part of positive weight, and those after it, end at the top.
	ends []uint64
	// first[b] is the first part whose share ends after the start of
	// bucket b of [0, 2⁶⁴) (its top spreadBits bits): where a pick's
	// search starts.
	first []int32
	x0    uint64
	pos   *position
}

// spreadBits sets the number of buckets of spread.first: 2⁸, a few times
// the parts of 10 000 providers, so that a pick looks at one or two.
const spreadBits = 8

// newSpread returns the spread of parts of the given weights (any that is
// not positive and finite counts as 0; all such: every part counts as 1),
// at pick at of the sequence that starts at x0.
func newSpread(weights []float64, x0, at uint64) *spread {
	s := &spread{ends: make([]uint64, len(weights)), x0: x0, pos: new(position)}
	total, last := 0.0, -1
	for k, w := range weights {
		if usable(w) {
			total += w
			last = k
		}
	}
	acc := 0.0
	for k, w := range weights {
		switch {
		case last < 0:
			acc++ // no usable weight: equal shares
		case usable(w):
			acc += w
		}
		if last < 0 {
			s.ends[k] = fraction(acc / float64(len(weights)))
		} else {
			s.ends[k] = fraction(acc / total)
		}
		if k >= last && last >= 0 {
			s.ends[k] = math.MaxUint64
		}
	}
	if len(weights) > 0 {
		s.ends[len(weights)-1] = math.MaxUint64
	}
	s.first = make([]int32, 1<<spreadBits)
	k := 0
	for b := range s.first {
		for s.ends[k] <= uint64(b)<<(64-spreadBits) {
			k++
		}
		s.first[b] = int32(k)
	}
	s.pos.n.Store(at)
	return s
}

// fraction returns f in [0, 1] as a share of 2⁶⁴, the top for 1.
func fraction(f float64) uint64 {
	x := f * (1 << 64)
	if !(x < 1<<64) {
		return math.MaxUint64
	}
	return uint64(x)
}

// next returns the part of the next pick.
func (s *spread) next() int {
	x := s.x0 + (s.pos.n.Add(1)-1)*golden
	k := int(s.first[x>>(64-spreadBits)]) // the first k with x < ends[k]
	for x >= s.ends[k] && k < len(s.ends)-1 {
		k++
	}
	return k
}
