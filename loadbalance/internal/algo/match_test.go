package algo

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// matches returns the pairs Match gives, and how often it called lookup.
func matches(list, old []int, withLookup bool) (pairs [][2]int, lookups int) {
	pos := make(map[int]int, len(old))
	for j, x := range old {
		pos[x] = j
	}
	var lookup func(int) (int, bool)
	if withLookup {
		lookup = func(x int) (int, bool) {
			lookups++
			j, ok := pos[x]
			return j, ok
		}
	}
	Match(list, old, lookup, func(i, j int) { pairs = append(pairs, [2]int{i, j}) })
	return pairs, lookups
}

// naive is what a lookup of each element gives.
func naive(list, old []int) (pairs [][2]int) {
	for i, x := range list {
		if j := slices.Index(old, x); j >= 0 {
			pairs = append(pairs, [2]int{i, j})
		}
	}
	return pairs
}

// change returns old with its elements taken out, put in (new ones, ids
// from next), moved and repeated at random, k changes in all.
func change(r *rand.Rand, old []int, k int, next *int) []int {
	l := slices.Clone(old)
	for range k {
		switch at := r.IntN(len(l) + 1); r.IntN(4) {
		case 0:
			if len(l) > 0 {
				l = slices.Delete(l, min(at, len(l)-1), min(at, len(l)-1)+1)
			}
		case 1:
			*next++
			l = slices.Insert(l, at, *next)
		case 2:
			if len(l) > 1 {
				from := r.IntN(len(l))
				x := l[from]
				l = slices.Delete(l, from, from+1)
				l = slices.Insert(l, min(at, len(l)), x)
			}
		case 3:
			if len(l) > 0 {
				l = slices.Insert(l, at, l[r.IntN(len(l))])
			}
		}
	}
	return l
}

// With a lookup, Match gives exactly what a lookup of every element gives,
// whatever the change: elements gone, come, moved, repeated, or a list in
// another order.
func TestMatchIsALookupOfEachElement(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		n := r.IntN(40)
		old := r.Perm(n)
		next := n
		var list []int
		switch round % 3 {
		case 0:
			list = change(r, old, r.IntN(4), &next)
		case 1:
			list = change(r, old, r.IntN(n+2), &next)
		default:
			list = slices.Clone(old)
			r.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
		}
		got, _ := matches(list, old, true)
		if want := naive(list, old); !slices.Equal(got, want) {
			t.Fatalf("old %v, list %v: Match gives %v, a lookup of each %v", old, list, got, want)
		}
		// Without a lookup every pair it gives is right, and it may miss some.
		got, _ = matches(list, old, false)
		for _, p := range got {
			if list[p[0]] != old[p[1]] {
				t.Fatalf("old %v, list %v: without a lookup Match paired %v", old, list, p)
			}
		}
	}
}

// What dubbo-go hands after a change of membership, the same order with a
// provider taken out and one put in, costs one lookup (the newcomer's),
// and without a lookup every provider that stayed is still found.
func TestMatchLooksUpOnlyWhatCame(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		n := 2 + r.IntN(1000)
		old := r.Perm(n)
		gone := r.IntN(n)
		list := slices.Delete(slices.Clone(old), gone, gone+1)
		list = slices.Insert(list, r.IntN(len(list)+1), n)
		pairs, lookups := matches(list, old, true)
		if lookups != 1 || len(pairs) != n-1 {
			t.Fatalf("n = %d, provider %d gone: %d lookups and %d pairs, want 1 and %d", n, gone, lookups, len(pairs), n-1)
		}
		if pairs, _ := matches(list, old, false); len(pairs) != n-1 {
			t.Fatalf("n = %d, provider %d gone: without a lookup %d pairs, want %d", n, gone, len(pairs), n-1)
		}
	}
}
