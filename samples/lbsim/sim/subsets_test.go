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
