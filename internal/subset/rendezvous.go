package subset

import (
	"math"
)

// ranked is a member's place in a consumer's order of preference.
type ranked struct {
	pos   int // index into the zone's members
	score float64
}

// rendezvous appends to dst the members consumer seed holds: the members
// ranked by weighted rendezvous score, the first ones until size of them
// serve. A member's score is -ln(u)/v, u uniform in (0, 1) from the hash of
// (seed, key), v = w + (size-1)·typical: the exponential race of weighted
// sampling without replacement, with the weights that make a member's load,
// once the consumer's balancer splits calls by weight over the subset, track
// its weight share (DESIGN.md). A member's score does not depend on the other
// members, so a member joining or leaving moves at most one member of a
// subset.
func rendezvous(dst []int, s *scratch, members []member, size int, seed uint64, typical float64, excluded func(int) bool) []int {
	if size >= len(members) {
		return appendAll(dst, members)
	}
	extra := float64(size-1) * typical
	s.ranked = s.ranked[:0]
	for k, m := range members {
		s.ranked = append(s.ranked, ranked{pos: k, score: -math.Log(unit(m.hash, seed)) / (m.w + extra)})
	}
	s.tmpR = sortByKey(s.ranked, s.tmpR, rankedScore, func(a, b ranked) int {
		return s.ringOrder(members[a.pos], members[b.pos])
	})
	serving := 0
	for _, r := range s.ranked {
		i := members[r.pos].i
		dst = append(dst, i)
		if !excluded(i) {
			serving++
			if serving == size {
				break
			}
		}
	}
	return dst
}

func appendAll(dst []int, members []member) []int {
	for _, m := range members {
		dst = append(dst, m.i)
	}
	return dst
}

// rankedScore is a ranked member's score as a key that sorts like it: the bits
// of a non-negative float64 (+Inf included) order as the float does.
func rankedScore(r ranked) uint64 { return math.Float64bits(r.score) }
