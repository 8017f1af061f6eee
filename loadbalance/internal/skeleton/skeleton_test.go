package skeleton

import (
	"math"
	"slices"
	"strings"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/zone"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// seventh is the smallest balancer: always the first slot. It shows what a
// new balancer writes: a Spec.
func seventh(uncounted string, among bool) (*Balancer[struct{}], *int) {
	builds := 0
	spec := Spec[struct{}]{
		Name:      "first",
		Build:     func(*member.Set, *member.View[struct{}]) *struct{} { builds++; return &struct{}{} },
		Pick:      func(*member.View[struct{}], base.Invocation) int { return 0 },
		Uncounted: uncounted,
	}
	if among {
		spec.Among = func(_ *member.View[struct{}], list []base.Invoker, _ base.Invocation) base.Invoker {
			return list[len(list)-1]
		}
	}
	return New(spec), &builds
}

func TestSelectPrologueAndSubset(t *testing.T) {
	b, builds := seventh("", true)
	inv := lbtest.Call("Say")
	assert.Nil(t, b.Select(nil, inv))
	one := lbtest.N(1)
	assert.Same(t, one[0], b.Select(one, inv))
	assert.Zero(t, *builds, "no snapshot for 0 or 1 provider")

	list := lbtest.N(4)
	assert.Same(t, list[0], b.Select(slices.Clone(list), inv))
	sub := []base.Invoker{list[1], list[2]}
	assert.Same(t, list[2], b.Select(sub, inv), "the balancer's own pick among a subset")
	assert.Equal(t, 1, *builds)

	// Without Among: weighted random within the subset.
	d, _ := seventh("", false)
	d.Select(list, inv)
	for range 10 {
		assert.Contains(t, sub, d.Select(sub, inv))
	}
}

// The missing-filter hint is one WARN line per (service, method), with the
// module's prefix and no stack, and only for balancers that need the filter.
func TestMissingFilterOneLinePerMethod(t *testing.T) {
	logs := lbtest.CaptureLogs(t)
	b, _ := seventh("it picks blind", false)
	list := lbtest.N(3)
	for range member.MissingFilterPicks - 1 {
		b.Select(list, lbtest.Call("Say"))
	}
	assert.False(t, b.FilterMissing())
	assert.Empty(t, logs())
	b.Select(list, lbtest.Call("Say"))
	assert.True(t, b.FilterMissing())
	require.Len(t, logs(), 1)
	line := logs()[0]
	for _, want := range []string{"[dubbogo-lb] ", `"first"`, lbtest.Service, "Say", "it picks blind", "lbactive", "dubbo.consumer.filter"} {
		assert.Contains(t, line, want)
	}
	assert.False(t, strings.ContainsAny(line, "\r\n"))

	for range 3 * member.MissingFilterPicks {
		b.Select(list, lbtest.Call("Say"))
		b.Select(list, lbtest.Call("Other"))
	}
	assert.Len(t, logs(), 2, "once more for the other method, never again for Say")

	// A balancer that needs no filter is quiet where ejection is off, and
	// says that ejection sees nothing where it is on.
	quiet, _ := seventh("", false)
	off := lbtest.EjectionOff(lbtest.N(3)...)
	for range 2 * member.MissingFilterPicks {
		quiet.Select(off, lbtest.Call("Say"))
	}
	assert.False(t, quiet.FilterMissing())
	assert.Len(t, logs(), 2)
	for range member.MissingFilterPicks {
		quiet.Select(lbtest.N(3), lbtest.Call("Say"))
	}
	assert.True(t, quiet.FilterMissing())
	require.Len(t, logs(), 3)
	assert.Contains(t, logs()[2], "outlier ejection sees no failure")
	assert.NotContains(t, logs()[2], "picks blind")
}

// Every pick is counted once on the picked provider's statistics, on a
// retry's subset too, and not at all with detailed figures off; 0 or 1
// provider is no pick (dubbo-go does not even call Select for one).
func TestSelectCountsPicks(t *testing.T) {
	b, _ := seventh("", true)
	list := lbtest.N(3)
	picks := func() []int64 {
		var out []int64
		for _, inv := range list {
			out = append(out, rpcstatus.Of(inv.GetURL()).Method("Say").Picks())
		}
		return out
	}
	inv := lbtest.Call("Say")
	for range 5 {
		b.Select(list, inv)
	}
	b.Select([]base.Invoker{list[0], list[1]}, inv) // Among: the last
	b.Select(list[:1], inv)
	assert.Equal(t, []int64{5, 1, 0}, picks())

	rpcstatus.SetDetailed(false)
	t.Cleanup(func() { rpcstatus.SetDetailed(true) })
	b.Select(list, inv)
	assert.Equal(t, []int64{5, 1, 0}, picks())
}

// While a new membership's snapshot is built, a balancer with a rule for
// subsets (Among) applies it to two distinct candidates of the new list
// that the old snapshot knows, drawn by their old warm weights; without
// Among, or without an old snapshot, the pick is member.Interim's. No
// interim pick allocates.
func TestInterimAppliesTheSubsetRuleToTwoCandidates(t *testing.T) {
	var seen [][]base.Invoker
	spec := Spec[struct{}]{
		Name:  "last",
		Build: func(*member.Set, *member.View[struct{}]) *struct{} { return &struct{}{} },
		Pick:  func(*member.View[struct{}], base.Invocation) int { return 0 },
		Among: func(_ *member.View[struct{}], list []base.Invoker, _ base.Invocation) base.Invoker {
			seen = append(seen, slices.Clone(list))
			return list[len(list)-1]
		},
	}
	spec.Env.Rand = algo.Seeded(1).Uint64
	b := New(spec)
	list := lbtest.N(4)
	old, _ := b.View(list, "Say")
	newcomer := lbtest.Provider(20100, nil)
	now := []base.Invoker{list[0], list[1], list[2], newcomer} // list[3] left
	inv := lbtest.Call("Say")
	const picks = 3000
	counts := map[base.Invoker]int{}
	for range picks {
		counts[b.Interim(old, now, inv)]++
	}
	require.NotEmpty(t, seen)
	for _, pair := range seen {
		require.Len(t, pair, 2)
		require.NotSame(t, pair[0], pair[1])
		for _, c := range pair {
			require.Contains(t, list[:3], c, "a candidate of the list that the old snapshot knows")
		}
	}
	// Among returns the second candidate when they differ, the pick is the
	// first when they are the same: list[0..2] share evenly.
	for _, p := range list[:3] {
		assert.InDelta(t, 100./3, 100*float64(counts[p])/picks, lbtest.Tol(1./3, picks))
	}
	assert.Zero(t, counts[newcomer])
	assert.Zero(t, testing.AllocsPerRun(100, func() { b.Interim(old, now, inv) }))

	// Without an old snapshot: uniform over the list, Among unused.
	seen = nil
	for range 200 {
		require.Contains(t, now, b.Interim(nil, now, inv))
	}
	assert.Empty(t, seen)

	// Without Among: the first candidate, as member.Interim draws it.
	d := New(Spec[struct{}]{Name: "first", Build: spec.Build, Pick: spec.Pick, Env: spec.Env})
	dOld, _ := d.View(list, "Say")
	for range 200 {
		require.Contains(t, list[:3], d.Interim(dOld, now, inv))
	}
}

// Select counts its interim picks (describe's Rebuilds.InterimPicks, the
// metric dubbo_consumer_lb_interim_picks_total): a list above the inline
// size with no snapshot yet, and a changed one, are picked while their
// snapshot is built; a list built on the call, and a steady one, are not.
func TestSelectCountsInterimPicks(t *testing.T) {
	b, _ := seventh("", true)
	inv := lbtest.Call("Say")
	small := lbtest.N(member.DefaultInlineUpTo)
	b.Select(small, inv)
	assert.Zero(t, b.Rebuilds().InterimPicks, "built on the call")

	list := lbtest.N(member.DefaultInlineUpTo + 1)
	b.Select(list, inv)
	assert.Equal(t, int64(1), b.Rebuilds().InterimPicks, "no snapshot yet")
	b.WaitBuilds()
	for range 10 {
		require.Same(t, list[0], b.Select(list, inv))
	}
	assert.Equal(t, int64(1), b.Rebuilds().InterimPicks, "steady")

	changed := slices.Clone(list)
	changed[len(changed)-1] = lbtest.Provider(21000, nil) // an end: Select checks them always
	b.Select(changed, inv)
	assert.Equal(t, int64(2), b.Rebuilds().InterimPicks, "a changed list")
	b.WaitBuilds()
	assert.Same(t, changed[0], b.Select(changed, inv))
	assert.Equal(t, int64(2), b.Rebuilds().InterimPicks)
}

// Where the old snapshot routes by zone, the interim pick is drawn in the
// zone its plan chooses, for a balancer with a subset rule and one
// without: every call stays local under a direct plan, the plan's local
// share under a spilling one. The control, the draw over the whole list,
// gives zone a its share of the providers and fails both checks.
func TestInterimStaysInThePlannedZone(t *testing.T) {
	inv := lbtest.Call("Say")
	const picks = 4000
	share := func(pick func() base.Invoker) float64 {
		local := 0
		for range picks {
			if pick().GetURL().GetParam("lb.zone", "") == "a" {
				local++
			}
		}
		return 100 * float64(local) / picks
	}
	for _, tc := range []struct {
		name   string
		n      []int
		mode   zone.Mode
		change int // the provider that a newcomer of its zone replaces
	}{
		// Equal zones and callers: all local. A draw is kept with
		// probability 3/8 (zone a's three known providers of eight), so 16
		// draws all miss with q = (5/8)^16 < 0.06 %, the only way out of
		// the zone (for either of two candidates).
		{"direct", []int{4, 4}, zone.Direct, 0},
		// Zone a has a quarter of the capacity for half the callers: it
		// keeps half of its calls (the plan's LocalShare) and spills the
		// rest to b. A candidate of zone a is kept with probability 2/8, so
		// it misses with (6/8)^16, 1 %, and is then drawn from the list.
		{"spill", []int{2, 6}, zone.Spill, 7},
	} {
		cfg := map[string]string{"lb.zone.local": "a", "lb.zone.callers": "a:1,b:1"}
		list := lbtest.Zoned(24000+100*int(tc.mode), []string{"a", "b"}, tc.n, cfg)
		now := slices.Clone(list)
		z := now[tc.change].GetURL().GetParam("lb.zone", "")
		now[tc.change] = lbtest.Provider(24500+100*int(tc.mode), map[string]string{"lb.zone": z, "lb.zone.local": "a", "lb.zone.callers": "a:1,b:1"})
		for _, among := range []bool{true, false} {
			b, _ := seventh("", among)
			b.rand = algo.Seeded(uint64(tc.mode))
			old, _ := b.View(list, "Say")
			require.NotNil(t, old.Zoning, tc.name)
			plan := old.Zoning.Plan
			require.Equal(t, tc.mode, plan.Mode, tc.name)
			got := share(func() base.Invoker { return b.Interim(old, now, inv) })
			if tc.mode == zone.Direct {
				q := 2 * math.Pow(5./8, 16)
				assert.GreaterOrEqual(t, got, 100*(1-q)-lbtest.Tol(q, picks), "%s, among %v", tc.name, among)
			} else {
				assert.InDelta(t, 100*plan.LocalShare, got, lbtest.Tol(plan.LocalShare, picks)+100*2*math.Pow(6./8, 16), "%s, among %v", tc.name, among)
			}
			r := algo.Seeded(9)
			control := share(func() base.Invoker { return member.Interim(old.Set, now, r.Uint64) })
			assert.Less(t, control, 100*plan.LocalShare-lbtest.Tol(plan.LocalShare, picks), "control, %s", tc.name)
		}
	}
}

// TwoChoices compares a list of two as it is, both candidates having a
// usable weight: Interim's pair, drawn by weight already, is not drawn
// again (which would compare them only half of the time). A pair with a
// drained provider is drawn by weight, so the drained one is not picked.
func TestTwoChoicesAmongComparesAPairAsItIs(t *testing.T) {
	two := TwoChoices[struct{}]{
		Rand:   algo.Seeded(3),
		Alias:  func(*member.View[struct{}]) *algo.Alias { return nil },
		Better: func(_ *member.View[struct{}], i, j int) bool { return i < j }, // the lower slot
	}
	b := New(Spec[struct{}]{
		Name:  "two",
		Build: func(*member.Set, *member.View[struct{}]) *struct{} { return &struct{}{} },
		Pick:  two.Pick, Among: two.Among,
	})
	list := lbtest.Weighted("100", "300", "100")
	list = append(list, lbtest.Provider(20003, map[string]string{"weight": "0", "release": "3.2.15"})) // drained
	v, _ := b.View(list, "Say")
	require.False(t, v.Uniform)
	inv := lbtest.Call("Say")
	for range 200 {
		require.Same(t, list[0], two.Among(v, []base.Invoker{list[1], list[0]}, inv))
		require.Same(t, list[1], two.Among(v, []base.Invoker{list[3], list[1]}, inv))
	}
}
