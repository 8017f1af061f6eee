package subset

import "slices"

// sortByKey sorts a by key ascending, elements of equal key by tie, in O(n)
// (8-bit least-significant-digit radix over the 8 bytes of the key) with tmp
// as scratch; it returns tmp, grown to len(a), for reuse. Short slices and
// runs of equal keys are sorted by comparison.
func sortByKey[T any](a, tmp []T, key func(T) uint64, tie func(x, y T) int) []T {
	if len(a) < 128 {
		slices.SortFunc(a, func(x, y T) int {
			if kx, ky := key(x), key(y); kx != ky {
				if kx < ky {
					return -1
				}
				return 1
			}
			return tie(x, y)
		})
		return tmp
	}
	tmp = slices.Grow(tmp[:0], len(a))[:len(a)]
	src, dst := a, tmp
	for shift := 0; shift < 64; shift += 8 {
		var count [257]int
		for _, v := range src {
			count[int(byte(key(v)>>shift))+1]++
		}
		for d := 1; d < len(count); d++ {
			count[d] += count[d-1]
		}
		for _, v := range src {
			d := byte(key(v) >> shift)
			dst[count[d]] = v
			count[d]++
		}
		src, dst = dst, src
	}
	// Eight passes: the sorted elements are back in a.
	for lo := 0; lo < len(a); {
		hi := lo + 1
		for hi < len(a) && key(a[hi]) == key(a[lo]) {
			hi++
		}
		if hi-lo > 1 {
			slices.SortFunc(a[lo:hi], tie)
		}
		lo = hi
	}
	return tmp
}
