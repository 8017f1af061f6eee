package lalb

import (
	"math/bits"
	"sync/atomic"
)

// maxLeafWeight is the largest weight of one leaf: 2^15 leaves at full
// weight before the int64 sums could overflow.
const maxLeafWeight = int64(1) << 47

// weightTree picks an item in proportion to its weight and changes one
// weight in O(log N) without a lock: item i at node i of an array, children
// 2i+1 and 2i+2, each node holding its weight and its subtree's sum.
type weightTree struct {
	nodes []treeNode
}

type treeNode struct {
	self atomic.Int64 // this item's weight
	sum  atomic.Int64 // the weights of its subtree, self included
}

// newWeightTree builds a tree over weights, clamped to [0, maxLeafWeight].
func newWeightTree(weights []int64) *weightTree {
	t := &weightTree{nodes: make([]treeNode, len(weights))}
	n := len(t.nodes)
	for k := n - 1; k >= 0; k-- { // children first
		w := clampLeaf(weights[k])
		t.nodes[k].self.Store(w)
		if l := 2*k + 1; l < n {
			w += t.nodes[l].sum.Load()
			if l+1 < n {
				w += t.nodes[l+1].sum.Load()
			}
		}
		t.nodes[k].sum.Store(w)
	}
	return t
}

func clampLeaf(w int64) int64 { return min(max(w, 0), maxLeafWeight) }

// Total returns the sum of all weights.
func (t *weightTree) Total() int64 {
	if len(t.nodes) == 0 {
		return 0
	}
	return t.nodes[0].sum.Load()
}

// Weight returns the weight of item i, 0 if i is out of range.
func (t *weightTree) Weight(i int) int64 {
	if uint(i) >= uint(len(t.nodes)) {
		return 0
	}
	return t.nodes[i].self.Load()
}

// Set changes the weight of item i to w (clamped); an index out of range
// is ignored. Concurrent Sets leave the sums exact once all have returned.
func (t *weightTree) Set(i int, w int64) {
	if uint(i) >= uint(len(t.nodes)) {
		return
	}
	w = clampLeaf(w)
	if d := w - t.nodes[i].self.Swap(w); d != 0 {
		for k := i; k > 0; k = (k - 1) / 2 {
			t.nodes[k].sum.Add(d)
		}
		t.nodes[0].sum.Add(d)
	}
}

// choose picks an item with the random word u (the high word of u ×
// total); -1 only when every weight is 0. It never returns an item it saw
// at weight 0 while another has weight.
func (t *weightTree) choose(u uint64) int {
	total := t.Total()
	if total <= 0 {
		return t.scan()
	}
	hi, _ := bits.Mul64(u, uint64(total))
	return t.descend(int64(hi))
}

// descend walks from the root with x in [0, total), laying the items end
// to end in order (left subtree, node, right subtree).
func (t *weightTree) descend(x int64) int {
	nodes := t.nodes
	n := len(nodes)
	cand := -1 // the deepest node seen with positive weight
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

// scan returns the last item of positive weight, or -1.
func (t *weightTree) scan() int {
	for k := len(t.nodes) - 1; k >= 0; k-- {
		if t.nodes[k].self.Load() > 0 {
			return k
		}
	}
	return -1
}
