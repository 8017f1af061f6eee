package shortestresponse

import (
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// estimate is Dubbo Java's estimated response of a provider: the mean
// elapsed time of its successful calls in the window, mean (ns), times its
// calls in flight + 1, saturating at math.MaxInt64.
func estimate(mean, active int64) int64 {
	hi, lo := bits.Mul64(uint64(max(mean, 0)), uint64(max(active, 0)+1))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// Shortest returns the slot with the smallest Estimate(mean[i],
// stats[i].Active()) among the slots of usable weight (algo.Usable), ties
// drawn in proportion to weight, or uniformly when uniform: Dubbo Java's
// rule. The slots are those of slots, or all of mean when slots is nil;
// mean, stats and weights have the same length. When no weight is usable,
// every slot counts with weight 1. At least one slot.
//
// As fewestactive.Scan, it reads the estimates twice when there is a tie,
// once to find the shortest and once to draw among the tied slots, so
// that no list of them is kept; an estimate that changes in between can
// only move the pick to a slot that is the shortest at the second
// reading, or, if none is any more, to the last tied slot found.
func Shortest(mean []atomic.Int64, stats []*rpcstatus.Stats, weights []float64, slots []int, uniform bool, u uint64) int {
	if i, ok := shortest(mean, stats, weights, slots, uniform, u, false); ok {
		return i
	}
	i, _ := shortest(mean, stats, weights, slots, true, u, true)
	return i
}

func shortest(mean []atomic.Int64, stats []*rpcstatus.Stats, weights []float64, slots []int, uniform bool, u uint64, equal bool) (int, bool) {
	n := len(mean)
	if slots != nil {
		n = len(slots)
	}
	first, last, count, best, total := -1, -1, 0, int64(math.MaxInt64), 0.0
	ones := equal || uniform
	for k := range n {
		i := k
		if slots != nil {
			i = slots[k]
		}
		w := weights[i]
		if !equal && !algo.Usable(w) {
			continue
		}
		if ones {
			w = 1
		}
		switch e := estimate(mean[i].Load(), stats[i].Active()); {
		case e < best || first < 0:
			best, first, last, count, total = e, k, k, 1, w
		case e == best:
			last, count, total = k, count+1, total+w
		}
	}
	if count <= 1 {
		if first < 0 {
			return 0, false
		}
		return slotOf(slots, first), true
	}
	// Second pass: an unbiased draw in [0, total), each tied slot owning
	// a part as wide as its weight.
	r := algo.Float64(u) * total
	found := first
	for k := first; k <= last; k++ {
		i := slotOf(slots, k)
		w := weights[i]
		if !equal && !algo.Usable(w) || estimate(mean[i].Load(), stats[i].Active()) != best {
			continue
		}
		if ones {
			w = 1
		}
		found = k
		if r -= w; r < 0 {
			break
		}
	}
	return slotOf(slots, found), true
}

// slotOf is the k-th slot: slots[k], or k when slots is nil.
func slotOf(slots []int, k int) int {
	if slots != nil {
		return slots[k]
	}
	return k
}
