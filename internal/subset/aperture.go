package subset

// aperture appends to dst the members consumer c holds by deterministic
// aperture. The members, in ring order, lie on a ring of circumference W
// (their total weight), each on an arc as long as its weight. Consumer c sits
// at (Index+0.5)/Count of the way round and holds every member whose arc
// crosses its window [x, x+L), L = max((size-1)/n, 1/Count)·W, then the next
// members round the ring until size of those it holds serve.
//
// Consumers are evenly spaced, so the number holding a member is the number of
// consumer positions in an interval of length L plus its arc, ⌊Count·(L+a)/W⌋
// or one more: with equal weights size·Count/n each, and in general in
// proportion to w + (size-1)·mean weight, which makes load track weight
// (DESIGN.md). L at least W/Count makes the windows cover the whole ring, so
// every member has a consumer.
func aperture(dst []int, s *scratch, members []member, size int, c Consumer, excluded func(int) bool) []int {
	n := len(members)
	if size >= n {
		return appendAll(dst, members)
	}
	s.starts = s.starts[:0]
	total := 0.0
	for _, m := range members {
		s.starts = append(s.starts, total)
		total += m.w
	}
	index := c.Index % c.Count
	if index < 0 {
		index += c.Count
	}
	x := (float64(index) + 0.5) / float64(c.Count) * total
	l := max(float64(size-1)/float64(n), 1/float64(c.Count)) * total
	// The member whose arc holds x: the last one starting at or before x with
	// a positive arc.
	first := -1
	for j := range members {
		if s.starts[j] > x {
			break
		}
		if members[j].w > 0 {
			first = j
		}
	}
	if first < 0 { // x before every positive arc: rounding; take the first.
		first = 0
	}
	serving, inWindow := 0, 0
	for t := 0; t < n; t++ {
		j := first + t
		start := 0.0
		if j >= n {
			j -= n
			start = total
		}
		start += s.starts[j]
		if t == 0 || start < x+l {
			inWindow++
		} else if serving >= min(size, inWindow) {
			break
		}
		i := members[j].i
		dst = append(dst, i)
		if !excluded(i) {
			serving++
		}
	}
	return dst
}
