package lalb

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// inorder returns the node indexes of an n-node tree in the order Pick lays
// their ranges out.
func inorder(n int) []int {
	var out []int
	var walk func(i int)
	walk = func(i int) {
		if i >= n {
			return
		}
		walk(2*i + 1)
		out = append(out, i)
		walk(2*i + 2)
	}
	walk(0)
	return out
}

// refPick is the brute-force reference: a linear scan of prefix sums over
// the in-order sequence.
func refPick(w []int64, order []int, r int64) int {
	for _, i := range order {
		if r < w[i] {
			return i
		}
		r -= w[i]
	}
	return -1
}

// checkSums verifies that, with no Set running, every subtree sum and the
// total are exact.
func checkSums(t *testing.T, tr *weightTree) {
	t.Helper()
	n := tr.Len()
	sub := make([]int64, n) // by node index
	for k := n - 1; k >= 0; k-- {
		s := tr.nodes[k].self.Load()
		for _, c := range []int{2*k + 1, 2*k + 2} {
			if c < n {
				s += sub[c]
			}
		}
		if got := tr.nodes[k].sum.Load(); got != s {
			t.Fatalf("n=%d item %d: subtree sum %d, want %d", n, k, got, s)
		}
		sub[k] = s
	}
	var want int64
	if n > 0 {
		want = sub[0]
	}
	if got := tr.Total(); got != want {
		t.Fatalf("n=%d: total %d, want %d", n, got, want)
	}
}

func sum(w []int64) (s int64) {
	for _, x := range w {
		s += x
	}
	return s
}

// checkPicks compares Pick with the reference at every boundary and at
// random points.
func checkPicks(t *testing.T, tr *weightTree, w []int64, rng *rand.Rand) {
	t.Helper()
	order := inorder(len(w))
	total := sum(w)
	if total == 0 {
		if got := tr.Pick(0); got != -1 {
			t.Fatalf("all-zero tree picked %d", got)
		}
		return
	}
	var points []int64
	var acc int64
	for _, i := range order {
		if w[i] > 0 {
			points = append(points, acc, acc+w[i]-1)
		}
		acc += w[i]
	}
	for range 50 {
		points = append(points, rng.Int64N(total))
	}
	for _, r := range points {
		got, want := tr.Pick(uint64(r)), refPick(w, order, r)
		if got != want {
			t.Fatalf("n=%d r=%d: Pick %d, reference %d (weights %v)", len(w), r, got, want, w)
		}
		if w[got] == 0 {
			t.Fatalf("n=%d r=%d: picked zero-weight item %d", len(w), r, got)
		}
	}
}

func randWeights(rng *rand.Rand, n int) []int64 {
	w := make([]int64, n)
	for i := range w {
		if rng.IntN(5) > 0 { // some zeros
			w[i] = rng.Int64N(1000)
		}
	}
	return w
}

func TestTreeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for n := 1; n <= 70; n++ {
		w := randWeights(rng, n)
		tr := newWeightTree(w)
		checkSums(t, tr)
		checkPicks(t, tr, w, rng)
		for range 30 {
			i := rng.IntN(n)
			nw := rng.Int64N(1000)
			if rng.IntN(4) == 0 {
				nw = 0
			}
			if old := tr.Weight(i); old != w[i] {
				t.Fatalf("n=%d Weight(%d) = %d, want %d", n, i, old, w[i])
			}
			tr.Set(i, nw)
			w[i] = nw
			checkSums(t, tr)
			checkPicks(t, tr, w, rng)
		}
		if got := tr.Weights(nil); len(got) != n {
			t.Fatalf("Weights: %d items, want %d", len(got), n)
		} else {
			for i := range got {
				if got[i] != w[i] || tr.Weight(i) != w[i] {
					t.Fatalf("n=%d item %d: Weights %d, providerWeight %d, want %d", n, i, got[i], tr.Weight(i), w[i])
				}
			}
		}
	}
}

func TestTreeRemoveHalf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for n := 1; n <= 70; n++ {
		w := make([]int64, n)
		for i := range w {
			w[i] = 1 + rng.Int64N(1000)
		}
		tr := newWeightTree(w)
		// Remove every other item by setting it to 0.
		var kept []int64
		for i := range w {
			if i%2 == 1 {
				tr.Set(i, 0)
				w[i] = 0
			} else {
				kept = append(kept, w[i])
			}
		}
		if got := sum(tr.Weights(nil)); got != tr.Total() {
			t.Fatalf("n=%d after zeroing: sum of leaves %d, Total %d", n, got, tr.Total())
		}
		checkSums(t, tr)
		checkPicks(t, tr, w, rng)
		// Rebuild without them, as a table build does on a membership change.
		nt := newWeightTree(kept)
		if got, want := nt.Total(), sum(kept); got != want || got != tr.Total() {
			t.Fatalf("n=%d rebuilt: Total %d, want %d (old tree %d)", n, got, want, tr.Total())
		}
		checkSums(t, nt)
		checkPicks(t, nt, kept, rng)
	}
}

// TestTreeDistribution: Choose maps the range of a random word onto the
// items in proportion to their weights, exactly: 1024 words spread evenly
// over it pick 1:1:2 as 256, 256, 512; Pick maps [0, Total) exactly.
func TestTreeDistribution(t *testing.T) {
	tr := newWeightTree([]int64{1, 1, 2})
	const m = 1024
	var c [3]int
	step := math.MaxUint64/uint64(m) + 1
	for j := range uint64(m) {
		c[tr.choose(j*step)]++
	}
	assert.Equal(t, [3]int{256, 256, 512}, c, "Choose over evenly spread words")
	c = [3]int{}
	for r := range uint64(tr.Total()) {
		c[tr.Pick(r)]++
	}
	assert.Equal(t, [3]int{1, 1, 2}, c, "Pick over [0, Total)")
	// The ends of the word's range are the ends of [0, Total).
	assert.Equal(t, tr.Pick(0), tr.choose(0))
	assert.Equal(t, tr.Pick(uint64(tr.Total()-1)), tr.choose(math.MaxUint64))
}

func TestTreeEdges(t *testing.T) {
	if got := newWeightTree(nil).Pick(0); got != -1 {
		t.Errorf("empty tree: Pick %d, want -1", got)
	}
	if got := newWeightTree(nil).choose(12345); got != -1 {
		t.Errorf("empty tree: Choose %d, want -1", got)
	}
	if got := newWeightTree([]int64{0, 0, 0}).choose(1 << 63); got != -1 {
		t.Errorf("all-zero tree: Choose %d, want -1", got)
	}
	tr := newWeightTree([]int64{-5, 3, maxLeafWeight + 10})
	if tr.Weight(0) != 0 || tr.Weight(2) != maxLeafWeight {
		t.Errorf("clamping at build: weights %v", tr.Weights(nil))
	}
	tr.Set(1, -7)
	if tr.Weight(1) != 0 {
		t.Errorf("Set(-7) stored %d, want 0", tr.Weight(1))
	}
	tr.Set(3, 10)
	tr.Set(-1, 10)
	if tr.Weight(3) != 0 || tr.Weight(-1) != 0 {
		t.Errorf("out-of-range Set or providerWeight not ignored")
	}
	checkSums(t, tr)
	// r beyond the total is reduced modulo the total, never out of range.
	tr = newWeightTree([]int64{0, 5, 0, 5})
	for _, r := range []uint64{10, 11, 1 << 40, ^uint64(0)} {
		got := tr.Pick(r)
		if got != 1 && got != 3 {
			t.Errorf("Pick(%d) = %d, want a positive item", r, got)
		}
	}
	// choose covers the extremes of the 64-bit range.
	for _, u := range []uint64{0, ^uint64(0)} {
		if got := tr.choose(u); got != 1 && got != 3 {
			t.Errorf("Choose(%#x) = %d", u, got)
		}
	}
}

// TestTreeInconsistentSums corrupts the sums on purpose, as a Set caught half
// way up its path leaves them, and checks that Pick still returns an item of
// positive weight whenever one exists.
func TestTreeInconsistentSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for n := 1; n <= 70; n++ {
		for range 20 {
			w := randWeights(rng, n)
			w[rng.IntN(n)] = 1 + rng.Int64N(100) // at least one positive
			tr := newWeightTree(w)
			// Zero or change some items behind the sums' back.
			for range 1 + rng.IntN(3) {
				i := rng.IntN(n)
				tr.nodes[i].self.Store(rng.Int64N(3) * rng.Int64N(50))
			}
			// And skew some subtree sums and the total.
			if rng.IntN(2) == 0 {
				tr.nodes[rng.IntN(n)].sum.Add(rng.Int64N(200) - 100)
			}
			tr.nodes[0].sum.Add(rng.Int64N(50))
			anyPositive := false
			for i := range n {
				anyPositive = anyPositive || tr.Weight(i) > 0
			}
			total := max(tr.Total(), 1)
			for range 200 {
				got := tr.Pick(rng.Uint64N(uint64(total) + 10))
				switch {
				case got < -1 || got >= n:
					t.Fatalf("n=%d: Pick out of range: %d", n, got)
				case anyPositive && (got < 0 || tr.Weight(got) == 0):
					t.Fatalf("n=%d: Pick %d (weight %d) while some item is positive: %v", n, got, tr.Weight(max(got, 0)), tr.Weights(nil))
				}
			}
		}
	}
}

func TestTreeConcurrent(t *testing.T) {
	const n, workers, iters = 100, 8, 20_000
	w := make([]int64, n)
	for i := range w {
		w[i] = 1 + int64(i)
	}
	tr := newWeightTree(w)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			for range iters {
				if g%2 == 0 {
					// Feedback: positive weights only, some on the same
					// items as other goroutines.
					tr.Set(rng.IntN(n), 1+rng.Int64N(10_000))
				} else {
					got := tr.choose(rng.Uint64())
					if got < 0 || got >= n {
						t.Errorf("Choose returned %d", got)
						return
					}
					if tr.Weight(got) <= 0 {
						t.Errorf("picked item %d of weight 0", got)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	checkSums(t, tr)
	if got := sum(tr.Weights(nil)); got != tr.Total() {
		t.Fatalf("sum of leaves %d != Total %d", got, tr.Total())
	}
}

func TestTreeNoAllocs(t *testing.T) {
	w := make([]int64, 1024)
	for i := range w {
		w[i] = 1000
	}
	tr := newWeightTree(w)
	rng := rand.New(rand.NewPCG(1, 2))
	if a := testing.AllocsPerRun(1000, func() { tr.choose(rng.Uint64()) }); a != 0 {
		t.Errorf("Choose: %v allocs", a)
	}
	if a := testing.AllocsPerRun(1000, func() { tr.Pick(rng.Uint64N(uint64(tr.Total()))) }); a != 0 {
		t.Errorf("Pick: %v allocs", a)
	}
	if a := testing.AllocsPerRun(1000, func() { tr.Set(rng.IntN(1024), rng.Int64N(5000)) }); a != 0 {
		t.Errorf("Set: %v allocs", a)
	}
}

// Test-only views of a weightTree.

// Len returns the number of items.
func (t *weightTree) Len() int { return len(t.nodes) }

// Weights appends the current weight of every item to dst and returns it.
func (t *weightTree) Weights(dst []int64) []int64 {
	for k := range t.nodes {
		dst = append(dst, t.nodes[k].self.Load())
	}
	return dst
}

// Pick returns the item whose range contains r, the items being laid end to
// end in the tree's in-order (left subtree, node, right subtree), each as
// long as its weight. For a weighted random choice, r should be uniform in
// [0, Total()); Choose does that from a uniform 64-bit value. It returns -1
// only if the tree is empty or every weight is 0.
//
// A Set running concurrently can leave the sums briefly inconsistent, so the
// walk may fall off the tree; then Pick returns the deepest item of positive
// weight it passed on its way down, or, if none, the last item of positive
// weight found by a scan (also used if the total is not positive). Neither
// case happens without concurrent Sets. A value r >= Total() (from a stale
// total) is reduced modulo the current total. Pick never returns an item
// whose weight it saw as 0 while another item has a positive weight, never
// panics and never allocates.
func (t *weightTree) Pick(r uint64) int {
	total := t.Total()
	if total <= 0 {
		return t.scan()
	}
	if r >= uint64(total) {
		r %= uint64(total)
	}
	return t.descend(int64(r))
}
