package sim

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// alikeSubsets is 12 alike 2 ms providers without a capacity limit, 48
// callers over 16 consumers (3 each) holding subsets of 4: every consumer
// completes calls at the same rate, so a latency-blind balancer gives each
// provider its holders' shares.
func alikeSubsets(rendezvous bool) Scenario {
	return Scenario{
		Name: "alike-subsets", Duration: 200 * time.Millisecond, Callers: 48, Consumers: BrpcConsumers,
		Keys: DefaultKeys, Jitter: 0.05,
		Providers: alike(12, Provider{Latency: 2 * ms}),
		Subset:    Subset{Size: WideSubsetSize, Rendezvous: rendezvous},
	}
}

// fairBoundMiss returns how far beyond aperture's bound on its share, in
// units of its tolerance, the furthest provider lies (≤ 1: every provider
// within the bound and its tolerance). With n alike providers, N consumers and subsets of size, a
// provider has ⌊m⌋ or ⌈m⌉ holders, m = N·size/n (internal/subset's
// DESIGN.md), each giving it 1/size of its calls: its share of the calls is
// within [⌊m⌋/m, ⌈m⌉/m] of the fair 1/n, give or take five binomial
// standard deviations of the run's calls.
func fairBoundMiss(r *Result, sc *Scenario) float64 {
	n := float64(len(sc.Providers))
	m := float64(sc.Consumers*sc.Subset.Size) / n
	lo, hi := math.Floor(m)/m/n, math.Ceil(m)/m/n
	miss := math.Inf(-1)
	for i := range sc.Providers {
		s := r.Total.Share(i)
		tol := 5 * math.Sqrt(s*(1-s)/float64(r.Total.Calls))
		miss = max(miss, (lo-s)/tol, (s-hi)/tol)
	}
	return miss
}

// Over aperture subsets every consumer holds its size, every provider is
// held, and each provider's share of the calls lies within aperture's bound
// around its fair share (fairBoundMiss: 0.94 to 1.13 of it here) under a
// latency-blind balancer, and matches exactly the share its holders give
// it. Negative control: rendezvous subsets (holders drawn at random) in the
// same deployment miss the bound.
func TestApertureSubsetsGiveEveryProviderItsFairShare(t *testing.T) {
	t.Parallel()
	sc := alikeSubsets(false)
	r := mustRun(t, sc, "warmrandom")
	require.Len(t, r.Subsets, BrpcConsumers)
	holders := make([]float64, len(sc.Providers)) // each provider's expected share
	for k, held := range r.Subsets {
		assert.Len(t, held, WideSubsetSize, "consumer %d", k)
		for _, i := range held {
			holders[i] += 1 / float64(len(held)) / float64(BrpcConsumers)
		}
	}
	for i, want := range holders {
		got := r.Total.Share(i)
		assert.InDelta(t, want, got, 5*math.Sqrt(want*(1-want)/float64(r.Total.Calls)), "provider %d: share %.4f, its holders give it %.4f", i, got, want)
	}
	miss := fairBoundMiss(r, &sc)
	t.Logf("aperture: %d calls, furthest provider %.2f tolerances beyond the bound (≤ 1: within it), max/mean %.3f", r.Total.Calls, miss, r.Spread(&sc))
	assert.LessOrEqual(t, miss, 1.0, "a provider's share is outside aperture's bound")

	t.Run("negative_control_rendezvous", func(t *testing.T) {
		sc := alikeSubsets(true)
		r := mustRun(t, sc, "warmrandom")
		miss := fairBoundMiss(r, &sc)
		t.Logf("rendezvous: furthest provider %.2f tolerances from the bound, max/mean %.3f", miss, r.Spread(&sc))
		assert.Greater(t, miss, 1.0, "rendezvous subsets kept every provider within aperture's bound: the check proves nothing")
	})
}

// In the capacity scenario on 12 providers with 16 consumers
// (CapacityWide, shortened to 100 ms), the balancers that read load
// (fewestactive: calls in flight; loadaware: latency and counts) serve at
// least 90 % of their own throughput over the full set and at least 85 % of
// the capacity bound over aperture subsets of 4. Measured (seed 1): 97 and
// 107 % of the full set's, 96 and 95 % of the bound (97 and 98 % in a 4 s
// run), so each bar has a margin of at least 7 points. The bars separate
// balancers that fill each subset's slots from those that do not: dubbo-go's
// random over the same subsets (negative control) serves 61 % of the bound.
// (Its ratio to its own full set is above 100 %, as the consumers whose
// subsets queue less make more calls, so the ratio alone is no control.)
// lalb is left to the table (docs/benchmarks.md): in so short a run it is
// still learning, over the full set as over subsets.
func TestAdaptiveBalancersKeepTheirThroughputOverSubsets(t *testing.T) {
	t.Parallel()
	full := CapacityWide().Scale(0.01)
	sub := CapacityWideSubsets(false).Scale(0.01)
	bound := full.Bound()
	for _, name := range []string{"fewestactive", "loadaware"} {
		t.Run(name, func(t *testing.T) {
			f, s := mustRun(t, full, name), mustRun(t, sub, name)
			t.Logf("%s: %.1f %% of the bound over the full set, %.1f %% over subsets (%.1f %% of the full set's)", name,
				100*f.Total.QPS()/bound, 100*s.Total.QPS()/bound, 100*s.Total.QPS()/f.Total.QPS())
			assert.GreaterOrEqual(t, s.Total.QPS(), 0.85*bound, "%s over subsets: share of the capacity bound", name)
			assert.GreaterOrEqual(t, s.Total.QPS(), 0.9*f.Total.QPS(), "%s over subsets: share of its full-set throughput", name)
		})
	}
	t.Run("negative_control_random", func(t *testing.T) {
		r := mustRun(t, sub, "random")
		t.Logf("random over subsets: %.1f %% of the bound", 100*r.Total.QPS()/bound)
		assert.Less(t, r.Total.QPS(), 0.85*bound, "dubbo-go's random over subsets reached 85 %% of the bound: the check proves nothing")
	})
}

// brpc's experiment on 12 providers with 16 consumers (BrpcWide with half
// its callers, 100, reversed at 0.4 s and run to 1.4 s), over aperture and
// over rendezvous subsets of 4: lalb (weights of throughput over latency)
// and rtadaptive (two choices over a peak-EWMA latency cost, loadaware's
// where nothing is reported) still follow the reversal and keep their
// advantage over dubbo-go's random over the same subsets, against their
// own figures over the full set.
//
//   - Follows: followTime from the fastest before the reversal to the
//     fastest after, over a floor above the share random gives the new
//     fastest over the same subsets (blindFloor). Over rendezvous subsets
//     that share is about 39 %, and FollowTime's own floor of 40 % lets random
//     "follow" there (the table's 0.0 s). The balancer must hold the new
//     fastest for at least half as long as over the full set: follow
//     within its full-set time plus half of what is left of the run.
//   - Keeps its advantage: its throughput over random's over the same
//     subsets gains at least half of what it gains over the full set (a
//     closed loop: the callers over the throughput is the mean latency).
//
// Both tolerances come from the run's own calls: followTime lets each
// 100 ms bucket (about 6 000 calls) pass four binomial standard deviations
// of its calls below its need, and blindFloor sets the floor eight of
// random's above its share.
//
// Measured (seeds 1 to 5): lalb follows in 0.6 or 0.7 s over the full set
// and in 0.6 or 0.7 s over subsets (bound 0.8 or 0.85 s), rtadaptive in
// 0.2 s and 0 to 0.1 s (bound 0.6 s); lalb gains 15 to 21 % over random
// over the full set, 21 to 30 % over subsets, rtadaptive 20 to 21 % and
// 22 to 25 %. Negative control: this module's warmrandom, blind to latency
// as random is, over the same subsets never follows over the floor and
// gains -0.2 to +0.5 %, below the smaller bar (7.6 to 10.3 %). The run is
// as short as lalb's follow time allows (0.1 to 0.25 s of margin on its
// bound, 0.15 s with seed 1), and has half of BrpcWide's callers: it costs
// its calls, half a minute of CPU under the race detector with 100
// callers, a minute with 200. Virtual time and relative bars: a busy
// machine changes nothing.
func TestLatencyAwareBalancersFollowTheReversalOverSubsets(t *testing.T) {
	t.Parallel()
	sets := SubsetComparisons()[0] // brpc-wide: full set, aperture, rendezvous
	for k := range sets {
		sets[k] = sets[k].Scale(0.04) // reversed at 0.4 s
		sets[k].Duration = 1400 * ms
		sets[k].Callers /= 2 // 100: see above
	}
	rev, end := sets[0].Marks[0].At, sets[0].Duration
	slow, fast := sets[0].Fastest(rev-1), sets[0].Fastest(rev)
	random := make([]*Result, len(sets))
	floors := make([]float64, len(sets))
	for k, sc := range sets {
		random[k] = mustRun(t, sc, "random")
		floors[k] = blindFloor(random[k], rev, end, fast)
		t.Logf("random, %s: %.1f %% to the new fastest after the reversal, floor %.3f", sc.Name, 100*random[k].Span(rev, end).share(fast), floors[k])
	}
	bar := math.Inf(1) // the least gain a balancer must keep over subsets
	for _, name := range []string{"lalb", "rtadaptive"} {
		full := mustRun(t, sets[0], name)
		fFull := full.FollowTime(rev, slow, fast)
		gainFull := full.Total.QPS()/random[0].Total.QPS() - 1
		t.Logf("%s, full set: follows in %v, %.0f calls/s (%+.1f %% over random), mean %v", name, fFull, full.Total.QPS(), 100*gainFull, full.Total.Mean)
		require.GreaterOrEqual(t, fFull, time.Duration(0), "%s never follows over the full set", name)
		require.Greater(t, gainFull, 0.0, "%s gains nothing over random over the full set", name)
		bar = min(bar, gainFull/2)
		for k, sc := range sets[1:] {
			r := mustRun(t, sc, name)
			f := r.followTime(rev, slow, fast, floors[k+1])
			gain := r.Total.QPS()/random[k+1].Total.QPS() - 1
			t.Logf("%s, %s: follows in %v above %.3f (within %v), %.0f calls/s (%+.1f %% over random), mean %v", name, sc.Name,
				f, floors[k+1], fFull+(end-rev-fFull)/2, r.Total.QPS(), 100*gain, r.Total.Mean)
			if assert.GreaterOrEqual(t, f, time.Duration(0), "%s never follows over %s", name, sc.Name) {
				assert.GreaterOrEqual(t, end-rev-f, (end-rev-fFull)/2, "%s over %s holds the new fastest for less than half as long as over the full set", name, sc.Name)
			}
			assert.GreaterOrEqual(t, gain, gainFull/2, "%s over %s keeps less than half its gain over random", name, sc.Name)
		}
	}
	t.Run("negative_control_warmrandom", func(t *testing.T) {
		for k, sc := range sets[1:] {
			r := mustRun(t, sc, "warmrandom")
			gain := r.Total.QPS()/random[k+1].Total.QPS() - 1
			t.Logf("warmrandom, %s: follows in %v above %.3f (%v above 40 %%), %+.1f %% over random", sc.Name,
				r.followTime(rev, slow, fast, floors[k+1]), floors[k+1], r.FollowTime(rev, slow, fast), 100*gain)
			assert.Equal(t, time.Duration(-1), r.followTime(rev, slow, fast, floors[k+1]), "warmrandom follows over %s: the check proves nothing", sc.Name)
			assert.Less(t, gain, bar, "warmrandom over %s gains as much over random as the balancers must: the check proves nothing", sc.Name)
		}
	})
}

// blindFloor returns a floor for followTime from r, the run of a balancer
// blind to latency: the share it gave fast from rev to end, plus eight
// binomial standard deviations of its smallest bucket there, at least
// FollowTime's 40 %. followTime lets a bucket pass four standard
// deviations below its need, so that a blind balancer's bucket passes
// only four above its mean.
func blindFloor(r *Result, rev, end time.Duration, fast []int) float64 {
	s := r.Span(rev, end).share(fast)
	n := int64(math.MaxInt64)
	for _, b := range r.Buckets {
		if b.Start >= rev {
			n = min(n, b.Calls)
		}
	}
	return max(0.4, s+8*math.Sqrt(s*(1-s)/float64(max(n, 1))))
}
