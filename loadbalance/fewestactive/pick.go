package fewestactive

import (
	"math"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// failureCharge says how a pick charges failures; the zero value charges
// nothing.
type failureCharge = skeleton.Failures

// scanFewest returns the index of the provider with the fewest calls in
// flight (as c charges them) among those of usable weight, or among all
// if none has one; ties are drawn with u in proportion to weight, or
// uniformly when uniform (all weights equal). stats and weights have the
// same length, at least 1. Without a charge it is scan, else scanCharged.
func scanFewest(stats []*rpcstatus.Stats, weights []float64, uniform bool, u uint64, c failureCharge) int {
	if c.Now != 0 {
		if i, ok := scanCharged(stats, weights, uniform, u, false, c); ok {
			return i
		}
		i, _ := scanCharged(stats, weights, true, u, true, c)
		return i
	}
	if i, ok := scan(stats, weights, uniform, u, false); ok {
		return i
	}
	i, _ := scan(stats, weights, true, u, true)
	return i
}

// scan is scanFewest without a charge (all weights counted as equal when
// equal). It reads the counts twice when there is a tie, so as to keep no
// list of the tied: a count that changed in between moves the pick to one
// that has the minimum at the second reading, else the last tied one.
func scan(stats []*rpcstatus.Stats, weights []float64, uniform bool, u uint64, equal bool) (int, bool) {
	least := int64(math.MaxInt64)
	first, last, count := -1, -1, 0
	total := 0.0
	for i, s := range stats {
		w := 1.0
		if !equal {
			if w = weights[i]; !algo.Usable(w) {
				continue
			}
		}
		switch a := s.Active(); {
		case a < least:
			least, first, last, count, total = a, i, i, 1, w
		case a == least:
			last, count, total = i, count+1, total+w
		}
	}
	if count <= 1 {
		return first, first >= 0
	}
	// Second pass: draw among the tied providers.
	if uniform || equal || !(total <= math.MaxFloat64) {
		k := algo.IntN(u, count)
		found := first
		for i := first; i <= last; i++ {
			if (!equal && !algo.Usable(weights[i])) || stats[i].Active() != least {
				continue
			}
			if found = i; k == 0 {
				return i, true
			}
			k--
		}
		return found, true
	}
	// An unbiased draw in [0, total): each tied provider owns a slice of
	// the range as wide as its weight.
	r := algo.Float64(u) * total
	found := first
	for i := first; i <= last; i++ {
		w := weights[i]
		if !algo.Usable(w) || stats[i].Active() != least {
			continue
		}
		found = i
		if r -= w; r < 0 {
			return i, true
		}
	}
	return found, true
}

// scanCharged is scan with failures charged as c says, in one pass: ties
// are drawn by weighted reservoir sampling on words derived from u.
func scanCharged(stats []*rpcstatus.Stats, weights []float64, uniform bool, u uint64, equal bool, c failureCharge) (pick int, ok bool) {
	pick, fewest, seen := -1, int64(math.MaxInt64), 0.0
	for i, s := range stats {
		w := 1.0
		if !equal && !uniform {
			w = weights[i]
		}
		if !equal && !algo.Usable(weights[i]) {
			continue
		}
		load := c.Load(s)
		if load > fewest {
			continue
		}
		if load < fewest {
			fewest, seen = load, 0
		}
		// The k-th tie replaces the pick with probability w / (the weight
		// of the ties so far): each ends up picked in proportion to w.
		seen += w
		u = algo.Mix(u)
		if algo.Float64(u)*seen < w {
			pick = i
		}
	}
	return pick, pick >= 0
}

// statsOf gives the statistics of a snapshot's providers (member.Set).
type statsOf interface {
	Len() int
	Stat(i int) *rpcstatus.Stats
}

// choosePair is the power-of-d-choices pick: of d providers drawn with
// replacement through alias (uniformly when nil), the one with the fewest
// calls in flight as c charges them, the first drawn on a tie. d < 1
// counts as 1.
func choosePair(stats statsOf, alias *algo.Alias, d int, next func() uint64, c failureCharge) int {
	best, bestActive := -1, int64(0)
	for k := 0; k < d || best < 0; k++ {
		i := alias.Draw(next(), stats.Len())
		if a := c.Load(stats.Stat(i)); best < 0 || a < bestActive {
			best, bestActive = i, a
		}
	}
	return best
}
