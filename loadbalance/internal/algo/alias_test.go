package algo

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// exact returns the probability of each item of a, computed from the table.
func exact(a *Alias) []float64 {
	cols := len(a.threshold)
	p := make([]float64, cols)
	for i := range p {
		keep := float64(a.threshold[i]) / (1 << 32)
		p[i] += keep / float64(cols)
		p[a.alias[i]] += (1 - keep) / float64(cols)
	}
	return p
}

func TestAliasProbabilitiesAreExact(t *testing.T) {
	for _, w := range [][]float64{
		{1, 9}, {1, 1, 2}, {5, 1, 1}, {0, 3, 0, 1}, {0.4, 0.1, 100, 7, 7, 7, 1e6},
		{1}, {math.NaN(), 1, -4, math.Inf(1)},
	} {
		total := 0.0
		for _, x := range w {
			total += usable(x)
		}
		p := exact(NewAlias(w))
		for i := range w {
			assert.InDelta(t, usable(w[i])/total, p[i], 1e-8, "weights %v item %d", w, i)
		}
	}
	// No positive weight: uniform.
	assert.InDeltaSlice(t, []float64{1. / 3, 1. / 3, 1. / 3}, exact(NewAlias([]float64{0, 0, 0})), 1e-8)
	assert.Equal(t, 0, len(NewAlias(nil).threshold))
}

func TestAliasPickNeverOutOfRange(t *testing.T) {
	a := NewAlias([]float64{1, 2, 3})
	for _, r := range []uint64{0, math.MaxUint64, 1 << 63, math.MaxUint32} {
		i := a.Pick(r)
		assert.True(t, i >= 0 && i < 3)
	}
}

func TestPairIsDistinctAndUniform(t *testing.T) {
	const n = 5
	var c [n][n]int
	r := Seeded(1).Uint64
	for range 50_000 {
		i, j := Pair(r(), n)
		if i == j || i < 0 || j < 0 || i >= n || j >= n {
			t.Fatalf("Pair gave %d, %d", i, j)
		}
		c[i][j]++
	}
	for i := range n {
		for j := range n {
			if i != j {
				assert.InDelta(t, 50_000/20, c[i][j], 250, "pair %d,%d", i, j)
			}
		}
	}
	for _, r := range []uint64{0, math.MaxUint64} {
		i, j := Pair(r, 2)
		assert.NotEqual(t, i, j)
	}
}

func TestWeighted(t *testing.T) {
	w := []float64{1, 0, math.NaN(), 3, math.Inf(1), -2}
	at := func(i int) float64 { return w[i] }
	var c [6]int
	r := Seeded(2).Uint64
	for range 40_000 {
		c[Weighted(len(w), at, r())]++
	}
	assert.Equal(t, 0, c[1]+c[2]+c[4]+c[5], "unusable weights are never drawn")
	assert.InDelta(t, 10_000, c[0], 400)
	assert.Equal(t, 1, Weighted(3, func(int) float64 { return 0 }, 1<<63), "uniform when no weight is usable")
	assert.Equal(t, 3, Weighted(len(w), at, math.MaxUint64), "the top of the range")
}

func TestDrawIsUniformWithoutATable(t *testing.T) {
	var a *Alias
	seen := make([]int, 4)
	for r := uint64(0); r < 1<<16; r++ {
		seen[a.Draw(r<<48, 4)]++
	}
	for i, n := range seen {
		if n != 1<<14 {
			t.Errorf("index %d drawn %d times of %d, want %d", i, n, 1<<16, 1<<14)
		}
	}
	if got := NewAlias([]float64{0, 1}).Draw(12345, 2); got != 1 {
		t.Errorf("a table with one positive weight drew %d, want 1", got)
	}
}

// Tables built one after another share NewAlias's work memory: each is
// still exact, whatever the size and weights of the one before.
func TestAliasesBuiltInTurnAreExact(t *testing.T) {
	for k, n := range []int{1000, 7, 1000, 3, 2500} {
		w := make([]float64, n)
		total := 0.0
		for i := range w {
			w[i] = float64((i*7+k*13)%11) + 0.5*float64(k%2)
			total += w[i]
		}
		p := exact(NewAlias(w))
		for i := range w {
			if !assert.InDelta(t, w[i]/total, p[i], 1e-8, "table %d of %d items, item %d", k, n, i) {
				break
			}
		}
	}
}

// A zone of one provider asks for a pair among one: both are that one.
func TestPairOfOneIsThatOne(t *testing.T) {
	for _, r := range []uint64{0, 1, 1 << 32, ^uint64(0)} {
		if i, j := Pair(r, 1); i != 0 || j != 0 {
			t.Errorf("Pair(%#x, 1) = %d, %d; want 0, 0", r, i, j)
		}
	}
}
