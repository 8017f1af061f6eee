package subset

import "math/bits"

// aperture appends to dst the members consumer c holds by deterministic
// aperture. The n members, in ring order, are n equal slots of a ring.
// Consumer c sits at slot ⌊(Index+½)·n/Count⌋ and holds the window of
// k = max(size, ⌈n/Count⌉) members from there, then the next members round
// the ring until size of those it holds serve.
//
// Consumers are evenly spaced, so the number holding a member is the number
// of consumer positions in an interval of k slots: ⌊k·Count/n⌋ or one more.
// A member joining or leaving moves every start by at most one slot, so it
// changes at most one member of a window. k at least ⌈n/Count⌉ makes the
// windows cover the ring, so every member has a consumer. Weights do not
// place members: the consumer's balancer splits calls by weight within the
// subset (DESIGN.md).
func aperture(dst []int, members []member, size int, c Consumer, excluded func(int) bool) []int {
	n := len(members)
	if size >= n {
		return appendAll(dst, members)
	}
	count := uint64(c.Count)
	index := uint64(c.Index % c.Count)
	if c.Index%c.Count < 0 {
		index = uint64(c.Index%c.Count + c.Count)
	}
	// first = ⌊(2·index+1)·n / (2·count)⌋ < n, in 128 bits so that no
	// count or index overflows it.
	hi, lo := bits.Mul64(2*index+1, uint64(n))
	q, _ := bits.Div64(hi, lo, 2*count)
	first := int(q)
	k := size
	if per := uint64(n) / count; uint64(n)%count != 0 {
		k = max(k, int(per)+1)
	} else {
		k = max(k, int(per))
	}
	serving := 0
	for t := 0; t < n && (t < k || serving < size); t++ {
		j := first + t
		if j >= n {
			j -= n
		}
		i := members[j].i
		dst = append(dst, i)
		if !excluded(i) {
			serving++
		}
	}
	return dst
}
