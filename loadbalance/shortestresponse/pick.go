package shortestresponse

import (
	"math"
	"sync/atomic"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// estimate is Dubbo Java's estimated response: mean (ns, at most maxMean)
// × (active + 1), active the calls in flight and failures of a recent run
// (skeleton.Failures.Load); math.MaxInt64 from maxActive on, so that the
// product never overflows.
func estimate(mean, active int64) int64 {
	if active >= maxActive {
		return math.MaxInt64
	}
	return min(max(mean, 0), maxMean) * (max(active, 0) + 1)
}

// maxActive is the count of calls in flight from which estimate saturates:
// maxMean × maxActive < 2^63.
const maxActive = 1 << (63 - (64 - slotBits))

// An entry is a provider as the scan reads it, one word that sorts by
// mean: its mean (ns) in the high 64 − slotBits bits, saturating at
// maxMean (18 minutes), its slot in the low slotBits bits (wrapping above
// 16.7 million providers, never out of range).
const (
	slotBits = 24
	slotMask = 1<<slotBits - 1
	maxMean  = 1<<(64-slotBits) - 1
)

func pack(mean int64, slot int) uint64 {
	return uint64(min(max(mean, 0), maxMean))<<slotBits | uint64(slot)&slotMask
}

// maxTies is how many tied providers the scan keeps on its stack; with
// more the draw reads the estimates a second time.
const maxTies = 128

// shortest returns the slot with the smallest estimate among ents (the
// calls in flight are stats[slot]'s, with the failures f charges), ties
// drawn with the random word u in proportion to weights[slot], uniformly
// when uniform, or by all (the whole snapshot's weights) when every entry
// ties and all is not nil: Java's rule. When sorted, ents are in
// increasing order of mean and the scan stops at the first mean above the
// smallest estimate found, with the result of the full scan (DESIGN.md,
// "The scan"). ents holds at least one entry.
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

// drawLeast is the sorted scan's shortcut when ents[0], of mean m, has no
// call in flight: the ties are then the entries of mean m with none in
// flight. It draws candidates from the run of mean m (binary search),
// uniformly or by all, and takes the first that ties: the scan's
// distribution in O(log n). ok is false when weights differ and the run
// is not every entry, or after leastTries candidates that do not tie.
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
