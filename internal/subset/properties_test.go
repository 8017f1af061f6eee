package subset

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// evenness is the bound of aperture: with consumers evenly spaced, the
// number of windows holding a member is the number of consumer positions in
// an interval of fixed length, mean or mean ± 1, so max/mean ≤ 1 + 1/mean and
// min/mean ≥ 1 - 1/mean. On equal weights the load is bound alike.
func evenness(r assignment) (maxBound, minBound float64, mean float64) {
	total := 0
	for _, c := range r.count {
		total += c
	}
	mean = float64(total) / float64(len(r.count))
	return 1 + 1/mean, 1 - 1/mean, mean
}

func TestApertureGivesEveryProviderTheSameConsumers(t *testing.T) {
	for _, f := range []fleet{{300, 500, 10, false}, {500, 300, 7, false}, {40, 600, 5, false}, {100, 200, 10, false}, {300, 500, 10, true}} {
		t.Run(f.String(), func(t *testing.T) {
			r := assign(f, apertureMethod, false)
			hi, lo, mean := evenness(r)
			if r.countMax > hi || r.countMin < lo {
				t.Errorf("consumers per provider max/mean %.3f, min/mean %.3f (mean %.1f): want within [%.3f, %.3f]", r.countMax, r.countMin, mean, lo, hi)
			}
			if want := max(f.size, (f.providers+f.consumers-1)/f.consumers); r.connMin != want || r.connMax != want {
				t.Errorf("connections per consumer %d..%d, want %d", r.connMin, r.connMax, want)
			}
			if !f.weighted && (r.loadMax > hi || r.loadMin < lo) {
				t.Errorf("load/fair max %.3f min %.3f: want within [%.3f, %.3f]", r.loadMax, r.loadMin, lo, hi)
			}
		})
	}
	// Negative control: rendezvous hashing places consumers at random, and
	// misses the same bound.
	t.Run("negative_control_rendezvous", func(t *testing.T) {
		r := assign(fleet{300, 500, 10, false}, rendezvousMethod, false)
		hi, lo, _ := evenness(r)
		if r.countMax <= hi && r.countMin >= lo {
			t.Errorf("rendezvous met aperture's bound (max/mean %.3f, min/mean %.3f): the bound tells nothing", r.countMax, r.countMin)
		}
	})
}

func TestApertureCoversEveryProviderWhenConsumersAreFew(t *testing.T) {
	f := fleet{10, 1000, 5, false}
	r := assign(f, apertureMethod, false)
	for i, c := range r.count {
		if c == 0 {
			t.Fatalf("provider %d has no consumer", i)
		}
	}
	// Each consumer's window is ⌈providers/consumers⌉ long, more than size.
	if want := (f.providers + f.consumers - 1) / f.consumers; r.connMax != want || r.connMin != want {
		t.Errorf("connections per consumer %d..%d, want %d", r.connMin, r.connMax, want)
	}
}

// classLoads returns, per weight of f's providers, the mean of load/fair
// over the providers of that weight and the number of consumer slots they
// hold.
func classLoads(f fleet, r assignment) map[float64][2]float64 {
	ps := f.fleetProviders()[:f.providers]
	sum, n, slots := map[float64]float64{}, map[float64]float64{}, map[float64]float64{}
	for i, p := range ps {
		sum[p.Weight] += r.load[i] / r.fair[i]
		n[p.Weight]++
		slots[p.Weight] += float64(r.count[i])
	}
	out := map[float64][2]float64{}
	for w := range sum {
		out[w] = [2]float64{sum[w] / n[w], slots[w]}
	}
	return out
}

// TestLoadTracksWeight: each weight class's mean load is its fair load, within
// five standard deviations of the mean of that many consumer slots (a slot's
// presence is a draw; the mean over s slots has a relative deviation of about
// 1/√s).
func TestLoadTracksWeight(t *testing.T) {
	f := fleet{400, 500, 20, true}
	check := func(t *testing.T, r assignment) (failed bool) {
		for w, c := range classLoads(f, r) {
			tol := 5 / math.Sqrt(c[1])
			t.Logf("weight %v: mean load/fair %.3f over %v slots, want 1 ± %.3f", w, c[0], c[1], tol)
			if math.Abs(c[0]-1) > tol {
				failed = true
			}
		}
		return failed
	}
	for _, m := range []method{apertureMethod, rendezvousMethod} {
		t.Run(m.String(), func(t *testing.T) {
			if check(t, assign(f, m, false)) {
				t.Fail()
			}
		})
	}
	// Negative control: rendezvous drawing members in proportion to their
	// weights alone (typical weight near 0) counts a weight twice, once in
	// the draw and again in the balancer, and misses the bound.
	t.Run("negative_control_rendezvous_by_weight_alone", func(t *testing.T) {
		r := assignWith(f, Options{Size: f.size, TypicalWeight: 1e-9})
		if !check(t, r) {
			t.Error("rendezvous by weight alone tracked the weights: the check tells nothing")
		}
	})
}

// assignWith is assign of rendezvous with opts of the caller's.
func assignWith(f fleet, opts Options) assignment {
	ps := f.fleetProviders()[:f.providers]
	count, load := make([]int, len(ps)), make([]float64, len(ps))
	var s []int
	for j := range f.consumers {
		s = Select(s, ps, Consumer{ID: consumerID(j)}, opts, nil)
		sum := 0.0
		for _, i := range s {
			sum += ps[i].Weight
		}
		for _, i := range s {
			count[i]++
			load[i] += ps[i].Weight / sum
		}
	}
	total := 0.0
	for _, p := range ps {
		total += p.Weight
	}
	r := assignment{count: count, load: load}
	for _, p := range ps {
		r.fair = append(r.fair, float64(f.consumers)*p.Weight/total)
	}
	return r
}

// replaced is the number of members replaced from a to b (both ascending):
// the larger of those removed and those added.
func replaced(a, b []int) int {
	var c churnAcc
	c.add(a, b)
	return c.max
}

// excludedBy excludes the providers of ps whose key's hash is 3 modulo 7,
// whatever their index.
func excludedBy(ps []Provider) func(int) bool {
	return func(i int) bool { return hashString(ps[i].Key)%7 == 3 }
}

// servingReplaced is replaced over the serving members alone.
func servingReplaced(a, b []int, excluded func(int) bool) int {
	serving := func(s []int) []int {
		return slices.DeleteFunc(slices.Clone(s), excluded)
	}
	return replaced(serving(a), serving(b))
}

// TestAProviderChangeChangesAtMostOneMember: with either method, on equal
// weights or not, a provider joining or leaving replaces at most one member
// of each subset; with members excluded, at most one serving member (the
// subset may grow past several excluded ones to reach its next serving
// member).
func TestAProviderChangeChangesAtMostOneMember(t *testing.T) {
	for _, m := range []method{apertureMethod, rendezvousMethod} {
		for _, weighted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/weighted=%v", m, weighted), func(t *testing.T) {
				providerChangeChangesAtMostOne(t, m, fleet{40, 300, 10, weighted})
			})
		}
	}
}

func providerChangeChangesAtMostOne(t *testing.T, m method, f fleet) {
	all := f.fleetProviders()
	ps := all[:f.providers]
	for _, opts := range []Options{{Size: 10}, {Size: 10, TypicalWeight: 1}, {Size: 1}} {
		for _, exclude := range []bool{false, true} {
			ex := func(list []Provider) func(int) bool {
				if !exclude {
					return func(int) bool { return false }
				}
				return excludedBy(list)
			}
			var base, other []int
			changed := 0
			for j := range f.consumers {
				c := consumerAt(m, consumerID(j), j, f.consumers)
				base = Select(base, ps, c, opts, ex(ps))
				other = Select(other, all, c, opts, ex(all)) // one joins
				if n := servingReplaced(base, other, ex(all)); n > 1 || (!exclude && replaced(base, other) > 1) {
					t.Errorf("%+v excluding %v, consumer %d: a provider joining replaced %d members", opts, exclude, j, n)
				}
				// Each member of the subset leaves in turn.
				for _, leaving := range base {
					left := slices.Delete(slices.Clone(ps), leaving, leaving+1)
					other = Select(other, left, c, opts, ex(left))
					for k := range other { // back to indices of ps
						if other[k] >= leaving {
							other[k]++
						}
					}
					n := servingReplaced(base, other, ex(ps))
					if n > 1 || (!exclude && replaced(base, other) > 1) {
						t.Errorf("%+v excluding %v, consumer %d: provider %d leaving replaced %d serving members", opts, exclude, j, leaving, n)
					}
					changed += n
				}
			}
			if changed == 0 {
				t.Errorf("%+v: no member ever replaced: the check tells nothing", opts)
			}
		}
	}
}

func TestRendezvousConsumerJoinMovesNoOtherSubset(t *testing.T) {
	r := assign(fleet{200, 300, 10, true}, rendezvousMethod, true)
	if r.consumerJoin.max != 0 {
		t.Errorf("a consumer joining replaced up to %d members of other subsets", r.consumerJoin.max)
	}
}

// TestApertureConsumerJoinMovesOnlyNeighbours: when a consumer joins, every
// other consumer's position moves by less than one consumer spacing
// (1/(Count+1) of the ring), so its window gains and loses at most the slots
// within that distance: ⌈providers/(consumers+1)⌉.
func TestApertureConsumerJoinMovesOnlyNeighbours(t *testing.T) {
	for _, f := range []fleet{{300, 500, 10, false}, {100, 1000, 10, false}, {500, 300, 10, false}, {300, 500, 10, true}} {
		t.Run(f.String(), func(t *testing.T) {
			r := assign(f, apertureMethod, true)
			bound := (f.providers + f.consumers) / (f.consumers + 1)
			if r.consumerJoin.max > bound {
				t.Errorf("a consumer joining replaced up to %d members of another subset, want at most %d", r.consumerJoin.max, bound)
			}
			t.Logf("consumer join: %v; provider join: %v; provider leave: %v", r.consumerJoin, r.join, r.leave)
		})
	}
}

func TestExcludedMembersGrowTheSubset(t *testing.T) {
	f := fleet{0, 400, 12, true}
	ps := f.fleetProviders()[:f.providers]
	for _, m := range []method{apertureMethod, rendezvousMethod} {
		t.Run(m.String(), func(t *testing.T) {
			var base, grown []int
			for j := range 50 {
				c := consumerAt(m, consumerID(j), j, 50)
				excluded := func(i int) bool { return (i+j)%3 == 0 }
				base = Select(base, ps, c, Options{Size: f.size}, nil)
				grown = Select(grown, ps, c, Options{Size: f.size}, excluded)
				serving := 0
				for _, i := range grown {
					if !excluded(i) {
						serving++
					}
				}
				// Aperture keeps as many serving as its window holds (base,
				// with nothing excluded), up to size.
				want := f.size
				if m == apertureMethod {
					want = min(f.size, len(base))
				}
				if serving < want || (m == rendezvousMethod && serving != want) {
					t.Fatalf("consumer %d: %d serving members, want %d", j, serving, want)
				}
				for _, i := range base {
					if _, ok := slices.BinarySearch(grown, i); !ok {
						t.Fatalf("consumer %d: member %d of the subset dropped when others are excluded", j, i)
					}
				}
			}
			// Everything excluded: everything held.
			got := Select(nil, ps, consumerAt(m, "c", 0, 50), Options{Size: f.size}, func(int) bool { return true })
			if len(got) != len(ps) {
				t.Errorf("all excluded: %d members, want all %d", len(got), len(ps))
			}
		})
	}
}

func TestZonesGetTheirShare(t *testing.T) {
	var ps []Provider
	add := func(zone string, n int, w float64) {
		for i := range n {
			ps = append(ps, Provider{Key: fmt.Sprintf("%s-%d", zone, i), Weight: w, Zone: zone})
		}
	}
	add("a", 60, 100) // 6000 of 10000: 6 of 10
	add("b", 15, 200) // 3000: 3
	add("c", 9, 100)  // 900: 0.9 → 1
	add("d", 1, 100)  // 100: 0.1 → at least 1
	want := map[string]int{"a": 6, "b": 3, "c": 1, "d": 1}
	for _, m := range []method{apertureMethod, rendezvousMethod} {
		for j := range 20 {
			got := Select(nil, ps, consumerAt(m, consumerID(j), j, 20), Options{Size: 10, Zones: true}, nil)
			n := map[string]int{}
			for _, i := range got {
				n[ps[i].Zone]++
			}
			for z, w := range want {
				if n[z] < w || (m == rendezvousMethod && n[z] != w) {
					t.Fatalf("%v, consumer %d: zone %s holds %d, want %d (%v)", m, j, z, n[z], w, n)
				}
			}
		}
	}
	// Without zones, the small zones are often missing: the setting matters.
	missing := 0
	for j := range 20 {
		got := Select(nil, ps, Consumer{ID: consumerID(j)}, Options{Size: 10}, nil)
		if !slices.ContainsFunc(got, func(i int) bool { return ps[i].Zone == "d" }) {
			missing++
		}
	}
	if missing == 0 {
		t.Error("zone d held by every consumer even without Zones: the check tells nothing")
	}
}

// keysOf returns the keys of the providers at idx, sorted.
func keysOf(ps []Provider, idx []int) []string {
	var ks []string
	for _, i := range idx {
		ks = append(ks, ps[i].Key)
	}
	slices.Sort(ks)
	return ks
}

func TestInputOrderDoesNotMatter(t *testing.T) {
	ps := fleet{0, 200, 8, true}.fleetProviders()
	ps = append(ps, Provider{Key: ps[5].Key, Weight: 1}, Provider{Key: ps[9].Key, Weight: 1e6, Zone: "z"})
	reversed := slices.Clone(ps)
	slices.Reverse(reversed)
	rotated := append(slices.Clone(ps[77:]), ps[:77]...)
	for _, zones := range []bool{false, true} {
		for _, c := range []Consumer{{ID: "x"}, {ID: "x", Index: 3, Count: 10}} {
			opts := Options{Size: 8, Zones: zones}
			want := keysOf(ps, Select(nil, ps, c, opts, nil))
			for _, other := range [][]Provider{reversed, rotated} {
				got := Select(nil, other, c, opts, nil)
				if !slices.Equal(keysOf(other, got), want) {
					t.Errorf("zones %v, %+v: %v in another order, want %v", zones, c, keysOf(other, got), want)
				}
				for _, i := range got { // duplicates: the heavier is kept
					if other[i].Key == ps[9].Key && other[i].Weight != 1e6 {
						t.Errorf("duplicate of %s: kept weight %v, want the heavier", ps[9].Key, other[i].Weight)
					}
				}
			}
		}
	}
}

// checkResult fails t when got is not a valid result of Select: ascending
// indices into ps, one per key, and, without zones, at least min(size,
// serving keys) serving ones (aperture: at least one).
func checkResult(t *testing.T, ps []Provider, c Consumer, opts Options, excluded func(int) bool, got []int) {
	t.Helper()
	seen := map[string]bool{}
	for k, i := range got {
		if i < 0 || i >= len(ps) || (k > 0 && got[k-1] >= i) {
			t.Fatalf("result %v: not ascending indices into %d providers", got, len(ps))
		}
		if opts.Size > 0 && seen[ps[i].Key] {
			t.Fatalf("result %v: key %q twice", got, ps[i].Key)
		}
		seen[ps[i].Key] = true
	}
	if opts.Size <= 0 {
		if len(got) != len(ps) {
			t.Fatalf("off: %d of %d providers", len(got), len(ps))
		}
		return
	}
	keys, servingKeys := map[string]bool{}, map[string]bool{}
	for i, p := range ps {
		keys[p.Key] = true
		if excluded == nil || !excluded(i) {
			servingKeys[p.Key] = true
		}
	}
	serving := 0
	for _, i := range got {
		if excluded == nil || !excluded(i) {
			serving++
		}
	}
	if len(got) > len(keys) {
		t.Fatalf("%d members of %d keys", len(got), len(keys))
	}
	want := min(opts.Size, len(servingKeys))
	if c.Count > 0 {
		want = min(1, want)
	}
	if !opts.Zones && serving < want {
		// Duplicates may hide a serving key behind an excluded kept one, so
		// count only when every key has one entry.
		if len(keys) == len(ps) {
			t.Fatalf("%d serving members, want %d", serving, want)
		}
	}
}

func TestBadInputIsSafe(t *testing.T) {
	inf := math.Inf(1)
	lists := [][]Provider{
		nil,
		{},
		{{Key: "", Weight: math.NaN()}},
		{{Key: "a", Weight: -1}, {Key: "b", Weight: inf}, {Key: "c", Weight: math.Inf(-1)}, {Key: "d", Weight: math.NaN()}, {Key: "e", Weight: 1e300}},
		{{Key: "a"}, {Key: "a"}, {Key: "a", Weight: 5}, {Key: ""}, {Key: ""}},
		{{Key: "a", Weight: 0}, {Key: "b", Weight: 0}, {Key: "c", Weight: 0}},
		fleet{0, 50, 5, true}.fleetProviders(),
	}
	consumers := []Consumer{{}, {ID: "x"}, {Index: -7, Count: 3}, {Index: math.MaxInt, Count: math.MaxInt}, {Index: 5, Count: 1}, {Index: math.MinInt, Count: 2}}
	sizes := []int{math.MinInt, -1, 0, 1, 2, 3, 1 << 40, math.MaxInt}
	for _, ps := range lists {
		for _, c := range consumers {
			for _, size := range sizes {
				for _, zones := range []bool{false, true} {
					for _, tw := range []float64{0, math.NaN(), -1, inf, 1e300, 1e-300} {
						opts := Options{Size: size, Zones: zones, TypicalWeight: tw}
						checkResult(t, ps, c, opts, nil, Select(nil, ps, c, opts, nil))
						ex := func(i int) bool { return i%2 == 0 }
						checkResult(t, ps, c, opts, ex, Select(nil, ps, c, opts, ex))
					}
				}
			}
		}
	}
}

func FuzzSelect(f *testing.F) {
	f.Add([]byte("a\x01b\x02c\x03"), 2, "me", 1, 3, false, uint8(0))
	f.Add([]byte("aa\xff\xff\x00"), 1, "", -1, 0, true, uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, size int, id string, index, count int, zones bool, exMask uint8) {
		// Each pair of bytes is a provider: a one-byte key, a weight and a
		// zone from the second.
		var ps []Provider
		for k := 0; k+1 < len(data); k += 2 {
			w := float64(int8(data[k+1]))
			switch data[k+1] {
			case 0x7f:
				w = math.Inf(1)
			case 0x80:
				w = math.NaN()
			}
			ps = append(ps, Provider{Key: string(data[k : k+1]), Weight: w, Zone: string('a' + rune(data[k+1]%3))})
		}
		size %= 1 << 20
		opts := Options{Size: size, Zones: zones}
		excluded := func(i int) bool { return exMask>>(i%8)&1 == 1 }
		c := Consumer{ID: id, Index: index, Count: count}
		got := Select(nil, ps, c, opts, excluded)
		checkResult(t, ps, c, opts, excluded, got)
		if size > 0 && exMask == 0 {
			reversed := slices.Clone(ps)
			slices.Reverse(reversed)
			if a, b := keysOf(ps, got), keysOf(reversed, Select(nil, reversed, c, opts, excluded)); !slices.Equal(a, b) {
				t.Fatalf("%v reversed gives %v", a, b)
			}
		}
	})
}

func TestSelectAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops pooled scratch; BenchmarkSelect10000 -benchmem shows 0")
	}
	ps := fleet{0, 1000, 20, true}.fleetProviders()
	dst := make([]int, 0, 64)
	for _, c := range []Consumer{{ID: "x"}, {ID: "x", Index: 3, Count: 100}} {
		for _, zones := range []bool{false, true} {
			opts := Options{Size: 20, Zones: zones}
			dst = Select(dst, ps, c, opts, nil) // warm the pool
			if n := testing.AllocsPerRun(50, func() { dst = Select(dst, ps, c, opts, nil) }); n > 0 {
				t.Errorf("%+v zones %v: %v allocations per Select", c, zones, n)
			}
		}
	}
}

// TestRendezvousWithinZonesChangesAtMostOneMember: with zones, a provider
// joining or leaving a zone, when the zones' parts of the size stay the same,
// replaces at most one member of a subset.
func TestRendezvousWithinZonesChangesAtMostOneMember(t *testing.T) {
	var all []Provider
	for i := range 301 {
		all = append(all, Provider{Key: fmt.Sprintf("p%d", i), Weight: 100, Zone: string(rune('a' + i%3))})
	}
	ps := all[:300] // 100 a zone; the 301st joins zone a: parts 4, 4, 4 either way
	opts := Options{Size: 12, Zones: true}
	changed := 0
	var base, other []int
	for j := range 100 {
		c := Consumer{ID: consumerID(j)}
		base = Select(base, ps, c, opts, nil)
		other = Select(other, all, c, opts, nil)
		n := replaced(base, other)
		if n > 1 {
			t.Errorf("consumer %d: a provider joining zone a replaced %d members", j, n)
		}
		changed += n
	}
	if changed == 0 {
		t.Error("no subset took the new provider: the check tells nothing")
	}
}
