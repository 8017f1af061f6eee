package lalb

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

var _ loadbalance.LoadBalance = (*Balancer)(nil)

// brpcExperiment runs brpc's lalb.md experiment through the Balancer:
// servers sleeping 1, 2 and 3 ms, 50 callers, latencies reversed at 2 s.
// It returns the driver and how long after the reversal the new fastest
// first had 90 % of the picks of a 10 ms bucket (-1: never).
func brpcExperiment(t testing.TB, hook bool) (*driver, time.Duration) {
	d := newDriver(t, Options{}, 2, 10*ms,
		switching(1*ms, 3*ms, 2*sec),
		switching(2*ms, 2*ms, 2*sec),
		switching(3*ms, 1*ms, 2*sec))
	d.hook = hook
	d.Run(50, 4*sec)
	for b := 2 * sec; b < 4*sec; b += 10 * ms {
		if d.Share(2, b, b+10*ms) >= 0.9 {
			return d, b - 2*sec
		}
	}
	return d, -1
}

func TestTrafficMovesToTheFasterProvider(t *testing.T) {
	d, converge := brpcExperiment(t, false)
	assert.GreaterOrEqual(t, d.Share(0, 1*sec, 2*sec), 0.9, "before the reversal the 1 ms provider leads")
	assert.GreaterOrEqual(t, d.Share(2, 3*sec, 4*sec), 0.9, "after it the new 1 ms provider leads")
	assert.Positive(t, d.Share(1, 3*sec, 4*sec), "the others keep a probe share")
	assert.True(t, converge >= 0 && converge < 500*ms, "90 %% of the traffic on the new fastest after %v", converge)
	before, _ := d.Throughput(1*sec, 2*sec)
	after, _ := d.Throughput(2*sec, 3*sec)
	assert.Greater(t, after, 0.8*before, "throughput in the second after the reversal")
	t.Logf("throughput %.0f/s before, %.0f/s in the first second after; 90%% on the new fastest after %v", before, after, converge)
}

// TestFeedbackOnPickMatchesCompletionHook backs the feedback design: the
// same experiment with the weights also refreshed on every completion (what
// a completion hook in rpcstatus would give) converges no better than the
// pick-side refresh alone.
func TestFeedbackOnPickMatchesCompletionHook(t *testing.T) {
	pickOnly, cPick := brpcExperiment(t, false)
	hooked, cHook := brpcExperiment(t, true)
	qPick, lPick := pickOnly.Throughput(2*sec, 4*sec)
	qHook, lHook := hooked.Throughput(2*sec, 4*sec)
	t.Logf("pick-side refresh: 90%% after %v, %.0f/s at %v; with completion hook: 90%% after %v, %.0f/s at %v",
		cPick, qPick, lPick, cHook, qHook, lHook)
	require.True(t, cPick >= 0 && cHook >= 0)
	assert.LessOrEqual(t, cPick, 2*cHook+100*ms, "pick-side refresh converges about as fast")
	assert.Greater(t, qPick, 0.9*qHook)
}

// feed is lbtest.Feed.
var feed = lbtest.Feed

// TestInflightPenaltyWhenCallsHang: the faster of two providers stops
// answering (its calls fail at a 500 ms timeout) under 10 000 calls/s. The
// pick-side refresh sees its calls in flight age and takes its traffic away
// within about 100 ms, long before the first timeout comes back.
func TestInflightPenaltyWhenCallsHang(t *testing.T) {
	// From 2 s, when it had most of the traffic, or from the start: then
	// it never had a sample of its own and is judged against the other's
	// latency.
	for _, at := range []time.Duration{2 * sec, 0} {
		run := func(o Tuning) float64 {
			d := newDriver(t, Options{Tuning: o}, 3, 10*ms, hanging(at, 500*ms), fixed(2*ms))
			defer d.Stop() // its hung calls are goroutines
			from := max(at, time.Duration(d.Now()))
			d.RunOpen(10_000, from+300*ms)
			return d.Share(0, from+100*ms, from+300*ms)
		}
		on := run(Tuning{})
		off := run(Tuning{PunishInflightRatio: 1e12}) // penalty off
		t.Logf("hung from %v: its share from 100 to 300 ms later: %.3f with the in-flight penalty, %.3f without", at, on, off)
		assert.Greater(t, off, 0.3, "without the penalty it keeps its traffic until the timeouts")
		assert.Less(t, on, 0.06, "the penalty takes the traffic away")
		assert.Greater(t, on, 0.003, "but it is still probed")
	}
}

// A provider without samples of its own (a newcomer) whose calls hang is
// punished too, against the latency of the others: brpc keeps giving such
// a server the average weight until its calls time out.
func TestInflightPenaltyOnNewcomer(t *testing.T) {
	var clock atomic.Int64
	clock.Store(int64(10 * sec))
	b := New(Options{Env: lbenv.Env{Now: clock.Load, Rand: algo.Seeded(3).Uint64}})
	list := lbtest.N(3)
	for _, p := range list[:2] {
		feed(p, int64(9*sec), 128, ms, false)
	}
	w := b.weights(list, "Say")
	assert.InDelta(t, float64(w[0]+w[1])/2, float64(w[2]), float64(w[0])*0.02, "a newcomer starts at the average")

	pr := rpcstatus.Of(list[2].GetURL())
	for range 5 {
		pr.Begin(pr.Method("Say"), clock.Load())
	}
	clock.Add(int64(100 * ms)) // 100 × the others' latency
	lbtest.Counts(b, list, lbtest.Call("Say"), 200)
	w = b.weights(list, "Say")
	assert.Less(t, float64(w[2]), 0.05*float64(w[0]), "hanging newcomer: %v", w)
	assert.Positive(t, w[2])
}

// TestFailingProviderKeepsProbeShare: a provider whose calls all fail keeps
// about MinShare of the traffic, and wins back a fair part once it recovers.
func TestFailingProviderKeepsProbeShare(t *testing.T) {
	for _, charge := range []bool{false, true} {
		d := newDriver(t, Options{ChargeTimeout: charge}, 4, 100*ms, queued(ms, 4), queued(ms, 4), failingUntil(3*sec))
		lbtest.EjectionOff(d.List...) // LALB's own response to errors
		d.Run(20, 8*sec)
		got := d.Share(2, 1*sec, 3*sec)
		assert.True(t, got > 0.003 && got < 0.03, "charge timeout %v: failing provider has %.4f of the traffic, want about %.2f", charge, got, defaultMinShare)
		back := d.Share(2, 7*sec, 8*sec)
		assert.Greater(t, back, 0.15, "charge timeout %v: 4 s after recovering", charge)
		t.Logf("charge timeout %v: share while failing %.4f, 4 s after recovery %.3f", charge, got, back)
	}
}

// TestNewProviderWarmsUpToItsFairShare: a provider with a 10 s warmup joins
// two warm ones at 2 s. It starts at the average weight times its warm
// fraction, follows the warmup ramp, and ends with a fair share of the
// traffic. With servers whose latency grows with load (queued) and with
// servers whose latency does not (fixed), where LALB's own weights are
// neutral and only the warmup can move the newcomer's share up.
func TestNewProviderWarmsUpToItsFairShare(t *testing.T) {
	for _, c := range []struct {
		name   string
		server func() server
	}{
		{"queued", func() server { return queued(ms, 4) }},
		{"fixed", func() server { return fixed(ms) }},
	} {
		d := newDriver(t, Options{}, 5, 100*ms, c.server(), c.server())
		d.Run(20, 2*sec)
		joined := d.startedAt(2*sec, 10*sec, c.server())
		d.List = append(append([]base.Invoker(nil), d.List...), joined)
		w := d.weights()
		warm := 0.01 // Dubbo's floor: one weight unit of 100 at uptime 0
		avg := float64(w[0]+w[1]) / 2
		want := max(warm*avg, float64(floorWeight(w[0]+w[1]+w[2], 3, Tuning{}.withDefaults())))
		assert.InDelta(t, want, float64(w[2]), 0.01*avg, "%s: joins at warm × average (or the floor): %v", c.name, w)

		d.Run(20, 16*sec)
		early := d.Share(2, 3*sec, 4*sec)  // warm 0.1-0.2: ramp share 0.05-0.09
		mid := d.Share(2, 6*sec, 7*sec)    // warm 0.4-0.5: ramp share 0.17-0.2
		late := d.Share(2, 14*sec, 16*sec) // warm
		t.Logf("%s: newcomer's share: %.3f at 10-20 %% warm, %.3f at 40-50 %%, %.3f when warm", c.name, early, mid, late)
		assert.True(t, early > 0.03 && early < 0.12, "%s: near the ramp early: %.3f", c.name, early)
		assert.True(t, mid > 0.12 && mid < 0.25, "%s: near the ramp half way: %.3f", c.name, mid)
		if c.name == "queued" {
			// (Once warm, with fixed latencies LALB is neutral: any split
			// between equally fast providers is stable, so it drifts.)
			assert.InDelta(t, 1.0/3, late, 0.1, "%s: fair share once warm", c.name)
		}
	}
}

// TestRemoveHalfAtOnce: removing every other provider of 64 at once leaves
// a consistent tree that keeps what it learned about the others.
func TestRemoveHalfAtOnce(t *testing.T) {
	servers := make([]server, 64)
	for i := range servers {
		servers[i] = fixed(time.Duration(1+i%4) * ms)
	}
	d := newDriver(t, Options{}, 6, 100*ms, servers...)
	d.Run(64, sec)
	before := d.weights()

	var kept []base.Invoker
	var want []int64
	for i, p := range d.List {
		if i%2 == 0 {
			kept = append(kept, p)
			want = append(want, before[i])
		}
	}
	d.List = kept
	// A subset is a failover retry until it is seen on consecutive calls.
	var v *member.View[table]
	exact := false
	for k := 0; k < 100 && !exact; k++ {
		require.Contains(t, kept, d.b.Select(kept, lbtest.Call("Say")))
		v, exact = d.b.sk.View(kept, "Say")
	}
	require.True(t, exact, "the subset became the membership")
	require.Equal(t, 32, v.Len())
	checkTree(t, v.Table.tree)
	got := d.b.weights(kept, "Say")
	floor := floorWeight(v.Table.tree.Total(), 32, Tuning{}.withDefaults())
	for i := range got {
		if want[i] > 3*floor {
			assert.InDelta(t, 1, float64(got[i])/float64(want[i]), 0.05, "provider %d kept its weight", 2*i)
		}
	}
	d.Run(64, 2*sec) // the driver panics on a pick outside the list
	checkTree(t, v.Table.tree)
}

// checkTree asserts that the sums of tr match its leaves and that every
// leaf is positive.
func checkTree(t *testing.T, tr *weightTree) {
	t.Helper()
	var s int64
	for i, w := range tr.Weights(nil) {
		assert.Positive(t, w, "leaf %d", i)
		s += w
	}
	assert.Equal(t, s, tr.Total(), "sum of the leaves")
	checkSums(t, tr)
}

// TestFailoverSubset: a retry's subset is served from the same tree, in
// proportion to its weights, so a retry avoids a failing provider.
func TestFailoverSubset(t *testing.T) {
	var clock atomic.Int64
	clock.Store(int64(10 * sec))
	b := New(Options{Env: lbenv.Env{Now: clock.Load, Rand: algo.Seeded(2).Uint64}})
	list := lbtest.N(4)
	feed(list[0], int64(9*sec), 128, ms, true)
	lbtest.FeedAll(list[1:], int64(9*sec), 128, ms)
	share := lbtest.RetryShare(t, b, list, []base.Invoker{list[0], list[1]})
	assert.Less(t, share, 0.1, "the bad provider's share of the retries")
}

// Selectors, feedback and membership changes race (run with -race).
func TestConcurrentSelectFeedbackAndMembership(t *testing.T) {
	b := New(Options{})
	last := lbtest.ChurnPaced(t, lbtest.N(16), func(g, i int, l []base.Invoker) base.Invoker {
		got := b.Select(l, lbtest.Call("Say"))
		if got == nil {
			return nil // ChurnPaced reports it
		}
		p := rpcstatus.Of(got.GetURL())
		now := rpcstatus.Nanotime()
		p.Begin(p.Method("Say"), now).End(now+int64(g+1)*int64(ms), i%50 == 0)
		return got
	})
	for range 20 { // past the failover-subset allowance
		b.Select(last, lbtest.Call("Say"))
	}
	v, exact := b.sk.View(last, "Say")
	require.True(t, exact)
	checkTree(t, v.Table.tree)
}

func TestBadInput(t *testing.T) {
	b := New(Options{Tuning: Tuning{P: math.NaN(), Scale: -1, MinShare: 5, PunishErrorRatio: math.Inf(1), MinSamples: -3}, Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	assert.Equal(t, Tuning{}.withDefaults(), b.opts, "invalid options fall back to the defaults")
	inv := lbtest.Call("Say")
	assert.Empty(t, b.weights(nil, "Say"))
	// Static weights do not skew LALB: the latencies decide.
	const picks = 4_000
	got := lbtest.Shares(b, lbtest.Weighted("1", "9"), inv, picks)
	assert.InDelta(t, 50, got[0], lbtest.Tol(0.5, picks), "weights 1 and 9: %v", got)
}

// TestRefreshRates backs pickRefreshMask and otherRefreshMask: refreshing
// the picked provider on 1 pick in 4 and a random one on 1 in 8 loses no
// information (a refresh reads every completion since the last one) and,
// measured here over a few seeds, converges as fast and sends about as few
// calls to a hung provider as refreshing both on every pick, for about a
// third of the cost per pick. Run with -v to see the numbers.
func TestRefreshRates(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	type result struct {
		converge    time.Duration // brpc experiment: new fastest at 90 % of a 10 ms bucket
		hungBusy    int64         // calls to a provider in the 300 ms after it hangs, 10 000/s
		hungQuiet   int64         // the same in 2 s at 200/s
		refreshCost float64       // refreshes per pick
	}
	measure := func(pick, other uint64) (r result) {
		const seeds = 4
		set := func(d *driver) { d.b.pickMask, d.b.otherMask = pick, other }
		for seed := range uint64(seeds) {
			d := newDriver(t, Options{}, seed, 10*ms,
				switching(1*ms, 3*ms, 2*sec), switching(2*ms, 2*ms, 2*sec), switching(3*ms, 1*ms, 2*sec))
			set(d)
			d.Run(50, 3*sec)
			c := sec
			for b := 2 * sec; b < 3*sec; b += 10 * ms {
				if d.Share(2, b, b+10*ms) >= 0.9 {
					c = b - 2*sec
					break
				}
			}
			r.converge += c / seeds
			for _, load := range []struct {
				rate float64
				span time.Duration
				dst  *int64
			}{{10_000, 300 * ms, &r.hungBusy}, {200, 2 * sec, &r.hungQuiet}} {
				d = newDriver(t, Options{}, seed, 10*ms, hanging(2*sec, time.Hour), fixed(2*ms))
				set(d)
				d.RunOpen(load.rate, 2*sec+load.span)
				*load.dst += d.Picked(0, 2*sec, 2*sec+load.span) / seeds
				d.Stop() // its hung calls are goroutines
			}
		}
		r.refreshCost = 1/float64(pick+1) + 1/float64(other+1)
		return r
	}
	every := measure(0, 0)
	chosen := measure(pickRefreshMask, otherRefreshMask)
	for _, c := range []struct {
		name string
		r    result
	}{{"both on every pick", every}, {"chosen rates", chosen}} {
		t.Logf("%-18s: %.3f refreshes per pick; 90%% on the new fastest after %v; calls to a hung provider: %d in 300 ms at 10 000/s, %d in 2 s at 200/s",
			c.name, c.r.refreshCost, c.r.converge, c.r.hungBusy, c.r.hungQuiet)
	}
	assert.LessOrEqual(t, chosen.converge, every.converge*3/2+50*ms)
	assert.LessOrEqual(t, chosen.hungBusy, every.hungBusy*3/2+50)
	assert.LessOrEqual(t, chosen.hungQuiet, every.hungQuiet*2+10)
}

// TestChargeTimeout: with ChargeTimeout an error costs at least the
// method's timeout from the provider URL; by default 1.2 × its latency.
func TestChargeTimeout(t *testing.T) {
	for _, charge := range []bool{false, true} {
		var clock atomic.Int64
		clock.Store(int64(10 * sec))
		b := New(Options{ChargeTimeout: charge, Env: lbenv.Env{Now: clock.Load}})
		list := []base.Invoker{
			lbtest.Provider(20000, map[string]string{"timeout": "3s", "methods.Say.timeout": "1s"}),
			lbtest.Provider(20001, nil),
		}
		for _, p := range list {
			feed(p, int64(9*sec), 127, 10*ms, false)
		}
		feed(list[0], int64(9*sec)+int64(127*ms), 1, 10*ms, true) // one error in 128
		feed(list[1], int64(9*sec)+int64(127*ms), 1, 10*ms, false)
		w := b.weights(list, "Say")
		ratio := float64(w[0]) / float64(w[1])
		if charge {
			// latency 10 ms + 1 s spread over 127 successes: 0.55 of the weight.
			assert.InDelta(t, 127.0/128*10/(10+1000.0/127), ratio, 0.02, "charged the 1 s method timeout: %v", w)
		} else {
			assert.InDelta(t, 127.0/128*10/(10+12.0/127), ratio, 0.02, "charged 1.2 × 10 ms: %v", w)
		}
	}
}

// A provider that fails fast never looks better: its errors cut its weight
// to the floor, so it gets no more than its probe share.
func TestFastFailureNeverLooksBetter(t *testing.T) {
	share := lbtest.FastFailureShare(t, func(env lbenv.Env) loadbalance.LoadBalance {
		return New(Options{Env: env})
	})
	t.Logf("fast-failing provider's share: %.4f", share)
	assert.Less(t, share, 2*defaultMinShare)
}

// weights returns the tree weight of each provider of invokers for method
// (0 for one the balancer does not know), building a snapshot if needed.
func (b *Balancer) weights(invokers []base.Invoker, method string) []int64 {
	out := make([]int64, len(invokers))
	if len(invokers) == 0 {
		return out
	}
	v, _ := b.sk.View(invokers, method)
	if v == nil {
		return out
	}
	for k, inv := range invokers {
		if i, ok := v.Index(inv); ok {
			out[k] = v.Table.tree.Weight(i)
		}
	}
	return out
}
