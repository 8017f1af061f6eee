package ringhash

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// providers returns the addresses of n members, 127.0.0.1:20880, :20881, ...
func providers(n int) []string {
	m := make([]string, n)
	for i := range m {
		m[i] = "127.0.0.1:" + strconv.Itoa(20880+i)
	}
	return m
}

// visible returns the entries of r that own their points, in ring order:
// Dubbo's TreeMap.
func visible(r *hashRing) []uint64 {
	var out []uint64
	for k := 0; k < len(r.entries); k++ {
		k = r.owner(k)
		out = append(out, r.entries[k])
	}
	return out
}

// at returns the point and the owner of entry pos (modulo the count) of
// visible entries v.
func at(v []uint64, pos int) (uint32, int) {
	e := v[(pos%len(v)+len(v))%len(v)]
	return uint32(e >> 32), int(uint32(e))
}

func keyPoints(n int, seed uint64) []uint32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]uint32, n)
	for i := range out {
		out[i] = hashString("key-" + strconv.FormatUint(rng.Uint64(), 36))
	}
	return out
}

func TestHashKeyKnownValues(t *testing.T) {
	// md5("") = d41d8cd9..., md5("a") = 0cc175b9...: first four bytes, little endian.
	for _, tc := range []struct {
		key  string
		want uint32
	}{
		{"", 0xd98c1dd4},
		{"a", 0xb975c10c},
	} {
		if got := hashKey([]byte(tc.key)); got != tc.want {
			t.Errorf("hashKey(%q) = %#x, want %#x", tc.key, got, tc.want)
		}
		if got := hashString(tc.key); got != tc.want {
			t.Errorf("hashString(%q) = %#x, want %#x", tc.key, got, tc.want)
		}
	}
}

func TestRingLayout(t *testing.T) {
	r := buildRing(providers(10), 0)
	if r.nodes != defaultNodes || r.members != 10 {
		t.Fatalf("Nodes=%d Members=%d", r.nodes, r.members)
	}
	v := visible(r)
	if len(v) != 10*defaultNodes { // no collisions among these 1600 points
		t.Fatalf("%d points, want %d", len(v), 10*defaultNodes)
	}
	counts := make([]int, 10)
	prev, _ := at(v, 0)
	for pos := range v {
		p, idx := at(v, pos)
		if pos > 0 && p <= prev {
			t.Fatalf("points not strictly increasing at %d", pos)
		}
		prev = p
		counts[idx]++
	}
	for i, c := range counts {
		if c != defaultNodes {
			t.Errorf("member %d owns %d points", i, c)
		}
	}
	// Lookup agrees with a linear scan, including wrap-around.
	last, _ := at(v, -1)
	first, firstIdx := at(v, 0)
	for _, kp := range append(keyPoints(2000, 7), 0, first, first+1, last, last+1, math.MaxUint32) {
		want := firstIdx
		for pos := range v {
			if p, idx := at(v, pos); p >= kp {
				want = idx
				break
			}
		}
		if got := r.Lookup(kp); got != want {
			t.Fatalf("Lookup(%d) = %d, want %d", kp, got, want)
		}
	}
}

func TestStable(t *testing.T) {
	a, b := buildRing(providers(10), 160), buildRing(providers(10), 160)
	for _, kp := range keyPoints(1000, 11) {
		first := a.Lookup(kp)
		for range 3 {
			if a.Lookup(kp) != first || b.Lookup(kp) != first {
				t.Fatalf("key point %d not stable", kp)
			}
		}
	}
}

func TestAddMemberMovesAboutOneOverNPlusOne(t *testing.T) {
	const keys = 10000
	before := buildRing(providers(10), defaultNodes)
	after := buildRing(providers(11), defaultNodes)
	moved := 0
	for _, kp := range keyPoints(keys, 42) {
		b, a := before.Lookup(kp), after.Lookup(kp)
		if a != b {
			moved++
			if a != 10 {
				t.Fatalf("a key moved from %d to old member %d", b, a)
			}
		}
	}
	frac := float64(moved) / keys
	t.Logf("adding an 11th member moved %.2f%% of keys (ideal %.2f%%)", 100*frac, 100.0/11)
	if math.Abs(frac-1.0/11) > 0.05 {
		t.Fatalf("moved %.4f of keys, want 1/11 ± 0.05", frac)
	}
}

func TestReplaceMemberMovesOnlyItsKeys(t *testing.T) {
	abc := []string{"10.0.0.1:20880", "10.0.0.2:20880", "10.0.0.3:20880"}
	abd := []string{"10.0.0.1:20880", "10.0.0.2:20880", "10.0.0.4:20880"}
	r1, r2 := buildRing(abc, 0), buildRing(abd, 0)
	for _, kp := range keyPoints(10000, 5) {
		was, now := r1.Lookup(kp), r2.Lookup(kp) // C and D are at position 2
		if was != 2 && now != was && now != 2 {
			t.Fatalf("key moved from %d to %d, although only C was replaced", was, now)
		}
	}
}

func TestLoadSpread(t *testing.T) {
	const n, keys = 10, 100000
	r := buildRing(providers(n), defaultNodes)
	counts := make([]float64, n)
	for _, kp := range keyPoints(keys, 99) {
		counts[r.Lookup(kp)]++
	}
	mean := float64(keys) / n
	var ss float64
	for _, c := range counts {
		ss += (c - mean) * (c - mean)
	}
	cv := math.Sqrt(ss/n) / mean
	t.Logf("10 members x 160 nodes, %d keys: CV = %.2f%% (1/sqrt(160) = %.2f%%), counts %v",
		keys, 100*cv, 100/math.Sqrt(160), counts)
	if cv > 0.12 {
		t.Fatalf("coefficient of variation %.3f > 0.12", cv)
	}
}

// nextOther returns the owner of the first point clockwise of keyPoint's point
// owned by a member not in skip (brute force reference for lookupFunc).
func nextOther(r *hashRing, kp uint32, skip map[int]bool) int {
	v := visible(r)
	start, _ := slices.BinarySearchFunc(v, kp, func(e uint64, kp uint32) int { return cmp.Compare(uint32(e>>32), kp) })
	for k := range v {
		if _, idx := at(v, start+k); !skip[idx] {
			return idx
		}
	}
	return -1
}

func TestLookupFuncSkipsClockwise(t *testing.T) {
	r := buildRing(providers(10), defaultNodes)
	down := map[int]bool{3: true, 7: true}
	perMember := make([]int, 10)
	for _, kp := range keyPoints(20000, 8) {
		calls := map[int]int{}
		got, ok := r.lookupFunc(kp, func(i int) bool { calls[i]++; return !down[i] })
		if !ok || down[got] {
			t.Fatalf("lookupFunc returned %d, %v", got, ok)
		}
		if want := nextOther(r, kp, down); got != want {
			t.Fatalf("lookupFunc = %d, want next clockwise %d", got, want)
		}
		if plain := r.Lookup(kp); !down[plain] && got != plain {
			t.Fatal("a key of an accepted member must not move")
		}
		for i, c := range calls {
			if c > 1 {
				t.Fatalf("accept called %d times for member %d", c, i)
			}
		}
		perMember[got]++
	}
	// The skipped members' keys spread over several others, not onto one neighbour.
	for i, c := range perMember {
		if !down[i] && (c < 20000/10 || c > 20000/8*2) {
			t.Errorf("member %d got %d keys: %v", i, c, perMember)
		}
	}

	// Accepting all is Lookup; rejecting everyone fails after one call each.
	for _, kp := range keyPoints(100, 9) {
		if got, ok := r.lookupFunc(kp, func(int) bool { return true }); !ok || got != r.Lookup(kp) {
			t.Fatal("lookupFunc(all) must equal Lookup")
		}
		calls := 0
		if got, ok := r.lookupFunc(kp, func(int) bool { calls++; return false }); ok || got != -1 {
			t.Fatal("rejecting all members must fail")
		}
		if calls != 10 {
			t.Fatalf("accept called %d times, want 10", calls)
		}
	}
}

func TestLookupFuncLargeRing(t *testing.T) {
	// More than 1024 members uses a heap bitmap for the visited set.
	r := buildRing(providers(1500), 8)
	for _, kp := range keyPoints(50, 10) {
		calls := 0
		if _, ok := r.lookupFunc(kp, func(int) bool { calls++; return false }); ok || calls != 1500 {
			t.Fatalf("calls = %d", calls)
		}
		down := map[int]bool{r.Lookup(kp): true}
		if got, _ := r.lookupFunc(kp, func(i int) bool { return !down[i] }); got != nextOther(r, kp, down) {
			t.Fatal("wrong successor on a large ring")
		}
	}
}

func TestBoundedCapacity(t *testing.T) {
	for _, tc := range []struct {
		c       float64
		total   int64
		members int
		want    int64
	}{
		{1.25, 0, 10, 1},
		{1.25, 9, 10, 2}, // 1.25*10/10 = 1.25
		{1.25, 7, 10, 1}, // 1.25*8/10 = 1.0
		{1, 99, 10, 10},
		{2, 99, 10, 20},
		{0.5, 99, 10, 10},        // below 1 -> 1
		{math.NaN(), 99, 10, 10}, // NaN -> 1
		{1.25, -5, 10, 1},
		{1.25, 10, 0, 0},
		{math.Inf(1), 10, 3, math.MaxInt64},
		{1e300, math.MaxInt64, 1, math.MaxInt64},
	} {
		if got := boundedCapacity(tc.c, tc.total, tc.members); got != tc.want {
			t.Errorf("boundedCapacity(%v, %d, %d) = %d, want %d", tc.c, tc.total, tc.members, got, tc.want)
		}
	}
}

func TestLookupBounded(t *testing.T) {
	const n = 10
	r := buildRing(providers(n), defaultNodes)
	loads := make([]int64, n)
	load := func(i int) int64 { return loads[i] }
	all := func(int) bool { return true }

	// With no load the choice is Dubbo's.
	for _, kp := range keyPoints(1000, 12) {
		if got, ok := r.lookupBounded(kp, 1.25, 0, load, all); !ok || got != r.Lookup(kp) {
			t.Fatal("an idle ring must choose like Lookup")
		}
	}

	for _, c := range []float64{1, 1.25, 2} {
		for name, kps := range map[string][]uint32{
			"random":  keyPoints(10000, 13),
			"hot-key": make([]uint32, 10000), // all requests share one key
		} {
			clear(loads)
			var total int64
			stayed := 0
			for _, kp := range kps {
				got, ok := r.lookupBounded(kp, c, total, load, all)
				if !ok {
					t.Fatal("no member chosen")
				}
				if got == r.Lookup(kp) {
					stayed++
				}
				loads[got]++ // requests stay in flight
				total++
			}
			limit := int64(math.Ceil(c * float64(total) / n))
			for i, l := range loads {
				if l > limit {
					t.Errorf("c=%v %s: member %d has load %d > ceil(c*avg) = %d", c, name, i, l, limit)
				}
			}
			t.Logf("c=%v %s: max load %d <= %d, %.1f%% of requests on their own member",
				c, name, maxOf(loads), limit, 100*float64(stayed)/float64(len(kps)))
		}
	}

	// Rejected members are skipped, and every member full falls back to the
	// first accepted one clockwise.
	clear(loads)
	for _, kp := range keyPoints(200, 14) {
		down := map[int]bool{r.Lookup(kp): true}
		got, ok := r.lookupBounded(kp, 1.25, 0, load, func(i int) bool { return !down[i] })
		if !ok || got != nextOther(r, kp, down) {
			t.Fatal("bounded lookup must skip rejected members")
		}
		full := func(int) int64 { return 1 << 40 }
		if got, ok := r.lookupBounded(kp, 1.25, 10, full, all); !ok || got != r.Lookup(kp) {
			t.Fatal("when every member is over the bound, fall back to the first accepted")
		}
		if _, ok := r.lookupBounded(kp, 1.25, 0, load, func(int) bool { return false }); ok {
			t.Fatal("rejecting all members must fail")
		}
	}
}

func maxOf(xs []int64) int64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func TestNormalizeNodes(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{math.MinInt, defaultNodes}, {-1, defaultNodes}, {0, defaultNodes},
		{1, 4}, {3, 4}, {4, 4}, {7, 4}, {8, 8}, {40, 40}, {160, 160}, {161, 160}, {163, 160},
		{maxNodes, maxNodes}, {maxNodes + 1, maxNodes}, {1 << 40, maxNodes}, {math.MaxInt, maxNodes},
	} {
		if got := normalizeNodes(tc.in); got != tc.want {
			t.Errorf("normalizeNodes(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
	// The ring-size cap.
	if got := effectiveNodes(10, maxNodes); got != maxNodes {
		t.Errorf("effectiveNodes(10, maxNodes) = %d", got)
	}
	if got := effectiveNodes(5000, maxNodes); got != 836 || 5000*got > maxPoints {
		t.Errorf("effectiveNodes(5000, maxNodes) = %d", got)
	}
	if got := effectiveNodes(26214, defaultNodes); got != defaultNodes {
		t.Errorf("effectiveNodes(26214, 160) = %d: Dubbo's default must hold", got)
	}
	if got := effectiveNodes(math.MaxInt32, 160); got != minNodes {
		t.Errorf("effectiveNodes(MaxInt32, 160) = %d", got)
	}
}

func TestBadInputDoesNotPanic(t *testing.T) {
	for _, nodes := range []int{math.MinInt, -160, 0, 1, 2, 3, 5, 6, 7, 161, 20000, math.MaxInt} {
		r := buildRing(providers(3), nodes)
		want := normalizeNodes(nodes)
		if r.nodes != want || len(visible(r)) != 3*want {
			t.Errorf("nodes=%d: Nodes()=%d points=%d", nodes, r.nodes, len(visible(r)))
		}
		if idx := r.Lookup(12345); idx < 0 || idx > 2 {
			t.Errorf("nodes=%d: Lookup = %d", nodes, idx)
		}
	}

	// Empty rings answer "nothing", never panic.
	all := func(int) bool { return true }
	for name, r := range map[string]*hashRing{"empty": buildRing(nil, 160), "zero": {}} {
		if r.members != 0 || r.Lookup(1) != -1 {
			t.Errorf("%s ring not empty", name)
		}
		if idx, ok := r.lookupFunc(1, all); ok || idx != -1 {
			t.Errorf("%s ring lookupFunc", name)
		}
		if idx, ok := r.lookupBounded(1, 1.25, 0, func(int) int64 { return 0 }, all); ok || idx != -1 {
			t.Errorf("%s ring lookupBounded", name)
		}
	}
	if buildRing(nil, 0).nodes != defaultNodes {
		t.Error("empty ring Nodes")
	}

	// Odd addresses and duplicates: a later duplicate owns every shared point.
	dup := buildRing([]string{"", "x", "x", "🙂"}, 160)
	for _, kp := range keyPoints(2000, 15) {
		if dup.Lookup(kp) == 1 {
			t.Fatal("an earlier duplicate address must be shadowed by the later one")
		}
	}
	// A member whose every point is shadowed is still walked past, once.
	calls := 0
	if _, ok := dup.lookupFunc(1, func(int) bool { calls++; return false }); ok || calls != 3 {
		t.Errorf("rejecting all of a ring with a shadowed member: %d calls", calls)
	}
}

func TestZeroAllocations(t *testing.T) {
	r := buildRing(providers(100), defaultNodes)
	kp := hashString("some key")
	buf := make([]byte, 0, 64)
	loads := make([]int64, 100)
	load := func(i int) int64 { return loads[i] }
	owner := r.Lookup(kp)
	reject := func(i int) bool { return i != owner }
	key := "a key that is longer than thirty-two bytes, to defeat small-buffer tricks"
	for name, f := range map[string]func(){
		"hashKey":       func() { _ = hashKey(buf[:8]) },
		"hashString":    func() { _ = hashString(key) },
		"Lookup":        func() { _ = r.Lookup(kp) },
		"lookupFunc":    func() { _, _ = r.lookupFunc(kp, reject) },
		"lookupBounded": func() { _, _ = r.lookupBounded(kp, 1.25, 0, load, reject) },
	} {
		if a := testing.AllocsPerRun(200, f); a != 0 {
			t.Errorf("%s: %v allocs/op", name, a)
		}
	}
}

// Shares are the fractions of the hash space each member owns: what a
// dense, even sweep of key points finds, within one sweep step per point.
func TestRingShares(t *testing.T) {
	if got := buildRing(nil, 160).Shares(); len(got) != 0 {
		t.Errorf("empty ring: %v", got)
	}
	if got := buildRing(providers(1), 160).Shares(); len(got) != 1 || got[0] != 1 {
		t.Errorf("one member: %v, want [1]", got)
	}
	r := buildRing(providers(3), 160)
	shares := r.Shares()
	if len(shares) != 3 {
		t.Fatalf("%d shares for 3 members", len(shares))
	}
	const sweep = 1 << 16
	counts := make([]float64, 3)
	for k := range sweep {
		counts[r.Lookup(uint32(k)<<16)]++
	}
	sum := 0.0
	for i, s := range shares {
		sum += s
		if tol := float64(len(visible(r))) / sweep; math.Abs(counts[i]/sweep-s) > tol {
			t.Errorf("member %d: share %.4f, sweep %.4f (tolerance %.4f)", i, s, counts[i]/sweep, tol)
		}
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("shares add up to %v", sum)
	}
}

// Rebuild makes exactly the ring buildRing makes, collisions included, for
// members that come, go, move and share addresses (every point of two
// members at one address collides, so a member that leaves shows the
// points it hid): a few members, and hundreds changing many at once.
func TestRebuildIsBuild(t *testing.T) {
	for _, tc := range []struct {
		name             string
		start, addresses int // members at first; distinct addresses drawn from
		bulk             int // members a bulk step adds or removes; 0: none
	}{
		{"few members", 12, 40, 0},
		{"many members", 300, 2000, 120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(22, 1))
			id := 0
			newMem := func() testMember {
				id++
				return testMember{"10.0." + strconv.Itoa(rng.IntN(tc.addresses)) + ":20880", id} // collisions likely
			}
			var cur []testMember
			for range tc.start {
				cur = append(cur, newMem())
			}
			ring := buildRing(addrsOf(cur), 16)
			collided := 0
			for step := range 300 {
				next := slices.Clone(cur)
				switch k := rng.IntN(6); {
				case k == 0:
					next = append(next, newMem())
				case k == 1:
					if len(next) > 1 {
						k := rng.IntN(len(next))
						next = slices.Delete(next, k, k+1+rng.IntN(2)*min(1, len(next)-k-1))
					}
				case k == 2:
					next[rng.IntN(len(next))] = newMem()
				case k == 3:
					rng.Shuffle(len(next), func(i, j int) { next[i], next[j] = next[j], next[i] })
				case k == 4 && tc.bulk > 0 && len(next) < 2*tc.start:
					for range tc.bulk {
						next = slices.Insert(next, rng.IntN(len(next)+1), newMem())
					}
				case k == 5 && tc.bulk > 0 && len(next) > tc.bulk:
					for range tc.bulk {
						k := rng.IntN(len(next))
						next = slices.Delete(next, k, k+1)
					}
				}
				if len(next) == 0 {
					next = append(next, newMem())
				}
				got, hidden := rebuildIsBuild(t, ring, cur, next, 16, "step %d", step)
				if hidden {
					collided++
				}
				cur, ring = next, got
			}
			require.Greater(t, collided, 20, "steps with hidden points")
		})
	}
}

// testMember is a ring member of the Rebuild tests: its address, and an id
// that says whether it is the same member in two lists.
type testMember struct {
	addr string
	id   int
}

func addrsOf(ms []testMember) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.addr
	}
	return out
}

// rebuildIsBuild rebuilds r, the ring of cur, for next and fails t unless
// the result is buildRing's ring of next, saying what (a format and its
// arguments). It returns the ring and whether it hides points.
func rebuildIsBuild(t *testing.T, r *hashRing, cur, next []testMember, nodes int, what ...any) (*hashRing, bool) {
	t.Helper()
	pos := make(map[int]int, len(cur))
	for i, m := range cur {
		pos[m.id] = i
	}
	from := make([]int, len(next))
	for i, m := range next {
		from[i] = -1 // a newcomer
		if j, ok := pos[m.id]; ok {
			from[i] = j
		}
	}
	got, want := r.Rebuild(addrsOf(next), from, nodes), buildRing(addrsOf(next), nodes)
	require.Equal(t, want.entries, got.entries, what...)
	require.Equal(t, want.members, got.members, what...)
	require.Equal(t, want.nodes, got.nodes, what...)
	return got, len(visible(want)) < len(want.entries)
}
