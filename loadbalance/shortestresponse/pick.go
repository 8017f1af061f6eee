package shortestresponse

import (
	"math"
	"sync/atomic"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// estimate is Dubbo Java's estimated response of a provider: the mean
// elapsed time of its successful calls in the window, mean (ns, at most
// maxMean), times its calls in flight + 1 (the failures of a recent run
// counted among the calls in flight: skeleton.Failures.Load); math.MaxInt64 from maxActive
// calls in flight on, so that the product never overflows.
func estimate(mean, active int64) int64 {
	if active >= maxActive {
		return math.MaxInt64
	}
	return min(max(mean, 0), maxMean) * (max(active, 0) + 1)
}

// maxActive is the count of calls in flight from which estimate saturates:
// maxMean × maxActive < 2^63.
const maxActive = 1 << (63 - (64 - slotBits))

// An entry is a provider as the scan reads it, packed in one word so
// that one atomic load reads it and entries sort by mean as integers: its
// mean (ns) in the high 64 − slotBits bits, saturating at maxMean (18
// minutes: a longer mean changes no pick), and its slot in the low
// slotBits bits (slots wrap above 16.7 million providers, never out of
// range).
const (
	slotBits = 24
	slotMask = 1<<slotBits - 1
	maxMean  = 1<<(64-slotBits) - 1
)

func pack(mean int64, slot int) uint64 {
	return uint64(min(max(mean, 0), maxMean))<<slotBits | uint64(slot)&slotMask
}

// maxTies is how many tied providers the scan keeps on its stack; with
// more ties (more than maxTies providers at exactly the same estimate) the
// draw reads the estimates a second time.
const maxTies = 128

// shortest returns the slot with the smallest estimate(mean, active)
// among ents (packed entries; the counts in flight are stats[slot], with
// the failures f charges), ties
// drawn in proportion to weights[slot], or uniformly when uniform, with
// the random word u: Dubbo Java's rule; when every entry ties, the draw
// is all's (the weights of the whole snapshot) if all is not nil. When
// sorted, ents are in increasing order of mean and the scan stops at the
// first mean above the smallest estimate found: estimate(m, a) ≥ m for
// every count a, so no later entry can be shorter or tied, and the result
// is that of the full scan. At least one entry.
//
// Each estimate is read once, and the tied slots are kept in a stack
// array (no list on the heap); their weights are summed only when the
// draw needs them. With more than maxTies ties the draw reads
// the estimates again; an estimate that changes in between can only move
// the pick to a slot that is the shortest at the second reading or, if
// none is any more, to the last tied one found.
func shortest(ents []atomic.Uint64, sorted bool, stats []*rpcstatus.Stats, f skeleton.Failures, weights []float64, uniform bool, all *algo.Alias, u uint64) int {
	if sorted {
		if x := ents[0].Load(); x>>slotBits == 0 || f.Load(stats[x&slotMask]) <= 0 {
			if slot, ok := drawLeast(ents, x>>slotBits, stats, f, uniform, all, u); ok {
				return slot
			}
			u = algo.Mix(u + leastTries) // a word the missed draws did not use
		}
	}
	var ties [maxTies]int32
	best, n, end, total := int64(math.MaxInt64), 0, len(ents), 0.0
	for k := range ents {
		x := ents[k].Load()
		m := int64(x >> slotBits)
		if m > best {
			if sorted {
				end = k
				break
			}
			continue
		}
		slot := int32(x & slotMask)
		// estimate(m, active), m being in [0, maxMean] already.
		est := int64(math.MaxInt64)
		if a := f.Load(stats[slot]); a < maxActive {
			est = m * (max(a, 0) + 1)
		}
		if est > best {
			continue
		}
		if est < best {
			best, n = est, 0
		}
		ties[n&(maxTies-1)] = slot // past maxTies, unread: see below
		n++
	}
	switch {
	case n == 1:
		return int(ties[0])
	case uniform && n <= maxTies:
		return int(ties[algo.IntN(u, n)])
	case !uniform && n == len(ents) && all != nil:
		return all.Pick(u)
	case n <= maxTies:
		// An unbiased draw in [0, total), each tie owning a part as wide
		// as its weight.
		for _, slot := range ties[:n] {
			total += weights[slot]
		}
		r := algo.Float64(u) * total
		for _, slot := range ties[:n-1] {
			if r -= weights[slot]; r < 0 {
				return int(slot)
			}
		}
		return int(ties[n-1])
	}
	// More ties than the stack keeps: draw by a second reading, the j-th
	// tie uniformly, or by weight over [0, total).
	tied := func(k int) (int, bool) {
		x := ents[k].Load()
		slot := int(x & slotMask)
		return slot, estimate(int64(x>>slotBits), f.Load(stats[slot])) == best
	}
	r := float64(algo.IntN(u, n))
	if !uniform {
		for k := range end {
			if slot, ok := tied(k); ok {
				total += weights[slot]
			}
		}
		r = algo.Float64(u) * total
	}
	found := int(ties[0])
	for k := range end {
		slot, ok := tied(k)
		if !ok {
			continue
		}
		found = slot
		w := 1.0
		if !uniform {
			w = weights[slot]
		}
		if r -= w; r < 0 {
			break
		}
	}
	return found
}

// leastTries is how many candidates drawLeast draws before it gives up.
const leastTries = 4

// drawLeast is the sorted scan's shortcut when the entry of the smallest
// mean, m (ents[0]'s, as the caller loaded it), has no call in flight: its estimate is then m, the smallest any
// entry can have, so the ties are exactly the entries of mean m without a
// call in flight (all entries of mean m when m is 0). It draws among them
// by rejection: a candidate drawn from the run of entries of mean m
// (found by binary search), uniformly, or by all when the weights differ
// and the run is every entry, is taken if it ties, so that a taken one is
// drawn uniformly (or by weight) among the ties, as the scan draws. ok is
// false when it cannot draw that way (weights differ and the run is not
// every entry) or after leastTries candidates that do not tie; the caller
// then scans. O(log n) instead of the scan's O(ties) when most of the
// run is idle, as when every provider ties (the start, a quiet service).
func drawLeast(ents []atomic.Uint64, m uint64, stats []*rpcstatus.Stats, f skeleton.Failures, uniform bool, all *algo.Alias, u uint64) (int, bool) {
	// end: the first entry of a larger mean (ents are sorted).
	end := len(ents)
	if whole := ents[end-1].Load()>>slotBits == m; !uniform && (!whole || all == nil) {
		return 0, false
	} else if !whole {
		lo, hi := 1, end-1 // ents[lo-1] is of mean m, ents[hi] is not
		for lo < hi {
			if mid := int(uint(lo+hi) >> 1); ents[mid].Load()>>slotBits == m {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		end = lo
	}
	for k := range uint64(leastTries) {
		w := u
		if k > 0 {
			w = algo.Mix(u + k)
		}
		var slot int
		if uniform {
			x := ents[algo.IntN(w, end)].Load()
			if x>>slotBits != m { // rewritten under the pick: let the scan decide
				return 0, false
			}
			slot = int(x & slotMask)
		} else {
			slot = all.Pick(w)
		}
		if m == 0 || f.Load(stats[slot]) <= 0 {
			return slot, true
		}
	}
	return 0, false
}
