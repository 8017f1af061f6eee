// Package algo holds the small algorithms that several balancers share:
// the alias table, draws from one random word, and the tests of weights
// and numbers that every balancer applies alike. It knows nothing of
// dubbo-go, and no balancer package imports another for them.
package algo

import (
	"math"
	"math/rand/v2"
	"sync"
)

// Rand is a source of uniformly random 64-bit words. Balancers draw every
// random number from one, so tests can inject a seeded source and assert
// exact sequences. Source(nil) is math/rand/v2's Uint64, safe for
// concurrent use without a lock; an injected function must be safe for
// concurrent use when the balancer is. Make a Rand with Source or Seeded;
// the zero Rand has no source. Uint64 is one indirect call, which the
// compiler inlines into the caller (a nil check and a branch to the
// default source cost about 12 ns per Select in the warmrandom benchmark, as
// the method no longer inlined).
type Rand struct{ f func() uint64 }

// Source returns the Rand that calls f, or the default source when f is
// nil.
func Source(f func() uint64) Rand {
	if f == nil {
		f = rand.Uint64
	}
	return Rand{f}
}

// Seeded returns a deterministic source for tests: the same words in the
// same order from one goroutine. It is safe for concurrent use, as
// lbenv.Env.Rand must be (a balancer builds snapshots in the background
// while it picks), by a lock.
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
func (r Rand) Func() func() uint64 {
	if r.f != nil {
		return r.f
	}
	return rand.Uint64
}

// IntN maps the high 32 bits of the random word r to [0, n), n > 0
// (Lemire's multiply-shift; the bias, n/2^32, is far below what a test of
// shares can see).
func IntN(r uint64, n int) int { return int((r >> 32) * uint64(n) >> 32) }

// Float64 maps the random word r to [0, 1) with 53 bits of precision.
func Float64(r uint64) float64 { return float64(r>>11) * 0x1p-53 }

// Mix is the next word of SplitMix64 after x: cheap, well-mixed random
// words from one, for a pick that needs several (a one-pass draw among
// ties).
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Pair draws two distinct slots of [0, n), n >= 2, uniformly from one
// random word: the first from its high 32 bits, the second from its low
// 32 bits among the n-1 others. For n < 2 (a zone of one provider) it
// returns 0, 0.
func Pair(r uint64, n int) (i, j int) {
	if n < 2 {
		return 0, 0
	}
	u := uint64(n)
	i = int((r >> 32) * u >> 32)
	j = int((r & math.MaxUint32) * (u - 1) >> 32)
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

// Weighted returns an index of weights drawn in proportion to its weight
// with the random word r, in O(len(weights)), skipping weights that are not
// Usable; uniformly when none is. at(i) returns weight i. For picks among
// a failover retry's subset, which are rare; hot paths use tables.
func Weighted(n int, at func(i int) float64, r uint64) int {
	total := 0.0
	for i := range n {
		if w := at(i); Usable(w) {
			total += w
		}
	}
	if !(total > 0 && total <= math.MaxFloat64) {
		return IntN(r, n)
	}
	x := Float64(r) * total
	last := -1
	for i := range n {
		w := at(i)
		if !Usable(w) {
			continue
		}
		last = i
		if x -= w; x < 0 {
			return i
		}
	}
	return last
}
