package algo

// Match calls f(i, j) for each element i of list that stands at position j
// of old, in the order of list. lookup(x) must return the position of x in
// old, or false when x is not there; nil means no lookup, so an element the
// walk below does not find is taken as absent (f is not called for it).
// old must hold no element twice: with duplicates, the position the walk
// finds may differ from lookup's.
//
// Match walks both slices in order and calls lookup only where the walk
// loses its place. A list that is old with a few elements taken out and
// put in, in the same order otherwise (what dubbo-go hands a balancer after
// a change of membership), costs one or two comparisons an element and a
// lookup for each element that came or moved. A list in another order
// costs a lookup an element, as a plain loop over lookup does: the walk
// stops once it has lost its place more than len(list)/8 + 8 times.
func Match[T comparable](list, old []T, lookup func(T) (int, bool), f func(i, j int)) {
	j := 0                  // where the walk expects list[i] in old
	lost := len(list)/8 + 8 // misses left before the walk stops
	for i, x := range list {
		switch {
		case lost > 0 && j < len(old) && old[j] == x:
		case lost > 0 && j+1 < len(old) && old[j+1] == x: // old[j] left
			j++
		default:
			lost--
			if lookup == nil {
				continue
			}
			k, ok := lookup(x)
			if !ok {
				continue // x came: the walk keeps its place
			}
			j = k // x moved, or several left: the walk goes on from x
		}
		f(i, j)
		j++
	}
}
