// Package algo holds the small algorithms several balancers share: the
// alias table, draws from one random word, and tests of weights. It knows
// nothing of dubbo-go. Notes: DESIGN.md.
package algo

import (
	"math"
	"math/rand/v2"
	"sync"
)

// Rand is a source of uniformly random 64-bit words, safe for concurrent
// use. Make one with Source or Seeded.
type Rand struct{ f func() uint64 }

// Source returns the Rand that calls f; nil means math/rand/v2's Uint64.
func Source(f func() uint64) Rand {
	if f == nil {
		f = rand.Uint64
	}
	return Rand{f}
}

// Seeded returns a deterministic Rand for tests, safe for concurrent use.
func Seeded(seed uint64) Rand {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return Rand{func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Uint64()
	}}
}

// Uint64 returns a random word.
func (r Rand) Uint64() uint64 { return r.f() }

// Func returns the source as a function.
func (r Rand) Func() func() uint64 { return r.f }

// IntN maps the high 32 bits of the random word r to [0, n), n > 0.
func IntN(r uint64, n int) int { return int((r >> 32) * uint64(n) >> 32) }

// Float64 maps the random word r to [0, 1) with 53 bits of precision.
func Float64(r uint64) float64 { return float64(r>>11) * 0x1p-53 }

// Mix is the next word of SplitMix64 after x.
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Pair draws two distinct slots of [0, n) uniformly from one random word;
// 0, 0 when n < 2.
func Pair(r uint64, n int) (i, j int) {
	if n < 2 {
		return 0, 0
	}
	i = IntN(r, n)
	j = int((r & math.MaxUint32) * uint64(n-1) >> 32)
	if j >= i {
		j++
	}
	return i, j
}

// Usable reports whether w is a weight a provider can be picked with:
// positive and finite.
func Usable(w float64) bool { return w > 0 && w <= math.MaxFloat64 }

// Finite reports whether f is neither NaN nor infinite.
func Finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Weighted returns an index of [0, n) drawn with the random word r in
// proportion to at(i), skipping weights that are not Usable (uniformly
// when none is). O(n): for rare picks such as a retry's subset.
func Weighted(n int, at func(i int) float64, r uint64) int {
	total := 0.0
	for i := range n {
		if w := at(i); Usable(w) {
			total += w
		}
	}
	if !Usable(total) {
		return IntN(r, n)
	}
	x := Float64(r) * total
	last := -1
	for i := range n {
		if w := at(i); Usable(w) {
			last = i
			if x -= w; x < 0 {
				return i
			}
		}
	}
	return last
}

// JavaCost is Dubbo Java's adaptive cost (AdaptiveMetrics.getLoad, 3.3.6)
// of a provider with the reported load (percent, at least JavaMinLoad),
// RTT rttMs (ms), calls in flight, success ratio (JavaSuccess) and weight:
//
//	load × (√rttMs + 1) × (inflight + 1) / (success × weight + 1)
func JavaCost(load, rttMs float64, inflight int64, success, weight float64) float64 {
	return max(load, JavaMinLoad) * (math.Sqrt(max(rttMs, 0)) + 1) * float64(max(inflight, 0)+1) / (success*max(weight, 0) + 1)
}

// JavaMinLoad is the least load JavaCost charges, in percent.
const JavaMinLoad = 0.01

// JavaSuccess is Dubbo Java's success ratio: calls that succeeded over
// calls made + 1, calls in flight counted as made.
func JavaSuccess(total, failed, active int64) float64 {
	return float64(max(total-failed, 0)) / float64(max(total, 0)+max(active, 0)+1)
}
