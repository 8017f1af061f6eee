package lalb

import (
	"math/bits"
	"sync/atomic"
)

// maxLeafWeight is the largest weight one leaf of a Tree may hold; Set and
// newWeightTree clamp larger values to it. 2^47 leaves room for 2^15 (32 768)
// leaves at full weight before the int64 sums could overflow.
const maxLeafWeight = int64(1) << 47

// weightTree is a weight tree: it picks an index with probability proportional to
// its weight in O(log N), and changes one weight in O(log N).
//
// The N items are laid out as a complete binary tree in an array, item i at
// node i+1 with children 2(i+1) and 2(i+1)+1 (every node is an item, not
// only the bottom row, as in brpc). Each node keeps its own weight and the
// sum of the weights in its left subtree; node 0 keeps the sum of the
// root's right subtree, so the total is three numbers on the root's cache
// line instead of a separate counter every change would also have to hit.
// A pick walks down from the root comparing a point in [0, total) with
// those sums.
//
// Every number is an atomic int64 and a change is a series of atomic adds
// along the path to the root, so concurrent Set calls (feedback from many
// goroutines, even on the same item) and Pick calls need no lock. The sums
// are only eventually consistent while a Set is half way up its path; Pick
// tolerates that (see Pick). Once no Set is running, the sums are exact.
//
// The number of items is fixed at construction: membership changes build a
// new Tree (see Weights) and publish it, which keeps the hot path simple.
type weightTree struct {
	n     int
	nodes []treeNode // n+1: nodes[0].left is the root's right sum, item i is nodes[i+1]
}

// treeNode holds both numbers a pick reads at one level, so they share a
// cache line.
type treeNode struct {
	self atomic.Int64 // this item's weight
	left atomic.Int64 // sum of the weights in the left subtree
}

// newWeightTree builds a tree over the given initial weights, one item per
// element. Negative weights count as 0 and weights above maxLeafWeight as
// maxLeafWeight. The slice is not retained.
func newWeightTree(weights []int64) *weightTree {
	n := len(weights)
	t := &weightTree{n: n, nodes: make([]treeNode, n+1)}
	// sub[k] is the weight of the whole subtree under node k. Children have
	// larger indexes, so one pass from the end fills it bottom-up in O(N).
	sub := int64Work.Get(n + 2)
	defer int64Work.Put(sub)
	for k := n; k >= 1; k-- {
		w := clampLeaf(weights[k-1])
		t.nodes[k].self.Store(w)
		s := w
		if l := 2 * k; l <= n {
			t.nodes[k].left.Store(sub[l])
			s += sub[l]
			if r := l + 1; r <= n {
				s += sub[r]
			}
		}
		sub[k] = s
	}
	if n >= 3 {
		t.nodes[0].left.Store(sub[3])
	}
	return t
}

func clampLeaf(w int64) int64 {
	return min(max(w, 0), maxLeafWeight)
}

// Len returns the number of items.
func (t *weightTree) Len() int { return t.n }

// Total returns the sum of all weights (exact when no Set is running).
func (t *weightTree) Total() int64 {
	if t.n == 0 {
		return 0
	}
	root := &t.nodes[1]
	return root.left.Load() + root.self.Load() + t.nodes[0].left.Load()
}

// Weight returns the current weight of item i, or 0 if i is out of range.
func (t *weightTree) Weight(i int) int64 {
	if uint(i) >= uint(t.n) {
		return 0
	}
	return t.nodes[i+1].self.Load()
}

// Weights appends the current weight of every item to dst and returns it:
// the input for newWeightTree when membership changes and a new tree is built.
func (t *weightTree) Weights(dst []int64) []int64 {
	for k := 1; k <= t.n; k++ {
		dst = append(dst, t.nodes[k].self.Load())
	}
	return dst
}

// Set changes the weight of item i to w and returns the previous weight.
// Negative w counts as 0, w above maxLeafWeight as maxLeafWeight. An index
// out of range is ignored (returns 0): a stale index from an older tree
// must not bring down the call path.
//
// The old weight is swapped out atomically and only the difference is added
// to the sums, so concurrent Sets, even on the same item, leave the sums
// exact once they have all returned.
func (t *weightTree) Set(i int, w int64) (old int64) {
	if uint(i) >= uint(t.n) {
		return 0
	}
	w = clampLeaf(w)
	k := i + 1
	old = t.nodes[k].self.Swap(w)
	d := w - old
	if d == 0 {
		return old
	}
	for k > 1 {
		p := k >> 1
		if k&1 == 0 { // even: left child of p
			t.nodes[p].left.Add(d)
		} else if p == 1 { // right child of the root
			t.nodes[0].left.Add(d)
		}
		k = p
	}
	return old
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

// choose maps a uniform 64-bit random value u onto [0, Total()) without
// modulo bias worth mentioning (a 64x64 multiply keeping the high word, as
// in Lemire's method) and picks with it. It returns -1 like Pick.
func (t *weightTree) choose(u uint64) int {
	total := t.Total()
	if total <= 0 {
		return t.scan()
	}
	hi, _ := bits.Mul64(u, uint64(total))
	return t.descend(int64(hi))
}

// descend walks from the root with x in [0, total). x never becomes negative:
// it is only decreased by amounts it is not smaller than.
func (t *weightTree) descend(x int64) int {
	nodes := t.nodes
	n := t.n
	cand := 0 // deepest node seen with positive weight: the fallback
	for k := 1; k <= n; {
		nd := &nodes[k]
		left := nd.left.Load()
		self := nd.self.Load()
		if self > 0 {
			cand = k
		}
		if x < left {
			k = 2 * k
			continue
		}
		x -= left
		if x < self {
			return k - 1
		}
		x -= self
		k = 2*k + 1
	}
	// Fell off the tree: the sums on the path were mid-update.
	if cand > 0 {
		return cand - 1
	}
	return t.scan()
}

// scan returns the last item of positive weight, or -1: the last resort
// when the sums say nothing usable. O(N), but reached only when every weight
// is 0 or a Set raced with the pick.
func (t *weightTree) scan() int {
	for k := t.n; k >= 1; k-- {
		if t.nodes[k].self.Load() > 0 {
			return k - 1
		}
	}
	return -1
}
