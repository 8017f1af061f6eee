package algo

import (
	"math"
)

// Alias is Vose's alias table: a weighted pick in O(1) with one random
// number, whatever the number of items. It knows nothing of dubbo-go.
type Alias struct {
	// threshold[i] is the chance, scaled to 2^32, of keeping column i
	// rather than taking alias[i].
	threshold []uint32
	alias     []int32
}

// Draw returns an index of [0, n) drawn with the random word r: through
// a, in proportion to its weights, or uniformly when a is nil (the
// weights are all equal). n is the number of weights of a.
func (a *Alias) Draw(r uint64, n int) int {
	if a == nil {
		return IntN(r, n)
	}
	return a.Pick(r)
}

// NewAlias builds the table for weights. Negative, NaN and infinite weights
// count as 0; when no weight is positive every item is equally likely.
func NewAlias(weights []float64) *Alias {
	n := len(weights)
	a := &Alias{threshold: make([]uint32, n), alias: make([]int32, n)}
	if n == 0 {
		return a
	}
	total := 0.0
	for _, w := range weights {
		total += clean(w)
	}
	scaled, stack := aliasScaled.Get(n), aliasStack.Get(n)
	defer aliasScaled.Put(scaled)
	defer aliasStack.Put(stack)
	// scaled[i] = weight × n / total: a column of height 1 is "full". The
	// columns still open are on two stacks in one array: those below 1
	// (small) from its front, the others (large) from its back.
	small, large := 0, 0
	for i, w := range weights {
		if total > 0 {
			scaled[i] = clean(w) * float64(n) / total
		} else {
			scaled[i] = 1
		}
		if scaled[i] < 1 {
			stack[small] = int32(i)
			small++
		} else {
			large++
			stack[n-large] = int32(i)
		}
	}
	for small > 0 && large > 0 {
		small--
		s, l := stack[small], stack[n-large]
		a.threshold[s] = toThreshold(scaled[s])
		a.alias[s] = l
		// The large column gives what the small one lacked.
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large--
			stack[small] = l
			small++
		}
	}
	// What is left is full up to rounding.
	for _, i := range stack[:small] {
		a.threshold[i], a.alias[i] = math.MaxUint32, i
	}
	for _, i := range stack[n-large:] {
		a.threshold[i], a.alias[i] = math.MaxUint32, i
	}
	return a
}

func clean(w float64) float64 {
	if w > 0 && !math.IsInf(w, 1) {
		return w
	}
	return 0
}

func toThreshold(p float64) uint32 {
	if p <= 0 {
		return 0
	}
	if p >= 1 {
		return math.MaxUint32
	}
	return uint32(p * (1 << 32))
}

// Len returns the number of items.
func (a *Alias) Len() int { return len(a.threshold) }

// Pick returns an item for the uniformly random r: its high 32 bits choose
// a column, its low 32 bits choose between the column and its alias.
func (a *Alias) Pick(r uint64) int {
	i := int((r >> 32) * uint64(len(a.threshold)) >> 32)
	if uint32(r) >= a.threshold[i] {
		i = int(a.alias[i])
	}
	return i
}

// aliasScaled and aliasStack are the work memory of NewAlias (120 KB at
// 10 000 items).
var (
	aliasScaled Work[float64]
	aliasStack  Work[int32]
)
