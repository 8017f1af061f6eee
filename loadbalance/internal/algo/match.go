package algo

// Match calls f(i, j) for each element i of list found at position j of
// old, which holds no element twice, in the order of list. It walks both
// slices in order and calls lookup (the position of x in old; nil: none,
// the element counts as absent) only where the walk loses its place; after
// len(list)/8 + 8 misses it looks up every element.
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
			j = k
		}
		f(i, j)
		j++
	}
}
