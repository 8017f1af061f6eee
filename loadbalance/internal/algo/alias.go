package algo

import "math"

// Alias is Vose's alias table: a weighted pick in O(1) with one random word.
type Alias struct {
	// threshold[i] is the chance, scaled to 2^32, of keeping column i
	// rather than taking alias[i].
	threshold []uint32
	alias     []int32
}

// Draw returns an index of [0, n) drawn with the random word r: by a's
// weights, or uniformly when a is nil (equal weights).
func (a *Alias) Draw(r uint64, n int) int {
	if a == nil {
		return IntN(r, n)
	}
	return a.Pick(r)
}

// NewAlias builds the table for weights. Weights that are not Usable count
// as 0; when none is positive every item is equally likely.
func NewAlias(weights []float64) *Alias {
	n := len(weights)
	a := &Alias{threshold: make([]uint32, n), alias: make([]int32, n)}
	if n == 0 {
		return a
	}
	total := 0.0
	for _, w := range weights {
		total += usable(w)
	}
	scaled, stack := aliasScaled.Get(n), aliasStack.Get(n)
	defer aliasScaled.Put(scaled)
	defer aliasStack.Put(stack)
	// scaled[i] = weight × n / total (1 is a full column). The open columns
	// are on two stacks in one array: below 1 from the front, the others
	// from the back.
	small, large := 0, 0
	for i, w := range weights {
		scaled[i] = 1
		if total > 0 {
			scaled[i] = usable(w) * float64(n) / total
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
		a.threshold[s], a.alias[s] = toThreshold(scaled[s]), l
		scaled[l] -= 1 - scaled[s] // the large column gives what the small one lacked
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

// usable is w if Usable, else 0.
func usable(w float64) float64 {
	if Usable(w) {
		return w
	}
	return 0
}

func toThreshold(p float64) uint32 {
	if p >= 1 {
		return math.MaxUint32
	}
	return uint32(max(p, 0) * (1 << 32))
}

// Pick returns an item for the random word r: its high 32 bits choose a
// column, its low 32 bits the column or its alias.
func (a *Alias) Pick(r uint64) int {
	i := IntN(r, len(a.threshold))
	if uint32(r) >= a.threshold[i] {
		i = int(a.alias[i])
	}
	return i
}

// The work memory of NewAlias.
var (
	aliasScaled Work[float64]
	aliasStack  Work[int32]
)
