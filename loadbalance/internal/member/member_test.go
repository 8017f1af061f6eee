package member

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/warmup"
)

// table counts builds, so tests can see when a snapshot was rebuilt.
type table struct{ builds int }

func newCounting() (*Registry[table], *int) {
	builds := 0
	r := NewRegistry(warmup.Options{}, nil, func(*Set, *View[table]) *table { builds++; return &table{builds} })
	return r, &builds
}

func TestLookupReusesSnapshotUntilMembershipChanges(t *testing.T) {
	r, builds := newCounting()
	list := lbtest.Weighted("100", "200", "0.5")
	v, exact := r.Lookup(list, "Say")
	require.True(t, exact)
	assert.Equal(t, []float64{100, 200, 0.5}, v.Weights())
	assert.InDelta(t, 300.5, v.Total, 1e-9)
	assert.False(t, v.Uniform)
	assert.Equal(t, 1, *builds)

	// The same providers in a fresh slice (dubbo-go's router chain makes one
	// per call): no rebuild.
	v2, exact := r.Lookup(append([]base.Invoker(nil), list...), "Say")
	assert.True(t, exact)
	assert.Same(t, v, v2)
	assert.Equal(t, 1, *builds)

	// Another method keeps its own snapshot.
	_, _ = r.Lookup(list, "Other")
	assert.Equal(t, 2, *builds)

	// Replacing a provider (same count!) is a change.
	changed := []base.Invoker{list[0], list[1], lbtest.Provider(20009, nil)}
	v3, exact := r.Lookup(changed, "Say")
	assert.True(t, exact)
	assert.Equal(t, 3, *builds)
	assert.Equal(t, 100.0, v3.Weight(2))
	i, ok := v3.Index(changed[2])
	assert.True(t, ok)
	assert.Equal(t, 2, i)
	// Kept providers keep their statistics.
	assert.Same(t, v.Stat(0), v3.Stat(0))
}

// What a provider's URL says is read when it joins: the snapshots that keep
// it share its parsed metadata, and a fleet that names no zone keeps no
// zone per provider.
func TestSnapshotsShareWhatJoiningProvidersParsed(t *testing.T) {
	r, _ := newCounting()
	list := lbtest.Weighted("100", "200")
	v, _ := r.Lookup(list, "Say")
	assert.False(t, v.Zoned())
	assert.Equal(t, "", v.Zone(1))

	zoned := lbtest.Provider(20009, map[string]string{urlparam.ZoneKey: " east "})
	changed := []base.Invoker{list[1], zoned, list[0]}
	v2, _ := r.Lookup(changed, "Say")
	require.NotSame(t, v, v2)
	assert.Same(t, v.Meta(0), v2.Meta(2))
	assert.Same(t, v.Meta(1), v2.Meta(0))
	assert.Equal(t, 100.0, v2.Meta(1).Weight)
	assert.Equal(t, []string{"", "east", ""}, zonesOf(v2.Set))

	v3, _ := r.Lookup([]base.Invoker{zoned, list[0], lbtest.Provider(20010, nil)}, "Say")
	require.NotSame(t, v2, v3)
	assert.Same(t, v2.Meta(1), v3.Meta(0))
	assert.Equal(t, []string{"east", "", ""}, []string{v3.Zone(0), v3.Zone(1), v3.Zone(2)})
}

func TestSubsetIsARetryUntilItPersists(t *testing.T) {
	r, builds := newCounting()
	list := lbtest.N(4)
	full, _ := r.Lookup(list, "Say")
	retry := []base.Invoker{list[0], list[2], list[3]}
	for range subsetRebuild - 1 {
		v, exact := r.Lookup(retry, "Say")
		require.False(t, exact)
		assert.Same(t, full, v)
		assert.Contains(t, retry, v.PickAmong(retry, rand.Uint64()))
	}
	// A full-list call in between resets the count.
	_, exact := r.Lookup(list, "Say")
	assert.True(t, exact)
	for range subsetRebuild - 1 {
		_, exact = r.Lookup(retry, "Say")
		assert.False(t, exact)
	}
	assert.Equal(t, 1, *builds)
	// The subset on every call: the provider really left.
	v, exact := r.Lookup(retry, "Say")
	assert.True(t, exact)
	assert.Equal(t, 3, v.Len())
	assert.Equal(t, 2, *builds)
}

// Pick takes a list whose length and ends match for the snapshot's; a
// change elsewhere shows at once when the pick lands on it, and in a full
// compare within a few calls otherwise.
func TestPickConfirmsAndCatchesUp(t *testing.T) {
	r, builds := newCounting()
	slot := func(k int) PickFunc[table] { return func(*View[table], base.Invocation) int { return k } }
	list := lbtest.N(5)
	v, i, m := r.Pick(list, "Say", slot(1), nil)
	require.Equal(t, Exact, m)
	require.Equal(t, 1, i)
	require.Equal(t, 1, *builds)

	// A changed end is seen at once.
	for _, k := range []int{0, 4} {
		changed := append([]base.Invoker(nil), list...)
		changed[k] = lbtest.Provider(20100+k, nil)
		w, _, m := r.Pick(changed, "Say", slot(2), nil)
		require.Equal(t, Exact, m)
		assert.True(t, w.matches(changed), "slot %d", k)
	}
	_, _ = r.Lookup(list, "Say")
	builds0 := *builds

	// A changed middle slot: a pick elsewhere may use the old snapshot for
	// a few calls, until a full compare rebuilds.
	changed := append([]base.Invoker(nil), list...)
	changed[2] = lbtest.Provider(20102, nil)
	calls := 0
	for ; calls < 1000 && *builds == builds0; calls++ {
		_, i, m := r.Pick(append([]base.Invoker(nil), changed...), "Say", slot(1), nil)
		require.Equal(t, Exact, m)
		require.Equal(t, 1, i)
	}
	assert.Equal(t, builds0+1, *builds, "rebuilt after %d calls", calls)
	w, _, _ := r.Pick(changed, "Say", slot(1), nil)
	assert.True(t, w.matches(changed))
	assert.NotSame(t, v, w)

	// A pick that lands on the changed slot sees the change at once.
	_, _ = r.Lookup(list, "Say")
	w, i, m = r.Pick(append([]base.Invoker(nil), changed...), "Say", slot(2), nil)
	assert.Equal(t, Exact, m)
	assert.Equal(t, 2, i)
	assert.True(t, w.matches(changed))

	// A retry's subset is not exact.
	_, i, m = r.Pick(changed[:3], "Say", slot(1), nil)
	assert.Equal(t, Subset, m)
	assert.Equal(t, -1, i)
}

// Above SampleAbove providers Pick compares a list of the snapshot's
// length and ends in full only when dubbo-go's router chain generation of
// the call moves, which every change of the directory does; without one, a
// random window finds a change within a few N/sampleWindow calls.
func TestPickLongListFollowsRouterGeneration(t *testing.T) {
	r, builds := newCounting()
	r.SetInlineUpTo(math.MaxInt)
	slot := func(v *View[table], _ base.Invocation) int { return 0 }
	list := lbtest.N(SampleAbove + 100)
	gen := func(g uint64) base.Invocation {
		inv := lbtest.Call("Say")
		inv.SetAttribute(constant.RouterChainCacheGeneration, g)
		return inv
	}
	v, _, m := r.Pick(list, "Say", slot, gen(1))
	require.Equal(t, Exact, m)
	require.Equal(t, 1, *builds)
	_, _, m = r.Pick(slices.Clone(list), "Say", slot, gen(1))
	require.Equal(t, Exact, m)
	assert.Equal(t, uint64(1), v.checked.Load(), "compared in full under generation 1")

	// The directory changes a middle provider: the chain's next
	// generation is compared in full on its first call.
	changed := slices.Clone(list)
	changed[len(list)/2] = lbtest.Provider(40000, nil)
	w, _, m := r.Pick(slices.Clone(changed), "Say", slot, gen(2))
	assert.Equal(t, Exact, m)
	assert.Equal(t, 2, *builds, "rebuilt on the first call of generation 2")
	assert.True(t, w.matches(changed))

	// No generation (no router chain): the random window finds it.
	calls := 0
	for ; calls < 100*len(list)/sampleWindow && *builds == 2; calls++ {
		_, _, m = r.Pick(slices.Clone(list), "Say", slot, nil)
		require.Equal(t, Exact, m)
	}
	assert.Equal(t, 3, *builds, "rebuilt after %d calls", calls)
}

func TestPickAmongFollowsWeights(t *testing.T) {
	r, _ := newCounting()
	list := lbtest.Weighted("100", "100", "300", "100")
	v, _ := r.Lookup(list, "Say")
	sub := []base.Invoker{list[1], list[2]}
	counts := map[base.Invoker]int{}
	rng := algo.Seeded(3).Uint64
	for range 40000 {
		counts[v.PickAmong(sub, rng())]++
	}
	assert.InDelta(t, 0.75, float64(counts[list[2]])/40000, 0.015)
}

func TestAllDrainedShareEvenly(t *testing.T) {
	r, _ := newCounting()
	v, _ := r.Lookup(lbtest.Weighted("0", "0"), "Say")
	// lbtest providers are dubbo-go providers, for which 0 means unset.
	assert.Equal(t, []float64{100, 100}, v.Weights())

	list := []base.Invoker{
		lbtest.Provider(20000, map[string]string{"weight": "0", "release": "3.2.15"}),
		lbtest.Provider(20001, map[string]string{"weight": "0", "release": "3.2.15"}),
	}
	v, _ = r.Lookup(list, "Say")
	assert.Equal(t, []float64{1, 1}, v.Weights())
	assert.True(t, v.Uniform)
}

func TestWarmWeightsRefreshOnACoarseStep(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := lbtest.NewClock(start.Add(60 * time.Second))
	builds := 0
	r := NewRegistry(warmup.Options{}, clock.Now, func(*Set, *View[table]) *table { builds++; return &table{} })
	list := []base.Invoker{lbtest.Started(20000, start.Add(-time.Hour), 600*time.Second), lbtest.Started(20001, start, 600*time.Second)}

	v, _ := r.Lookup(list, "Say")
	assert.Equal(t, 100.0, v.Weight(0))
	assert.InDelta(t, 10, v.Weight(1), 1e-9, "60 s into a 600 s warmup")

	clock.Advance(50 * time.Millisecond)
	v, _ = r.Lookup(list, "Say")
	assert.InDelta(t, 10, v.Weight(1), 1e-9, "not recomputed before the step")
	assert.Equal(t, 1, builds)

	clock.Advance(60 * time.Millisecond)
	v, _ = r.Lookup(list, "Say")
	assert.InDelta(t, 10+110.0/6000, v.Weight(1), 1e-6)
	assert.Equal(t, 2, builds)

	clock.Advance(time.Hour)
	v, _ = r.Lookup(list, "Say")
	assert.Equal(t, 100.0, v.Weight(1))
	assert.Zero(t, v.refreshAt, "all warm: no more refreshes, no clock reads")
	n := builds
	_, _ = r.Lookup(list, "Say")
	assert.Equal(t, n, builds)
}

func TestMethodWeightAndServiceSeparation(t *testing.T) {
	r, _ := newCounting()
	a := lbtest.Provider(20000, map[string]string{"weight": "100", "methods.Say.weight": "300"})
	b := lbtest.Provider(20001, map[string]string{"weight": "100"})
	v, _ := r.Lookup([]base.Invoker{a, b}, "Say")
	assert.Equal(t, []float64{300, 100}, v.Weights())
	v, _ = r.Lookup([]base.Invoker{a, b}, "Other")
	assert.Equal(t, []float64{100, 100}, v.Weights())

	// The same interface in another group is another service.
	g := lbtest.Provider(20000, map[string]string{"weight": "7", "group": "blue"})
	h := lbtest.Provider(20001, map[string]string{"weight": "7", "group": "blue"})
	v, _ = r.Lookup([]base.Invoker{g, h}, "Say")
	assert.Equal(t, []float64{7, 7}, v.Weights())
	v, _ = r.Lookup([]base.Invoker{a, b}, "Say")
	assert.Equal(t, []float64{300, 100}, v.Weights())
}

// The methods of a service that see the same list share its members (the
// providers, their statistics and zones, the index), built once; each
// keeps its own statistics per method, metadata and weights. A method that
// sees another list builds members of its own, taking from the last ones
// the providers that stay.
func TestMethodsShareTheMembersOfAList(t *testing.T) {
	r, _ := newCounting()
	zone := map[string]string{"weight": "100", urlparam.ZoneKey: "az-a", "methods.Say.weight": "300"}
	list := []base.Invoker{lbtest.Provider(20000, zone), lbtest.Provider(20001, nil), lbtest.Provider(20002, nil)}
	say, _ := r.Lookup(list, "Say")
	hi, _ := r.Lookup(slices.Clone(list), "Hi") // an equal list, as each call gets
	assert.Same(t, &list[0], &say.Invokers[0], "the list itself, not a copy")
	assert.Same(t, &say.Invokers[0], &hi.Invokers[0], "one list of invokers")
	assert.Same(t, &say.providers[0], &hi.providers[0], "one array of statistics")
	assert.Same(t, &say.zones[0], &hi.zones[0], "one array of zones")
	assert.Same(t, &say.meta[0], &hi.meta[0], "one array of metadata")
	assert.Equal(t, "az-a", hi.Zone(0))
	assert.NotSame(t, say.Stat(0), hi.Stat(0), "statistics per method")
	assert.Equal(t, []float64{300, 100, 100}, say.Weights())
	assert.Equal(t, []float64{100, 100, 100}, hi.Weights())
	i, ok := hi.Index(list[2])
	assert.True(t, ok)
	assert.Equal(t, 2, i)

	// Another list: members of its own, the providers that stay kept.
	changed := []base.Invoker{list[2], list[0], lbtest.Provider(20003, nil)}
	v, exact := r.Lookup(changed, "Hi")
	require.True(t, exact)
	assert.Equal(t, changed, v.Invokers)
	assert.NotSame(t, &say.Invokers[0], &v.Invokers[0])
	assert.Same(t, say.Provider(2), v.Provider(0))
	assert.Same(t, hi.Stat(0), v.Stat(1), "a staying provider keeps its statistics")
	assert.Equal(t, []string{"", "az-a", ""}, zonesOf(v.Set))
	// The old list is still Say's own snapshot.
	v, _ = r.Lookup(list, "Say")
	assert.Same(t, say, v)
}

// Methods that read the same metadata and eject no provider share their
// metadata, warm weights and alias table; a method-level weight or an
// ejection gives a method its own, and the others keep sharing.
func TestMethodsShareWarmWeightsUnlessTheirsDiffer(t *testing.T) {
	defer lblog.Capture(func(string) {})()
	r, _ := newCounting()
	list := []base.Invoker{
		lbtest.Provider(20000, map[string]string{"weight": "100", "methods.Heavy.weight": "300"}),
		lbtest.Provider(20001, map[string]string{"weight": "200"}),
		lbtest.Provider(20002, nil),
	}
	say, _ := r.Lookup(list, "Say")
	hi, _ := r.Lookup(slices.Clone(list), "Hi")
	heavy, _ := r.Lookup(slices.Clone(list), "Heavy")
	assert.Equal(t, []float64{100, 200, 100}, say.Weights())
	assert.Same(t, say.warm, hi.warm, "one array of warm weights")
	assert.True(t, say.own == nil && hi.own == nil && &say.meta[0] == &hi.meta[0], "one array of metadata")
	assert.Same(t, say.WarmAlias(), hi.WarmAlias(), "one alias table")
	assert.Equal(t, []float64{300, 200, 100}, heavy.Weights(), "a method-level weight")
	assert.NotNil(t, heavy.own)
	assert.NotSame(t, say.Meta(0), heavy.Meta(0))
	assert.Same(t, say.Meta(1), heavy.Meta(1), "the metadata of the other providers is shared")

	// An ejection for Say: weights of its own; Hi keeps the shared ones.
	lbtest.OutlierFail(list[1], int64(time.Hour), 5)
	say, _ = r.Lookup(slices.Clone(list), "Say")
	assert.Equal(t, []float64{100, 0, 100}, say.Weights())
	again, _ := r.Lookup(slices.Clone(list), "Hi")
	assert.Same(t, hi, again)
	assert.Equal(t, []float64{100, 200, 100}, hi.Weights())

	// A new membership: Heavy keeps the metadata it parsed for the
	// provider that stays; Hi shares the new members'.
	changed := []base.Invoker{list[0], list[2], lbtest.Provider(20003, nil)}
	hi, _ = r.Lookup(changed, "Hi")
	moved, _ := r.Lookup(slices.Clone(changed), "Heavy")
	assert.Same(t, heavy.Meta(0), moved.Meta(0))
	assert.Equal(t, []float64{300, 100, 100}, moved.Weights())
	assert.Equal(t, []float64{100, 100, 100}, hi.Weights())
	assert.Same(t, say.Meta(2), hi.Meta(1), "a staying provider's metadata is parsed once")
}

// Methods that share warm weights share their refreshes: within a refresh
// step a method takes the weights another computed, after it the first
// method due computes them anew for all.
func TestMethodsShareAWarmupRefresh(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := lbtest.NewClock(start.Add(60 * time.Second))
	r := NewRegistry(warmup.Options{}, clock.Now, func(*Set, *View[table]) *table { return &table{} })
	list := []base.Invoker{lbtest.Started(20000, start.Add(-time.Hour), 600*time.Second), lbtest.Started(20001, start, 600*time.Second)}
	say, _ := r.Lookup(list, "Say")
	clock.Advance(50 * time.Millisecond)
	hi, _ := r.Lookup(slices.Clone(list), "Hi")
	assert.Same(t, say.warm, hi.warm, "within the refresh step")
	assert.InDelta(t, 10, hi.Weight(1), 1e-9)

	clock.Advance(60 * time.Millisecond)
	hi, _ = r.Lookup(slices.Clone(list), "Hi")
	say, _ = r.Lookup(slices.Clone(list), "Say")
	assert.InDelta(t, 10+110.0/6000, hi.Weight(1), 1e-6)
	assert.Same(t, say.warm, hi.warm, "refreshed once for both")
}

func TestCheckFilterSettlesOncePerMethod(t *testing.T) {
	r, _ := newCounting()
	list := lbtest.N(2)
	fired := 0
	for range 3 * MissingFilterPicks {
		v, _ := r.Lookup(list, "Uncounted")
		if v.CheckFilter() {
			fired++
			msg := MissingFilterMessage("x", v.Set, "it is random")
			assert.Contains(t, msg, "dubbo.consumer.filter")
			assert.NotContains(t, msg, "\n")
		}
	}
	assert.Equal(t, 1, fired, "told once")

	// Calls counted on one provider: never fires, even across a rebuild.
	counted := lbtest.N(3)
	v, _ := r.Lookup(counted, "Counted")
	v.Provider(1).Begin(v.Stat(1), 0).End(1, false)
	assert.False(t, v.CheckFilter())
	v, _ = r.Lookup(counted[:2], "Counted")
	for range 2 * MissingFilterPicks {
		assert.False(t, v.CheckFilter())
	}
}

// Warmup refreshes and membership changes of two methods of a service race
// (and share their members): whatever Lookup returns as exact must hold
// exactly the list it was given, for its method, whether the builds run on
// the callers or in the background.
func TestLookupExactMatchesListUnderRacingRebuilds(t *testing.T) {
	t.Run("inline", func(t *testing.T) { racingRebuilds(t, DefaultInlineUpTo) })
	t.Run("background", func(t *testing.T) { racingRebuilds(t, 0) })
}

func racingRebuilds(t *testing.T, inline int) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := lbtest.NewClock(start)
	r := NewRegistry(warmup.Options{RefreshStep: time.Nanosecond}, clock.Now,
		func(*Set, *View[table]) *table { return &table{} })
	r.SetInlineUpTo(inline)
	defer r.Wait()
	pool := []base.Invoker{
		lbtest.Started(20000, start, time.Hour), lbtest.Started(20001, start, time.Hour),
		lbtest.Started(20002, start, time.Hour), lbtest.Started(20003, start, time.Hour),
	}
	// The last two differ only in the middle, which a quick look skips.
	lists := [][]base.Invoker{pool[:2], pool[1:4], {pool[3], pool[0]}, {pool[0], pool[1], pool[3]}, {pool[0], pool[2], pool[3]}}
	var bad atomic.Int64
	var wg sync.WaitGroup
	for g := range 6 {
		method := []string{"Say", "Hi"}[g%2] // two methods, whose builds share members
		wg.Go(func() {
			for i := range 3000 {
				l := lists[(g+i)%len(lists)]
				clock.Advance(time.Microsecond) // every Lookup is due for a refresh
				if v, exact := r.Lookup(l, method); exact && !v.matches(l) {
					bad.Add(1)
				} else if j, ok := v.Index(l[0]); exact && (!ok || j != 0 || v.Method != method) {
					bad.Add(1)
				}
				// A quick look checks length and ends only.
				if v, _, m := r.find(l, method, true, nil); m == Exact && (v.Len() != len(l) || l[0] != v.Invokers[0] || l[len(l)-1] != v.Invokers[len(l)-1]) {
					bad.Add(1)
				}
				// Pick confirms the slot it returns.
				slot := func(v *View[table], _ base.Invocation) int { return (g + i) % v.Len() }
				if v, k, m := r.Pick(l, method, slot, nil); m == Exact && (v.Len() != len(l) || l[k] != v.Invokers[k]) {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, bad.Load(), "an exact view for another list")
}

// The interleaving the test above can only hope to hit: a refresh finds the
// lock held by a rebuild for another list that has already published.
func TestRefreshDuringForeignRebuildKeepsItsOwnView(t *testing.T) {
	r, _ := newCounting()
	pool := lbtest.N(4)
	mine, theirs := pool[:2], pool[1:4]
	st := r.state(mine[0].GetURL(), "Say")
	v, _ := r.Lookup(mine, "Say")

	st.mu.Lock() // a rebuild for theirs is under way...
	other := &View[table]{Set: r.newSet(theirs, "Say", nil, time.Now(), &st.outlier), Table: &table{}, watch: &st.watch}
	st.view.Store(other) // ...and has published, but not unlocked yet
	got := r.update(st, mine, "Say", v)
	st.mu.Unlock()
	assert.Same(t, v, got, "the refresh must not hand out the view of another list")
	assert.True(t, got.matches(mine))
}

// An ejected provider gets weight 0 in the snapshot, which is rebuilt when
// the outlier board's alarm moves (and only then), and its weight comes
// back when its ejection is over.
func TestEjectionRebuildsWithWeightZero(t *testing.T) {
	defer lblog.Capture(func(string) {})()
	r, builds := newCounting()
	list := lbtest.Weighted("100", "200", "100", "100")
	v, _ := r.Lookup(list, "Say")
	require.Nil(t, v.Ejected)
	assert.True(t, v.Outliers, "the consecutive-failures rule is on by default")

	now := int64(time.Hour)
	lbtest.OutlierFail(list[1], now, 5)
	v, _ = r.Lookup(slices.Clone(list), "Say")
	assert.Equal(t, 2, *builds, "the alarm rebuilds the snapshot")
	assert.Equal(t, []bool{false, true, false, false}, v.Ejected)
	assert.Equal(t, []float64{100, 0, 100, 100}, v.Weights())
	assert.Equal(t, 300.0, v.Total)
	assert.True(t, v.Uniform == false && v.IsEjected(1) && !v.IsEjected(0))
	v2, _ := r.Lookup(slices.Clone(list), "Say")
	assert.Same(t, v, v2, "no news, no rebuild")

	lbtest.OutlierSucceed(list[0], now+int64(31*time.Second))
	v, _ = r.Lookup(slices.Clone(list), "Say")
	assert.Equal(t, 3, *builds)
	assert.Nil(t, v.Ejected)
	assert.Equal(t, []float64{100, 200, 100, 100}, v.Weights())
}

// When every provider left is drained (weight 0), they share evenly; the
// ejected one stays at 0.
func TestEjectedStaysOutWhenTheRestIsDrained(t *testing.T) {
	defer lblog.Capture(func(string) {})()
	r, _ := newCounting()
	drained := map[string]string{"weight": "0", "release": "3.2.15"} // a Java provider's 0 means 0
	list := []base.Invoker{lbtest.Provider(20000, nil), lbtest.Provider(20001, drained), lbtest.Provider(20002, drained)}
	r.Lookup(list, "Say")
	lbtest.OutlierFail(list[0], int64(time.Hour), 5)
	v, _ := r.Lookup(slices.Clone(list), "Say")
	assert.Equal(t, []float64{0, 1, 1}, v.Weights())
	assert.Equal(t, 2.0, v.Total)
}

// A new membership longer than the inline limit is built once, on a
// goroutine of its own: calls that see it meanwhile do not wait, get the
// snapshot it replaces and Changed, and never start a second build.
func TestChangeBuildsOnceOffTheCallPath(t *testing.T) {
	release := make(chan struct{})
	var builds atomic.Int64
	r := NewRegistry(warmup.Options{}, nil, func(*Set, *View[table]) *table {
		if builds.Add(1) > 1 {
			<-release // the second build blocks until the test lets it go
		}
		return &table{}
	})
	r.SetInlineUpTo(0)
	list := lbtest.N(8)
	v, m := r.Find(list, "Say")
	assert.Nil(t, v, "no snapshot yet")
	assert.Equal(t, Changed, m)
	r.Wait()
	old, m := r.Find(list, "Say")
	require.Equal(t, Exact, m)
	require.True(t, old.matches(list))

	changed := slices.Clone(list)
	changed[3] = lbtest.Provider(20100, nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				v, m := r.Find(slices.Clone(changed), "Say")
				assert.Equal(t, Changed, m)
				assert.Same(t, old, v)
			}
		})
	}
	wg.Wait() // every call returned while the build is blocked
	close(release)
	r.Wait()
	v, m = r.Find(changed, "Say")
	assert.Equal(t, Exact, m)
	assert.True(t, v.matches(changed))
	assert.EqualValues(t, 2, builds.Load(), "one build per membership")
	// Lookup builds on its caller: a list is exact at once.
	v, exact := r.Lookup(list, "Say")
	assert.True(t, exact)
	assert.True(t, v.matches(list))
}

// interimShares draws picks providers of list with Interim over old
// (nil: no snapshot) and returns their shares.
func interimShares(old *Set, list []base.Invoker, picks int) []float64 {
	rng := algo.Seeded(7)
	counts := map[base.Invoker]int{}
	for range picks {
		counts[Interim(old, list, rng.Func())]++
	}
	out := make([]float64, len(list))
	for i, inv := range list {
		out[i] = float64(counts[inv]) / float64(picks)
	}
	return out
}

// weightedInterim reports whether shares, of providers weighted 100, 300,
// 0 and a newcomer, are what Interim's rejection draw gives: accepted in
// proportion to weight over at most interimDraws rounds, else the last
// uniform draw.
func weightedInterim(t *testing.T, shares []float64, picks int) bool {
	const accept = (1.0/3 + 1) / 4 // a draw of list is accepted
	miss := math.Pow(1-accept, interimDraws)
	want := []float64{(1.0 / 12) * (1 - miss) / accept, (1.0 / 4) * (1 - miss) / accept}
	want = append(want, miss/4, miss/4)
	want[0], want[1] = want[0]+miss/4, want[1]+miss/4
	ok := true
	for i, w := range want {
		if d := math.Abs(shares[i] - w); d > lbtest.Tol(w, picks)/100 {
			t.Logf("provider %d: share %.4f, want %.4f", i, shares[i], w)
			ok = false
		}
	}
	return ok
}

// Interim picks from the new list in proportion to the warm weights of
// the old snapshot; a drained provider and a newcomer get only what the
// bounded draw leaves. The control, without an old snapshot, is uniform
// and fails the same check.
func TestInterimFollowsOldWeights(t *testing.T) {
	r, _ := newCounting()
	list := lbtest.Weighted("100", "300", "100", "100")
	list[2] = lbtest.Provider(20002, map[string]string{"weight": "0", "release": "3.2.15"}) // drained
	old, _ := r.Lookup(list, "Say")
	now := []base.Invoker{list[0], list[1], list[2], lbtest.Provider(20100, nil)} // list[3] left
	const picks = 40000
	assert.True(t, weightedInterim(t, interimShares(old.Set, now, picks), picks))
	assert.False(t, weightedInterim(t, interimShares(nil, now, picks), picks), "control: uniform")
}

// Registry.hot, the cache of the states found last, gives each (service,
// method) its own snapshot however many pairs share its 256 slots: 300
// services of 3 methods each, looked up over and over in changing orders,
// are built once each, and every lookup finds its own list and method.
func TestHotStatesKeepServicesAndMethodsApart(t *testing.T) {
	r, builds := newCounting()
	methods := []string{"Say", "Hi", "Ask"}
	lists := make([][]base.Invoker, 300)
	for i := range lists {
		group := map[string]string{"group": "g" + strconv.Itoa(i)}
		lists[i] = []base.Invoker{lbtest.Provider(20000, group), lbtest.Provider(20001, group)}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 4 {
		for _, k := range rng.Perm(len(lists) * len(methods)) {
			list, method := lists[k/len(methods)], methods[k%len(methods)]
			v, exact := r.Lookup(list, method)
			require.True(t, exact)
			require.Equal(t, method, v.Method, "round %d", round)
			require.Equal(t, list, v.Invokers, "round %d", round)
		}
	}
	assert.Equal(t, len(lists)*len(methods), *builds)
	filled := 0
	for i := range r.hot {
		if r.hot[i].Load() != nil {
			filled++
		}
	}
	assert.Greater(t, filled, hotSlots/2, "the lookups fill the cache")

	// A new first provider: the state's entry follows it.
	list := []base.Invoker{lbtest.Provider(20002, map[string]string{"group": "g0"}), lists[0][1]}
	v, _ := r.Lookup(list, "Say")
	assert.Equal(t, list, v.Invokers)
	st := r.state(list[0].GetURL(), "Say")
	assert.Same(t, list[0].GetURL(), st.hot.Load().url)
	assert.Same(t, st, r.state(list[0].GetURL(), "Say"))
}

// zonesOf returns the zones of the providers of s, in order.
func zonesOf(s *Set) []string {
	z := make([]string, s.Len())
	for i := range z {
		z[i] = s.Zone(i)
	}
	return z
}

// A call may hold the list from before a change of membership, whose first
// invoker dubbo-go has since destroyed: it answers the placeholder URL of
// every destroyed invoker, which names no service. Such a list has no
// snapshot and builds none (one filed under that placeholder would stay
// for ever, nothing replacing it); the next list is built as usual.
func TestListOfADestroyedInvokerBuildsNothing(t *testing.T) {
	r, builds := newCounting()
	list := lbtest.Weighted("100", "200", "300")
	_, _ = r.Lookup(list, "Say")
	require.Equal(t, 1, *builds)
	list[0].Destroy()
	v, m := r.Find(list, "Say")
	assert.Nil(t, v)
	assert.Equal(t, Changed, m)
	v, _ = r.Lookup(list, "Say")
	assert.Nil(t, v)
	assert.Equal(t, 1, *builds)
	views := 0
	r.Range(func(*View[table]) { views++ })
	assert.Equal(t, 1, views, "the snapshot of the list from before only")

	next := []base.Invoker{list[1], list[2], lbtest.Provider(20009, nil)}
	v, exact := r.Lookup(next, "Say")
	require.True(t, exact)
	assert.Equal(t, 2, *builds)
	assert.Equal(t, 3, v.Len())
}
