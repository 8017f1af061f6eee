package sim

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// One caller, one provider without jitter: calls follow each other every
// 2 ms of virtual time, and the real filter recorded them at those times.
func TestVirtualTimeAdvancesByServiceTime(t *testing.T) {
	sc := Scenario{Name: "one", Duration: time.Second, Callers: 1,
		Providers: []Provider{{Name: "p", Latency: 2 * ms}}}
	r, err := newRun(sc, "random", Options{Bucket: 100 * ms})
	require.NoError(t, err)
	res := r.execute()

	// Completions at 2, 4, …, 998 ms: the run covers [0, 1 s), buckets
	// [start, end).
	assert.EqualValues(t, 499, res.Total.Calls)
	assert.Equal(t, 2*ms, res.Total.Mean)
	assert.Equal(t, 2*ms, res.Total.P99)
	assert.EqualValues(t, 49, res.Buckets[0].Calls, "2..98 ms")
	for _, b := range res.Buckets[1:] {
		assert.EqualValues(t, 50, b.Calls, "bucket at %v", b.Start)
	}
	st := rpcstatus.Of(r.invs[0].GetURL()).Method("SayHello")
	// The call in flight at the end is ended as failed, with the time it
	// had run.
	assert.EqualValues(t, 500, st.Total(), "the lbactive filter saw every call")
	assert.EqualValues(t, 1, st.Failed())
	assert.Equal(t, 500*2*ms, st.TotalElapsed(), "the filter measured virtual time")
	assert.EqualValues(t, 0, st.Active(), "every call ended, including the one cut by the end")
	assert.Equal(t, 2*ms, st.Window().Summary().SuccessLatency)
	ewma, ok := st.EWMA().Value(r.s.Now())
	assert.True(t, ok)
	assert.InDelta(t, float64(2*ms), float64(ewma), float64(ms)/10)
}

// A provider serving 2 calls at once, 10 ms each, with 5 callers: calls
// queue in FIFO order, throughput is capped at 2/10 ms and, by Little's
// law, the callers see 5/200 per second = 25 ms.
func TestQueueingAtCapacity(t *testing.T) {
	sc := Scenario{Name: "queue", Duration: 2 * time.Second, Callers: 5,
		Providers: []Provider{{Name: "p", Latency: 10 * ms, Capacity: 2}}}
	res, err := Run(sc, "random", Options{Bucket: 500 * ms})
	require.NoError(t, err)
	assert.LessOrEqual(t, res.Total.Calls, int64(400), "more calls than 2 slots can serve")
	assert.GreaterOrEqual(t, res.Total.Calls, int64(396))
	steady := res.Buckets[len(res.Buckets)-1]
	assert.InDelta(t, 25, float64(steady.Mean)/float64(ms), 0.5)
	assert.InDelta(t, 200, steady.QPS(), 2)
	// A lone caller would see the bare 10 ms: the wait is queueing.
	assert.Greater(t, res.Total.P99, 20*ms)
}

// Queueing is first come, first served: with one slot, three callers
// arriving together finish 10, 20 and 30 ms later.
func TestQueueIsFIFO(t *testing.T) {
	sc := Scenario{Name: "fifo", Duration: 31 * ms, Callers: 3,
		Providers: []Provider{{Name: "p", Latency: 10 * ms, Capacity: 1}}}
	res, err := Run(sc, "random", Options{Bucket: 10 * ms})
	require.NoError(t, err)
	// The first caller calls again at 10 ms and queues behind the others
	// until 40 ms: three completions, one in each bucket after the first.
	require.EqualValues(t, 3, res.Total.Calls)
	for i, want := range []int64{0, 1, 1, 1} {
		assert.EqualValues(t, want, res.Buckets[i].Calls, "bucket %d", i)
	}
	assert.Equal(t, 20*ms, res.Total.Mean)
	assert.Equal(t, 30*ms, res.Total.P99)
}

func TestLatencyStepsApplyAtServiceStart(t *testing.T) {
	p := Provider{Latency: 1 * ms, Steps: []Step{{At: time.Second, Latency: 5 * ms}, {At: 2 * time.Second, Latency: 2 * ms}}}
	assert.Equal(t, 1*ms, p.LatencyAt(999*ms))
	assert.Equal(t, 5*ms, p.LatencyAt(time.Second))
	assert.Equal(t, 2*ms, p.LatencyAt(time.Hour))

	sc := Scenario{Name: "step", Duration: 2 * time.Second, Callers: 1, Providers: []Provider{p}}
	res, err := Run(sc, "random", Options{})
	require.NoError(t, err)
	// Completions at 1..999 ms, then one at 1000 ms (started at 999 ms,
	// 1 ms long) and every 5 ms after it.
	assert.EqualValues(t, 999, res.Buckets[0].Calls)
	assert.EqualValues(t, 200, res.Buckets[1].Calls)
	assert.Equal(t, ms, res.Buckets[0].P99)
	assert.Equal(t, 5*ms, res.Buckets[1].P99)
}

// Every completed call belongs to a provider: the shares of each bucket
// add up to 100 %.
func TestSharesAddUp(t *testing.T) {
	res, err := Run(Brpc().Scale(0.1), "random", Options{Seed: 3, Bucket: 250 * ms})
	require.NoError(t, err)
	require.NotZero(t, res.Total.Calls)
	assert.Zero(t, res.Unrouted)
	assert.Zero(t, res.Panics)
	for _, b := range append(res.Buckets, res.Total) {
		var sum float64
		var n int64
		for i := range res.Providers {
			sum += b.Share(i)
			n += b.PerProvider[i]
		}
		assert.Equal(t, b.Calls, n, "bucket at %v", b.Start)
		assert.InDelta(t, 1, sum, 1e-9, "bucket at %v", b.Start)
	}
	// Random: a third each.
	for i := range res.Providers {
		assert.InDelta(t, 1.0/3, res.Total.Share(i), 0.02)
	}
}

// The simulator's own randomness is seeded: a balancer without randomness
// gives the same figures twice, and a different seed changes the jitter.
// So is the randomness of this module's balancers.
func TestSeedMakesRunsReproducible(t *testing.T) {
	sc := Capacity().Scale(0.05)
	a, err := Run(sc, "roundrobin", Options{Seed: 7, Bucket: 100 * ms})
	require.NoError(t, err)
	b, err := Run(sc, "roundrobin", Options{Seed: 7, Bucket: 100 * ms})
	require.NoError(t, err)
	c, err := Run(sc, "roundrobin", Options{Seed: 8, Bucket: 100 * ms})
	require.NoError(t, err)
	assert.Equal(t, a.Total, b.Total)
	assert.Equal(t, a.Buckets, b.Buckets)
	assert.NotEqual(t, a.Total.Mean, c.Total.Mean)
	// This module's balancers draw from a source seeded for the run too.
	a, err = Run(sc, "lalb", Options{Seed: 7, Bucket: 100 * ms})
	require.NoError(t, err)
	b, err = Run(sc, "lalb", Options{Seed: 7, Bucket: 100 * ms})
	require.NoError(t, err)
	assert.Equal(t, a.Buckets, b.Buckets)
}

// A provider that joins later is absent before and, with the warmup and
// timestamp URL parameters, warms up on the virtual wall clock: this
// module's warmrandom gives it a small share at first, dubbo-go's random
// (whose warmup never applies to registry URLs) half at once.
func TestJoinWithWarmup(t *testing.T) {
	sc := Scenario{Name: "join", Duration: 3 * time.Second, Callers: 10,
		Providers: []Provider{
			{Name: "old", Latency: ms},
			{Name: "new", Latency: ms, Join: time.Second, Warmup: 20 * time.Second},
		}}
	warm, err := Run(sc, "warmrandom", Options{})
	require.NoError(t, err)
	plain, err := Run(sc, "random", Options{})
	require.NoError(t, err)
	for _, res := range []*Result{warm, plain} {
		assert.Zero(t, res.Buckets[0].PerProvider[1], "%s: calls before joining", res.Balancer)
	}
	// Warm weight after 1–2 s of 20 s: 5–10 % of 100 against 100.
	assert.Less(t, warm.Buckets[1].Share(1), 0.12)
	assert.Greater(t, warm.Buckets[1].Share(1), 0.02)
	assert.Greater(t, warm.Buckets[2].Share(1), warm.Buckets[1].Share(1))
	assert.InDelta(t, 0.5, plain.Buckets[1].Share(1), 0.05)
}

// dubbo-go's leastactive gets the active counts its own filter would give
// it, so it prefers the faster provider instead of picking at random.
func TestDubboLeastActiveSeesCounts(t *testing.T) {
	t.Parallel()
	sc := Brpc().Scale(0.05) // 1 s, reversed at 0.5 s
	res, err := Run(sc, "leastactive", Options{Seed: 1, Bucket: 100 * ms})
	require.NoError(t, err)
	f := res.Span(0, sc.Marks[0].At)
	assert.Greater(t, f.Share(0), f.Share(2)+0.1, "1 ms provider %.2f, 3 ms provider %.2f", f.Share(0), f.Share(2))
}

func TestErrorRate(t *testing.T) {
	sc := Scenario{Name: "errors", Duration: time.Second, Callers: 4,
		Providers: []Provider{{Name: "bad", Latency: ms, ErrorRate: 0.25}}}
	r, err := newRun(sc, "random", Options{Seed: 1})
	require.NoError(t, err)
	res := r.execute()
	assert.InDelta(t, 0.25, float64(res.Total.Errors)/float64(res.Total.Calls), 0.02)
	st := rpcstatus.Of(r.invs[0].GetURL()).Method("SayHello")
	// Plus the four calls cut by the end of the run.
	assert.Equal(t, res.Total.Errors+4, st.Failed(), "the filter counted the failures")
	assert.Equal(t, res.Total.Calls+4, st.Total())
}

func TestValidate(t *testing.T) {
	good := Scenario{Name: "ok", Duration: time.Second, Callers: 1, Providers: []Provider{{Latency: ms}}}
	require.NoError(t, good.Validate())
	cases := map[string]func(s *Scenario){
		"duration":   func(s *Scenario) { s.Duration = 0 },
		"callers":    func(s *Scenario) { s.Callers = 0 },
		"jitter":     func(s *Scenario) { s.Jitter = math.NaN() },
		"providers":  func(s *Scenario) { s.Providers = nil },
		"latency":    func(s *Scenario) { s.Providers[0].Latency = 0 },
		"steps":      func(s *Scenario) { s.Providers[0].Steps = []Step{{At: 2, Latency: ms}, {At: 1, Latency: ms}} },
		"capacity":   func(s *Scenario) { s.Providers[0].Capacity = -1 },
		"error rate": func(s *Scenario) { s.Providers[0].ErrorRate = 1.5 },
		"leave":      func(s *Scenario) { s.Providers[0].Join, s.Providers[0].Leave = 2, 1 },
	}
	for name, breakIt := range cases {
		s := good
		s.Providers = []Provider{good.Providers[0]}
		breakIt(&s)
		assert.Error(t, s.Validate(), name)
		_, err := Run(s, "random", Options{})
		assert.Error(t, err, name)
	}
	_, err := Run(good, "no-such-balancer", Options{})
	assert.ErrorContains(t, err, "no-such-balancer")
	_, err = Run(good, "", Options{})
	assert.Error(t, err)
	_, err = Lookup("nope")
	assert.ErrorContains(t, err, "brpc")
}

func TestScaleKeepsLatencies(t *testing.T) {
	s := Brpc().Scale(0.5)
	assert.Equal(t, 10*time.Second, s.Duration)
	assert.Equal(t, 5*time.Second, s.Providers[0].Steps[0].At)
	assert.Equal(t, 3*ms, s.Providers[0].Steps[0].Latency)
	assert.Equal(t, 10*time.Second, Brpc().Providers[0].Steps[0].At, "the original is unchanged")
	for _, s := range append(Scenarios(), Extra()...) {
		assert.NoError(t, s.Validate(), s.Name)
	}
}

type badLB struct{ panics bool }

func (b badLB) Select([]base.Invoker, base.Invocation) base.Invoker {
	if b.panics {
		panic("boom")
	}
	return nil
}

// A balancer that panics or returns nothing is reported, and the run
// still ends.
func TestMisbehavingBalancer(t *testing.T) {
	factories["test-panics"] = func(lbenv.Env) loadbalance.LoadBalance { return badLB{panics: true} }
	factories["test-nil"] = func(lbenv.Env) loadbalance.LoadBalance { return badLB{} }
	defer delete(factories, "test-panics")
	defer delete(factories, "test-nil")
	sc := Scenario{Name: "bad", Duration: 100 * ms, Callers: 2, Providers: []Provider{{Latency: ms}, {Latency: ms}}}
	res, err := Run(sc, "test-panics", Options{})
	require.NoError(t, err)
	assert.EqualValues(t, 2*100, res.Panics, "one per caller per backoff")
	assert.Equal(t, "boom", res.FirstPanic)
	res, err = Run(sc, "test-nil", Options{})
	require.NoError(t, err)
	assert.EqualValues(t, 2*100, res.Unrouted)
	assert.Equal(t, res.Total.Calls, res.Total.Errors)
}

// zoneBalancers are the balancers of the module the zone tests run.
var zoneBalancers = []string{"warmrandom", "fewestactive", "swrr", "ringhash", "lalb", "rtadaptive", "loadaware", "shortestresponse", "adaptive"}

// zoneTest returns zoneShrink shortened for the tests: phases of 3 s, not
// ZoneShrink's 10, and 12 callers, not 24. Each phase is measured from 1 s
// after its start: about 10 300 calls after the shrink, so that 2 points
// are 4.3 binomial standard deviations of Envoy's 33 % spill. The spill is
// the zone plan's, set as soon as the membership changes; the providers
// have no capacity limit, so the number of callers changes no latency.
func zoneTest() Scenario {
	sc := zoneShrink(3 * time.Second)
	sc.Callers = 12
	return sc
}

// configuredZoneRuns holds the runs of zoneTest() with seed 1 by
// balancer: TestZoneSpillMatchesEnvoysFormula checks them and
// TestZoneSpillWithLearnedCallersMatchesEnvoysFormula compares its runs
// with them. A run is deterministic (TestSeedMakesRunsReproducible), so
// the second test reads the figures it would compute again.
var configuredZoneRuns struct {
	sync.Mutex
	m map[string]*Result
}

// configuredZoneRun returns the run of zoneTest() with balancer
// name and seed 1, running it the first time only.
func configuredZoneRun(t *testing.T, name string) *Result {
	t.Helper()
	configuredZoneRuns.Lock()
	defer configuredZoneRuns.Unlock()
	if r, ok := configuredZoneRuns.m[name]; ok {
		return r
	}
	r, err := Run(zoneTest(), name, Options{Seed: 1})
	require.NoError(t, err)
	if configuredZoneRuns.m == nil {
		configuredZoneRuns.m = map[string]*Result{}
	}
	configuredZoneRuns.m[name] = r
	return r
}

// Zone-aware routing in the zones scenario (zoneTest): every balancer of
// the module sends out of the consumer's zone the share Envoy's formula
// gives, within 2 points, before and after half of the zone leaves
// (ringhash decides per key, so its tolerance is that of its 10 000 keys);
// dubbo-go's random, which knows no zones, fails the same check (negative
// control).
func TestZoneSpillMatchesEnvoysFormula(t *testing.T) {
	sc := zoneTest()
	check := func(r *Result) error { return envoyCheck(r, &sc, 0.02) }
	for _, name := range zoneBalancers {
		r := configuredZoneRun(t, name)
		assert.NoError(t, check(r))
		phases := r.ZonePhases(&sc)
		t.Logf("%s: %.1f and %.1f %% out of the zone (Envoy %.1f and %.1f %%), %d and %d calls", name,
			100*phases[0].Cross, 100*phases[1].Cross, 100*phases[0].Envoy, 100*phases[1].Envoy, phases[0].Calls, phases[1].Calls)
		assert.Less(t, phases[0].Mean, phases[1].Mean, "%s: calls across zones cost their hop", name)
	}
	r, err := Run(sc, "random", Options{Seed: 1})
	require.NoError(t, err)
	assert.Error(t, check(r), "dubbo-go's random passed the zone check: it proves nothing")
}

// With no callers configured, the consumer remembers each zone's
// provisioned weight: after half of its zone leaves it spills Envoy's
// third within 3 points, every balancer, at the mean latency of the
// configured case within 2 %. Negative controls: dubbo-go's random, and
// the same run without memory (lb.zone.memory=0), which keeps every call
// in the half-empty zone.
func TestZoneSpillWithLearnedCallersMatchesEnvoysFormula(t *testing.T) {
	learned := zoneTest()
	learned.Zones.Learned = true
	configured := zoneTest()
	check := func(r *Result, sc *Scenario) error { return envoyCheck(r, sc, 0.03) }
	for _, name := range zoneBalancers {
		r, err := Run(learned, name, Options{Seed: 1})
		require.NoError(t, err)
		assert.NoError(t, check(r, &learned))
		t.Logf("%s: %.1f %% out of the zone after the shrink (Envoy %.1f %%)", name, 100*r.ZonePhases(&learned)[1].Cross, 100*r.ZonePhases(&learned)[1].Envoy)
		c := configuredZoneRun(t, name)
		got, want := r.ZonePhases(&learned)[1].Mean, c.ZonePhases(&configured)[1].Mean
		assert.InEpsilon(t, want, got, 0.02, "%s: mean latency after the shrink, learned against configured callers", name)
	}
	t.Run("negative_control_random", func(t *testing.T) {
		r, err := Run(learned, "random", Options{Seed: 1})
		require.NoError(t, err)
		assert.Error(t, check(r, &learned), "dubbo-go's random passed the zone check: it proves nothing")
	})
	t.Run("negative_control_no_memory", func(t *testing.T) {
		sc := learned
		sc.Params = map[string]string{"lb.zone.memory": "0"}
		r, err := Run(sc, "warmrandom", Options{Seed: 1})
		require.NoError(t, err)
		assert.Error(t, check(r, &sc), "without memory the half-empty zone kept its callers: the check proves nothing")
		t.Logf("without memory, after the shrink: %.1f %% out of the zone", 100*r.ZonePhases(&sc)[1].Cross)
	})
}

// Zone capacity counts what serves: when half of the consumer's zone fails
// every call fast while listed (ZoneFailing, no callers configured;
// ejection takes out one of the three), every balancer sends out of the
// zone Envoy's share with the failing providers unhealthy, (1 − (4.2 /
// 10.2) ÷ (6 / 12)) = 17.6 %, within 3 points, where counting the listed
// providers would keep every call at home. Negative control: dubbo-go's
// random, which knows no zones.
func TestZoneSpillWithFailingProvidersMatchesEnvoysFormula(t *testing.T) {
	sc := zoneFailing(3 * time.Second)
	check := func(r *Result) error { return envoyCheck(r, &sc, 0.03) }
	for _, name := range zoneBalancers {
		r, err := Run(sc, name, Options{Seed: 1})
		require.NoError(t, err)
		assert.NoError(t, check(r))
		t.Logf("%s: %.1f %% out of the zone while half of it fails (Envoy %.1f %%)", name, 100*r.ZonePhases(&sc)[1].Cross, 100*r.ZonePhases(&sc)[1].Envoy)
	}
	t.Run("negative_control_random", func(t *testing.T) {
		r, err := Run(sc, "random", Options{Seed: 1})
		require.NoError(t, err)
		assert.Error(t, check(r), "dubbo-go's random passed the zone check: it proves nothing")
	})
}

// envoyCheck returns an error unless, in every phase of the zone scenario
// sc, the share of r's calls out of the consumer's zone is Envoy's within
// tol; for ringhash, which spills a sample of its keys, within 4.5
// binomial standard deviations of the keys.
func envoyCheck(r *Result, sc *Scenario, tol float64) error {
	for _, ph := range r.ZonePhases(sc) {
		tol := tol
		if r.Balancer == "ringhash" {
			tol = 4.5 * math.Sqrt(ph.Envoy*(1-ph.Envoy)/float64(sc.Keys))
		}
		if math.Abs(ph.Cross-ph.Envoy) > tol {
			return fmt.Errorf("%s, %v-%v: %.1f%% of the calls left %s, Envoy's formula %.1f%% ± %.1f",
				r.Balancer, ph.Start, ph.End, 100*ph.Cross, sc.Zones.Local, 100*ph.Envoy, 100*tol)
		}
	}
	return nil
}
