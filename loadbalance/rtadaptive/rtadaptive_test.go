package rtadaptive

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// feed is lbtest.Feed.
var feed = lbtest.Feed

func TestCosts(t *testing.T) {
	known := func(rtt time.Duration, inflight int64) providerEstimate {
		return providerEstimate{RTT: rtt, Known: true, Inflight: inflight, ErrorCost: sec}
	}
	// Peak-EWMA cost: RTT × (in flight + 1).
	a, b := pairCosts(known(2*ms, 0), known(1*ms, 3), 0)
	assert.Equal(t, float64(2*ms), a)
	assert.Equal(t, float64(4*ms), b)

	// Errors count as taking at least the timeout: half the calls failing
	// with a 1 s timeout cost half a second.
	failing := known(ms, 0)
	failing.ErrorRatio = 0.5
	assert.InDelta(t, float64(ms)+0.5*float64(sec-ms), failing.charged(), 1)
	failing.ErrorRatio = 1
	assert.Equal(t, float64(sec), failing.charged())
	// An error costs no less than the RTT when the RTT is above the timeout.
	slow := known(2*sec, 0)
	slow.ErrorRatio = 1
	assert.Equal(t, float64(2*sec), slow.charged())

	// A provider without samples borrows the plain RTT of its peer, not
	// its error charge: against a failing peer it wins, against a healthy
	// one the calls in flight decide.
	unknown := providerEstimate{}
	a, b = pairCosts(unknown, failing, 0)
	assert.Less(t, a, b)
	a, b = pairCosts(unknown, known(5*ms, 0), 0)
	assert.Equal(t, a, b)
	a, b = pairCosts(providerEstimate{Inflight: 1}, known(5*ms, 0), 0)
	assert.Greater(t, a, b)
	// Neither has samples: the calls in flight decide.
	a, b = pairCosts(providerEstimate{Inflight: 2}, providerEstimate{Inflight: 1}, 0)
	assert.Greater(t, a, b)
	// A configured default.
	a, _ = pairCosts(unknown, known(5*ms, 0), 7*ms)
	assert.Equal(t, float64(7*ms), a)

	// Never 0, never NaN: no herding onto a zero estimate.
	for _, e := range []providerEstimate{
		{Known: true},
		{Known: true, RTT: -ms, Inflight: -4},
		{Known: true, RTT: ms, ErrorRatio: math.NaN(), ErrorCost: sec},
		{Known: true, RTT: ms, ErrorRatio: 7, ErrorCost: sec},
		{Known: true, RTT: ms, ErrorRatio: -1, ErrorCost: sec},
		{},
	} {
		c, _ := pairCosts(e, providerEstimate{}, 0)
		assert.True(t, c > 0 && !math.IsNaN(c) && !math.IsInf(c, 0), "%+v: %v", e, c)
	}
}

// TestNoHerdingOntoProviderWithoutSamples: a provider that has no sample
// yet gets its fair share of the picks, not every pair it is drawn into
// (Dubbo's ShortestResponse scores it 0).
func TestNoHerdingOntoProviderWithoutSamples(t *testing.T) {
	var clock atomic.Int64
	clock.Store(int64(10 * sec))
	inv := lbtest.Call("Say")
	const n, picks = 20, 40_000
	list := lbtest.N(n)
	lbtest.FeedAll(list[1:], int64(9*sec), 128, ms)
	share := func(b *Balancer) float64 {
		return float64(lbtest.Counts(b, list, inv, picks)[0]) / picks
	}
	fair := 1.0 / n
	got := share(New(Options{Env: lbenv.Env{Now: clock.Load}}))
	assert.InDelta(t, fair, got, fair/4, "new provider's share %.4f, fair %.4f; a score of 0 would give %.4f", got, fair, 2*fair)

	// With a configured default RTT above the others' it waits for the
	// others' calls in flight to make it cheaper (here none: no traffic).
	assert.Zero(t, share(New(Options{DefaultRTT: 100 * ms, Env: lbenv.Env{Now: clock.Load}})))

	// All unknown (a cold start): even.
	cold := lbtest.Counts(New(Options{Env: lbenv.Env{Now: clock.Load}}), lbtest.N(4), inv, picks)
	for _, c := range cold {
		assert.InDelta(t, picks/4, c, picks/40)
	}
}

// TestSlowProviderLosesAndRegainsShare: one of five providers turns 10×
// slower for two seconds. Its first slow answer takes its traffic away
// (peak EWMA); when it is fast again, its estimate fades, it is probed and
// it wins its share back.
func TestSlowProviderLosesAndRegainsShare(t *testing.T) {
	list := lbtest.N(5)
	servers := []server{phases([]time.Duration{ms, 10 * ms, ms}, 2*sec, 4*sec)}
	for range 4 {
		servers = append(servers, fixed(ms))
	}
	d := newDriver(t, Options{}, 100*ms, list, servers...)
	d.RunOpen(1000, 30*sec)
	before := d.Share(0, 1*sec, 2*sec)
	first := d.Picked(0, 2*sec, 2100*ms)
	during := d.Share(0, 2100*ms, 4*sec)
	// Its 10 ms estimate fades to the others' cost in about τ·ln(10/2) =
	// 16 s; the first fast answer then counts for most of the estimate.
	after := d.Share(0, 20*sec, 30*sec)
	t.Logf("slow provider's share: %.3f before, %d calls in the first 100 ms slow, %.4f while slow, %.3f 16-26 s after recovering", before, first, during, after)
	assert.Greater(t, before, 0.1)
	assert.LessOrEqual(t, first, int64(25), "a few observations: the first slow answers arrive after 10 ms")
	assert.Less(t, during, 0.01)
	assert.Greater(t, after, 0.12, "share regained (fair: 0.2)")
}

// TestErrorsAreCharged: a provider that fails fast looks fast by latency
// alone and would draw the traffic (and fail it). Charged the timeout per
// error, it loses its share, and once it recovers the charge fades and it
// is probed again.
func TestErrorsAreCharged(t *testing.T) {
	run := func(o Options, pairs bool) *driver {
		list := []base.Invoker{lbtest.Provider(20000, map[string]string{"timeout": "500ms"})}
		list = lbtest.EjectionOff(append(list, lbtest.N(3)...)...) // the balancer's own charge
		d := newDriver(t, o, 100*ms, list, failsFast(2*sec, 4*sec), fixed(ms), fixed(ms), fixed(ms))
		if !pairs {
			d.b.two.Window = 0 // one pair per pick, whatever its winner's failures
		}
		d.RunOpen(1000, 80*sec)
		return d
	}
	d := run(Options{}, true)
	during := d.Share(0, 2200*ms, 4*sec)
	after := d.Share(0, 70*sec, 80*sec)
	// The same with errors charged next to nothing and one pair per pick:
	// herding.
	uncharged := run(Options{ErrorCost: time.Nanosecond}, false).Share(0, 2200*ms, 4*sec)
	t.Logf("failing provider's share: %.4f while failing (%.3f if errors were not charged), %.3f 66-76 s after recovering", during, uncharged, after)
	assert.Less(t, during, 0.02)
	assert.Greater(t, uncharged, 0.4, "the bug the charge prevents")
	assert.InDelta(t, 0.25, after, 0.1, "share regained")
}

// An error costs at least the method timeout of the provider that made it,
// read from its URL when it joins and kept while it stays, whatever the
// order of the list.
func TestErrorCostIsEachProvidersTimeoutAcrossChanges(t *testing.T) {
	b := New(Options{})
	a := lbtest.Provider(20000, map[string]string{"timeout": "500ms"})
	c := lbtest.Provider(20001, map[string]string{"methods.Say.timeout": "2s"})
	costs := func(l []base.Invoker) []time.Duration {
		v, exact := b.sk.View(l, "Say")
		require.True(t, exact)
		out := make([]time.Duration, len(l))
		for k, p := range l {
			i, _ := v.Index(p)
			out[k] = v.Table.providers[i].errCost
		}
		return out
	}
	assert.Equal(t, []time.Duration{500 * ms, 2 * sec}, costs([]base.Invoker{a, c}))
	d := lbtest.Provider(20002, nil)
	assert.Equal(t, []time.Duration{2 * sec, urlparam.DefaultTimeout, 500 * ms}, costs([]base.Invoker{c, d, a}))
}

// halfFailed returns a balancer on a clock at 20 s that has seen two
// providers: the first failed the last 64 of its 128 calls (the last at
// 19.191 s), the second succeeded 128 times.
func halfFailed() (*Balancer, []base.Invoker, *atomic.Int64) {
	clock := new(atomic.Int64)
	clock.Store(int64(20 * sec))
	b := New(Options{ErrorCost: sec, Env: lbenv.Env{Now: clock.Load}})
	list := lbtest.N(2)
	feed(list[0], int64(19*sec), 64, ms, false)
	feed(list[0], int64(19*sec)+int64(64*ms), 64, ms, true)
	feed(list[1], int64(19*sec), 128, ms, false)
	b.Select(list, lbtest.Call("Say"))
	return b, list, clock
}

// TestErrorChargeFades: the error charge fades with the time since the
// provider's failure count last grew, is renewed by a new failure, and
// survives a membership change.
func TestErrorChargeFades(t *testing.T) {
	b, list, clock := halfFailed()
	ratio := func(l []base.Invoker) float64 {
		v, exact := b.sk.View(l, "Say")
		if !exact {
			t.Fatal("the view does not hold the list")
		}
		i, _ := v.Index(list[0])
		return b.estimate(v, i, clock.Load()).ErrorRatio
	}
	since := float64(clock.Load()-(int64(19*sec)+int64(127*ms)+int64(ms))) / float64(rpcstatus.EWMADecay)
	assert.InDelta(t, 0.5*math.Exp(-since), ratio(list), 1e-3, "errors in the window, dated from its last completion")

	clock.Add(int64(rpcstatus.EWMADecay))
	assert.InDelta(t, 0.5*math.Exp(-since-1), ratio(list), 1e-3, "faded by e after ErrorDecay")

	// A new failure renews the charge.
	feed(list[0], clock.Load()-int64(ms), 1, ms, true)
	assert.InDelta(t, 65.0/128, ratio(list), 1e-3)

	// A membership change keeps it.
	clock.Add(int64(5 * sec))
	bigger := append(append([]base.Invoker(nil), list...), lbtest.N(1)...)
	assert.InDelta(t, 65.0/128*math.Exp(-0.5), ratio(bigger), 1e-3)

	// Long after, nothing is left and the cost is the RTT; the provider is
	// clean again, compared without reading the clock.
	v, _ := b.sk.View(bigger, "Say")
	assert.False(t, clean(&v.Table.providers[0]))
	clock.Add(int64(30 * rpcstatus.EWMADecay))
	assert.Zero(t, ratio(bigger))
	assert.True(t, clean(&v.Table.providers[0]))
	feed(list[0], clock.Load(), 1, ms, true)
	assert.False(t, clean(&v.Table.providers[0]), "a new failure")
}

// TestCleanComparisonMatchesCosts: between providers without errors the
// balancer compares RTTs as of the later of their last samples, without a
// clock; it must decide as Costs on estimates as of now does.
func TestCleanComparisonMatchesCosts(t *testing.T) {
	var clock atomic.Int64
	b := New(Options{Env: lbenv.Env{Now: clock.Load}})
	list := lbtest.N(16)
	rng := rand.New(rand.NewPCG(1, 2))
	for k, p := range list {
		// Samples of 0.2 to 20 ms, the last one 0 to 40 s before the clock.
		at := int64(rng.IntN(40_000)) * int64(ms)
		feed(p, at, 1+rng.IntN(8), time.Duration(200+rng.IntN(20_000))*time.Microsecond, false)
		if k%3 == 0 {
			rpcstatus.Of(p.GetURL()).Begin(rpcstatus.Of(p.GetURL()).Method("Say"), at) // a call in flight
		}
	}
	clock.Store(int64(45 * sec))
	v, exact := b.sk.View(list, "Say")
	if !exact {
		t.Fatal("the view does not hold the list")
	}
	now := clock.Load()
	decided := 0
	for i := range list {
		for j := range list {
			if i == j {
				continue
			}
			if !clean(&v.Table.providers[i]) || !clean(&v.Table.providers[j]) {
				t.Fatalf("providers %d and %d have errors to charge", i, j)
			}
			ci, cj := pairCosts(b.estimate(v, i, now), b.estimate(v, j, now), 0)
			if math.Abs(ci-cj) <= 1e-6*max(ci, cj) {
				continue // a tie (or within rounding of one): a coin decides
			}
			assert.Equal(t, ci < cj, b.better(v, i, j), "providers %d and %d: costs %.0f and %.0f", i, j, ci, cj)
			decided++
		}
	}
	assert.Greater(t, decided, 200)
}

// TestWarmupFoldedIn: a provider warming up is drawn as a candidate in
// proportion to its warm weight, so at equal response times its share
// follows its warm weight, and reaches a fair share once warm. It gets up
// to about twice its weight share: drawn less often, it has fewer calls in
// flight and fewer samples to push its peak EWMA up than its busy peers,
// so it wins most of the comparisons it is drawn into.
func TestWarmupFoldedIn(t *testing.T) {
	list := append(lbtest.N(3), lbtest.Started(20003, lbtest.WallBase.Add(sec), 100*sec))
	d := newDriver(t, Options{}, 100*ms, list, fixed(ms), fixed(ms), fixed(ms), fixed(ms))
	d.RunOpen(500, 130*sec)
	early := d.Share(3, 10*sec, 12*sec) // warm ≈ 10 %
	mid := d.Share(3, 50*sec, 52*sec)   // ≈ 50 %
	late := d.Share(3, 105*sec, 130*sec)
	t.Logf("warming provider's share: %.3f at 10 %% warm (weight share %.3f), %.3f at 50 %% (%.3f), %.3f warm",
		early, 10.0/310, mid, 50.0/350, late)
	for _, c := range []struct{ got, weightShare float64 }{{early, 10.0 / 310}, {mid, 50.0 / 350}} {
		assert.True(t, c.got > c.weightShare/2 && c.got < 3*c.weightShare, "share %.3f, weight share %.3f", c.got, c.weightShare)
	}
	assert.Less(t, early, mid)
	assert.InDelta(t, 0.25, late, 0.06)
}

// TestFailoverSubset: a retry's subset gets the same rule, within the
// subset.
func TestFailoverSubset(t *testing.T) {
	var clock atomic.Int64
	clock.Store(int64(10 * sec))
	b := New(Options{Env: lbenv.Env{Now: clock.Load}})
	list := lbtest.N(4)
	feed(list[0], int64(9*sec), 128, 50*ms, false)
	lbtest.FeedAll(list[1:], int64(9*sec), 128, ms)
	share := lbtest.RetryShare(t, b, list, []base.Invoker{list[0], list[1]})
	assert.Less(t, share, 0.05, "the bad provider's share of the retries")
}

func TestBadInput(t *testing.T) {
	b := New(Options{DefaultRTT: -sec, ErrorCost: -sec, ErrorDecay: -sec})
	assert.Zero(t, b.defaultRTT)
	assert.Zero(t, b.errorCost)
	assert.Equal(t, float64(rpcstatus.EWMADecay), b.errorDecay)
	inv := lbtest.Call("Say")
	// Static weights: drawn in proportion.
	c := lbtest.Counts(b, lbtest.Weighted("1", "9"), inv, 20_000)
	assert.InDelta(t, 0.1, float64(c[0])/20_000, 0.02)
}

// A provider that fails fast never looks better: each error is charged the
// method's timeout at least.
func TestFastFailureNeverLooksBetter(t *testing.T) {
	share := lbtest.FastFailureShare(t, func(env lbenv.Env) loadbalance.LoadBalance {
		return New(Options{Env: env})
	})
	t.Logf("fast-failing provider's share: %.4f", share)
	assert.Less(t, share, 0.01)
}

// A provider back from an outlier ejection is not charged again for the
// errors the ejection punished; a failure after its return is charged.
func TestNoChargeForErrorsAnEjectionPunished(t *testing.T) {
	b, list, clock := halfFailed()
	ratio := func() float64 {
		v, _ := b.sk.View(list, "Say")
		return b.estimate(v, 0, clock.Load()).ErrorRatio
	}
	require.Greater(t, ratio(), 0.4)
	rpcstatus.Of(list[0].GetURL()).Method("Say").Returned() // as the detector lets it back
	clock.Add(int64(sec))
	assert.Zero(t, ratio())
	feed(list[0], clock.Load(), 1, ms, true)
	assert.Greater(t, ratio(), 0.4, "a failure since the return: the window's errors are charged")
}

// A provider whose errors were forgotten stays clean across changes of
// membership, whether its part of a long list is kept (its state shared
// with the table before) or made again (its state copied): a state made
// anew would date the errors still in its window again.
func TestForgottenErrorsStayForgottenAcrossChanges(t *testing.T) {
	b, list, clock := halfFailed()
	long := append(slices.Clone(list), lbtest.N(400)[2:]...)
	v, exact := b.sk.View(long, "Say")
	require.True(t, exact)
	clock.Add(int64(30 * rpcstatus.EWMADecay))
	assert.Zero(t, b.estimate(v, 0, clock.Load()).ErrorRatio) // forgets them
	require.True(t, clean(&v.Table.providers[0]))
	for k, l := range [][]base.Invoker{
		append(slices.Clone(long[:len(long)-1]), lbtest.Provider(29999, nil)), // its part kept
		append([]base.Invoker{long[0]}, long[2:]...),                          // its part made again
	} {
		v, exact = b.sk.View(l, "Say")
		require.True(t, exact)
		assert.True(t, clean(&v.Table.providers[0]), "change %d", k)
	}
}
