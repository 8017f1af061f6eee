package lalb

import (
	"math/bits"
	"sync/atomic"
)

// maxLeafWeight is the largest weight one leaf of a weightTree may hold; Set and
// newWeightTree clamp larger values to it. 2^47 leaves room for 2^15 (32 768)
// leaves at full weight before the int64 sums could overflow.
const maxLeafWeight = int64(1) << 47

// weightTree is a weight tree: it picks an index with probability proportional to
// its weight in O(log N), and changes one weight in O(log N).
//
// The N items are laid out as a complete binary tree in an array, item i at
// node i with children 2i+1 and 2i+2 (every node is an item, not only the
// bottom row, as in brpc). Each node keeps its own weight and the sum of
// the weights of its subtree, its own included, so the tree is its nodes
// alone and the total is the root's sum. A pick walks down from the
// root comparing a point in [0, total) with the sums of left subtrees.
//
// Every number is an atomic int64 and a change is a series of atomic adds
// along the path to the root, so concurrent Set calls (feedback from many
// goroutines, even on the same item) and Pick calls need no lock. The sums
// are only eventually consistent while a Set is half way up its path; Pick
// tolerates that (see Pick). Once no Set is running, the sums are exact.
//
// The number of items is fixed: a membership change makes a new tree (see
// table).
type weightTree struct {
	nodes []treeNode
}

// treeNode is one item of a weightTree.
type treeNode struct {
	self atomic.Int64 // this item's weight
	sum  atomic.Int64 // the weights of its subtree, self included
}

// newWeightTree builds a tree over the given initial weights, one item per
// element. Negative weights count as 0 and weights above maxLeafWeight as
// maxLeafWeight. The slice is not retained.
func newWeightTree(weights []int64) *weightTree {
	t := &weightTree{nodes: make([]treeNode, len(weights))}
	t.fill(weights)
	return t
}

// fill sets the weights of a tree whose nodes are all zero, in O(N):
// children have larger indexes, so one pass from the end sums bottom-up.
func (t *weightTree) fill(weights []int64) {
	n := len(t.nodes)
	for k := n - 1; k >= 0; k-- {
		w := clampLeaf(weights[k])
		t.nodes[k].self.Store(w)
		s := w
		if l := 2*k + 1; l < n {
			s += t.nodes[l].sum.Load()
			if l+1 < n {
				s += t.nodes[l+1].sum.Load()
			}
		}
		t.nodes[k].sum.Store(s)
	}
}

func clampLeaf(w int64) int64 {
	return min(max(w, 0), maxLeafWeight)
}

// Len returns the number of items.
func (t *weightTree) Len() int { return len(t.nodes) }

// Total returns the sum of all weights (exact when no Set is running).
func (t *weightTree) Total() int64 {
	if len(t.nodes) == 0 {
		return 0
	}
	return t.nodes[0].sum.Load()
}

// Weight returns the current weight of item i, or 0 if i is out of range.
func (t *weightTree) Weight(i int) int64 {
	if uint(i) >= uint(len(t.nodes)) {
		return 0
	}
	return t.nodes[i].self.Load()
}

// Weights appends the current weight of every item to dst and returns it.
func (t *weightTree) Weights(dst []int64) []int64 {
	for k := range t.nodes {
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
	if uint(i) >= uint(len(t.nodes)) {
		return 0
	}
	w = clampLeaf(w)
	old = t.nodes[i].self.Swap(w)
	d := w - old
	if d == 0 {
		return old
	}
	for k := i; ; k = (k - 1) / 2 {
		t.nodes[k].sum.Add(d)
		if k == 0 {
			return old
		}
	}
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
	n := len(nodes)
	cand := -1 // deepest node seen with positive weight: the fallback
	for k := 0; k < n; {
		l := 2*k + 1
		var left int64
		if l < n {
			left = nodes[l].sum.Load()
		}
		self := nodes[k].self.Load()
		if self > 0 {
			cand = k
		}
		if x < left {
			k = l
			continue
		}
		x -= left
		if x < self {
			return k
		}
		x -= self
		k = l + 1
	}
	// Fell off the tree: the sums on the path were mid-update.
	if cand >= 0 {
		return cand
	}
	return t.scan()
}

// scan returns the last item of positive weight, or -1: the last resort
// when the sums say nothing usable. O(N), but reached only when every weight
// is 0 or a Set raced with the pick.
func (t *weightTree) scan() int {
	for k := len(t.nodes) - 1; k >= 0; k-- {
		if t.nodes[k].self.Load() > 0 {
			return k
		}
	}
	return -1
}
