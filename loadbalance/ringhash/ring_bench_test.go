package ringhash

import (
	"strconv"
	"testing"
)

var benchSizes = []int{10, 100, 1000}

var sinkInt int

func BenchmarkLookup(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			r := buildRing(providers(n), defaultNodes)
			kps := keyPoints(4096, 1)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sinkInt = r.Lookup(kps[i&4095])
				i++
			}
		})
	}
}

// BenchmarkKeyToMember is the whole per-call path: build the key, hash it,
// look it up.
func BenchmarkKeyToMember(b *testing.B) {
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i*7919)
	}
	benchRings(b, func(r *hashRing, _ int) func(i int) {
		return func(i int) { sinkInt = r.Lookup(hashString(keys[i&4095])) }
	})
}

// BenchmarkLookupFuncSkip rejects the key's own member, so every call walks
// to the next member.
func BenchmarkLookupFuncSkip(b *testing.B) {
	benchRings(b, func(r *hashRing, _ int) func(i int) {
		kps := keyPoints(4096, 2)
		owners := make([]int, len(kps))
		for i, kp := range kps {
			owners[i] = r.Lookup(kp)
		}
		return func(i int) {
			j := i & 4095
			sinkInt, _ = r.lookupFunc(kps[j], func(m int) bool { return m != owners[j] })
		}
	})
}

// BenchmarkLookupBounded runs with balanced loads, so the key's own member is
// usually under the bound.
func BenchmarkLookupBounded(b *testing.B) {
	benchRings(b, func(r *hashRing, n int) func(i int) {
		kps := keyPoints(4096, 3)
		loads := make([]int64, n)
		total := int64(0)
		for i := range loads {
			loads[i] = int64(i % 5)
			total += loads[i]
		}
		load := func(m int) int64 { return loads[m] }
		return func(i int) { sinkInt, _ = r.lookupBounded(kps[i&4095], 1.25, total, load, nil) }
	})
}

// benchRings times step(i), i = 0, 1, …, on a ring of n providers for each
// n of benchSizes; setup makes step from the ring.
func benchRings(b *testing.B, setup func(r *hashRing, n int) func(i int)) {
	for _, n := range benchSizes {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			step := setup(buildRing(providers(n), defaultNodes), n)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				step(i)
			}
		})
	}
}

func BenchmarkBuild(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			members := providers(n)
			b.ReportAllocs()
			for b.Loop() {
				_ = buildRing(members, defaultNodes)
			}
		})
	}
}

// BenchmarkRebuildOne rebuilds a ring for a change of one member (the last
// replaced), alternating the two memberships; beside it, the whole build.
func BenchmarkRebuildOne(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		a := providers(n)
		c := providers(n)
		c[n-1] = "10.9.9.9:20880"
		from := make([]int, n)
		for i := range from {
			from[i] = i
		}
		from[n-1] = -1
		b.Run("N="+strconv.Itoa(n)+"/one", func(b *testing.B) {
			rings := [2]*hashRing{buildRing(a, defaultNodes), nil}
			rings[1] = rings[0].Rebuild(c, from, defaultNodes)
			lists := [2][]string{a, c}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				k := i & 1
				rings[k] = rings[1-k].Rebuild(lists[k], from, defaultNodes)
			}
		})
		b.Run("N="+strconv.Itoa(n)+"/whole", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = buildRing(a, defaultNodes)
			}
		})
	}
}
