package loadaware

import (
	"slices"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

const sec = int64(time.Second)

// report stores a report with qps and utilization (CPU) on p at now.
func report(p base.Invoker, now int64, qps, cpu float64) {
	r := loadreport.Report{QPS: qps, CPU: cpu, Has: loadreport.HasQPS | loadreport.HasCPU | loadreport.HasEPS}
	rpcstatus.Of(p.GetURL()).Load().Store(now, &r)
}

func view(t *testing.T, b *Balancer, l []base.Invoker) *member.View[table] {
	v, exact := b.sk.View(l, "Say")
	require.True(t, exact)
	return v
}

func TestWeight(t *testing.T) {
	w, ok := wrrWeight(100, 0, 0.5, 1)
	assert.True(t, ok)
	assert.Equal(t, 200.0, w)
	w, _ = wrrWeight(100, 10, 0.5, 1) // 100 / (0.5 + 1 × 10/100)
	assert.InDelta(t, 100/0.6, w, 1e-9)
	for _, c := range [][4]float64{{0, 0, 0.5, 1}, {100, 0, 0, 1}, {-1, 0, 0.5, 1}} {
		_, ok := wrrWeight(c[0], c[1], c[2], c[3])
		assert.False(t, ok, "%v", c)
	}
	assert.Equal(t, 0.01*1*1/1.0, algo.JavaCost(0, 0, 0, 0, 100), "an unknown load counts as minLoad")
	assert.InDelta(t, 50*(2+1)*3/(0.5*100+1), algo.JavaCost(50, 4, 2, 0.5, 100), 1e-9)
}

// A provider that reports twice the capacity (half the utilization at the
// same qps) wins every comparison at equal calls in flight, and loses
// when it has enough more calls in flight.
func TestWeighsByReportedRatesWRR(t *testing.T) {
	c := &lbtest.Nanos{NS: 1000 * sec}
	b := New(Options{Cost: CostWRR, Env: lbenv.Env{Now: c.Now, Rand: algo.Seeded(1).Uint64}})
	l := lbtest.NoEjection(21000, 2, nil)
	report(l[0], c.NS, 100, 0.5)  // w = 200
	report(l[1], c.NS, 100, 0.25) // w = 400
	b.Select(l, lbtest.Call("Say"))
	c.NS += int64(defaultBlackout) + sec // past the blackout, reports fresh
	report(l[0], c.NS, 100, 0.5)
	report(l[1], c.NS, 100, 0.25)
	for range 100 {
		assert.Same(t, l[1], b.Select(l, lbtest.Call("Say")))
	}
	v := view(t, b, l)
	assert.False(t, v.Table.fallback.Load())
	assert.Equal(t, 200.0, v.Table.value(0))
	assert.Equal(t, 400.0, v.Table.value(1))
	// 3 calls in flight on the big one: 4/400 > 1/200.
	for range 3 {
		v.Stat(1).Begin(c.NS)
	}
	assert.Same(t, l[0], b.Select(l, lbtest.Call("Say")))
}

// The default cost divides rtadaptive's by the reported capacity: at the
// same latency, a provider of 3× the capacity takes about 3× the calls in
// flight before it costs as much.
func TestCapacityCost(t *testing.T) {
	c := &lbtest.Nanos{NS: 1000 * sec}
	b := New(Options{Blackout: time.Nanosecond, Env: lbenv.Env{Now: c.Now, Rand: algo.Seeded(3).Uint64}})
	l := lbtest.NoEjection(21300, 2, nil)
	for i, capacity := range []float64{200, 600} {
		lbtest.Feed(l[i], c.NS, 16, 10*time.Millisecond, false)
		r := loadreport.Report{QPS: 100, CPU: 0.5, Capacity: capacity, Has: loadreport.HasQPS | loadreport.HasCPU | loadreport.HasCapacity}
		rpcstatus.Of(l[i].GetURL()).Load().Store(c.NS-1, &r)
	}
	b.Select(l, lbtest.Call("Say"))
	v := view(t, b, l)
	require.False(t, v.Table.fallback.Load())
	assert.Equal(t, 200.0, v.Table.value(0))
	assert.Equal(t, 600.0, v.Table.value(1))
	// Calls in flight as the picks add them (no call ends): the shares of
	// the calls in flight go to 1:3.
	for range 400 {
		p := b.Select(l, lbtest.Call("Say"))
		i := 0
		if p == l[1] {
			i = 1
		}
		v.Stat(i).Begin(c.NS)
	}
	a0, a1 := v.Stat(0).Active(), v.Stat(1).Active()
	assert.InDelta(t, 100, a0, 2, "%d:%d", a0, a1)
	assert.InDelta(t, 300, a1, 2, "%d:%d", a0, a1)

	// With an error rate, gRPC's penalty shrinks the capacity.
	cap, ok := concurrencyCapacity(600, 100, 50, 0.5, 1, 0)
	assert.True(t, ok)
	assert.InDelta(t, 300, cap, 1e-9)
	// Without a reported capacity: gRPC's weight × RTT (Little's law).
	cap, _ = concurrencyCapacity(0, 100, 0, 0.5, 1, float64(10*time.Millisecond))
	assert.InDelta(t, 2, cap, 1e-9)
	_, ok = concurrencyCapacity(0, 0, 0, 0.5, 1, 1e6)
	assert.False(t, ok)
}

// Reports younger than the blackout, and reports older than the
// expiration, are not used; a provider without a usable report borrows
// the mean weight of the others; with none usable the balancer falls
// back to response times.
func TestBlackoutExpiryAndMean(t *testing.T) {
	c := &lbtest.Nanos{NS: 1000 * sec}
	b := New(Options{Cost: CostWRR, Env: lbenv.Env{Now: c.Now, Rand: algo.Seeded(2).Uint64}})
	l := lbtest.NoEjection(21100, 3, nil)
	report(l[0], c.NS, 100, 0.5)
	b.Select(l, lbtest.Call("Say"))
	v := view(t, b, l)
	assert.True(t, v.Table.fallback.Load(), "in the blackout")

	c.NS += int64(defaultBlackout) + sec
	report(l[0], c.NS, 100, 0.5) // w 200
	report(l[1], c.NS, 100, 0.1) // w 1000, first seen now: blackout
	b.Select(l, lbtest.Call("Say"))
	assert.False(t, v.Table.fallback.Load())
	assert.Equal(t, 200.0, v.Table.value(0))
	assert.Equal(t, 200.0, v.Table.value(1), "in its blackout: the mean")
	assert.Equal(t, 200.0, v.Table.value(2), "no report: the mean")

	c.NS += int64(defaultBlackout) + sec
	report(l[1], c.NS, 100, 0.1)
	b.Select(l, lbtest.Call("Say"))
	assert.Equal(t, 1000.0, v.Table.value(1))
	assert.Equal(t, 600.0, v.Table.value(2), "the mean of 200 and 1000")

	// Nothing new for the expiration: every report expired.
	c.NS += int64(defaultExpiration) + sec
	b.Select(l, lbtest.Call("Say"))
	assert.True(t, v.Table.fallback.Load())
	assert.Zero(t, v.Table.providers[1].since.Load(), "a new run of reports starts a new blackout")
	// Fallback: response times decide: the faster provider wins.
	lbtest.Feed(l[0], c.NS, 16, 10*time.Millisecond, false)
	lbtest.Feed(l[1], c.NS, 16, time.Millisecond, false)
	lbtest.Feed(l[2], c.NS, 16, 10*time.Millisecond, false)
	picks := lbtest.Counts(b, l, lbtest.Call("Say"), 3000)
	assert.Greater(t, picks[1], 1900, "p1 wins each comparison it is in (2/3 of them): %v", picks)
}

// javaReport stores a Dubbo Java provider's report on p at now: its clock
// and its machine's load (percent), nothing of ours.
func javaReport(p base.Invoker, now int64, load float64) {
	r := loadreport.Report{TimeMs: now / 1e6, JavaLoad: load, Has: loadreport.HasTime | loadreport.HasJavaLoad}
	rpcstatus.Of(p.GetURL()).Load().Store(now, &r)
}

// A Dubbo Java provider's report (its machine's load, no utilization nor
// rates of ours) gives it no value of its own under the default and WRR
// costs, whatever the load: it borrows the mean of the others', as a
// provider that does not report, so that a busy shared machine neither
// starves it nor an idle one floods it. Under Dubbo Java's cost every
// provider is weighed by Java's load, which ours send too.
func TestJavaReportBorrowsTheMean(t *testing.T) {
	for _, cost := range []Cost{CostCapacity, CostWRR} {
		c := &lbtest.Nanos{NS: 1000 * sec}
		b := New(Options{Cost: cost, Blackout: time.Nanosecond, Env: lbenv.Env{Now: c.Now, Rand: algo.Seeded(4).Uint64}})
		l := lbtest.NoEjection(21400, 3, nil)
		for i := range l {
			lbtest.Feed(l[i], c.NS, 16, 10*time.Millisecond, false)
		}
		report(l[0], c.NS-1, 100, 0.5)
		report(l[1], c.NS-1, 100, 0.25)
		for _, load := range []float64{530, 0.5} {
			javaReport(l[2], c.NS-1, load)
			c.NS += int64(defaultUpdatePeriod)
			b.Select(l, lbtest.Call("Say"))
			v := view(t, b, l)
			require.False(t, v.Table.fallback.Load(), "%s", cost)
			assert.False(t, v.Table.providers[2].own.Load(), "%s, Java load %v: no value of its own", cost, load)
			assert.InDelta(t, (v.Table.value(0)+v.Table.value(1))/2, v.Table.value(2), 1e-9, "%s, Java load %v: the mean", cost, load)
		}
	}

	c := &lbtest.Nanos{NS: 1000 * sec}
	b := New(Options{Cost: CostJava, Blackout: time.Nanosecond, Env: lbenv.Env{Now: c.Now, Rand: algo.Seeded(5).Uint64}})
	l := lbtest.NoEjection(21500, 2, nil)
	// One of ours: CPU 0.1 of its own, the machine's load 530 %, as a
	// Java provider on the same machine reports.
	r := loadreport.Report{QPS: 100, CPU: 0.1, JavaLoad: 530, TimeMs: c.NS / 1e6, Has: loadreport.Own | loadreport.HasTime | loadreport.HasJavaLoad}
	rpcstatus.Of(l[0].GetURL()).Load().Store(c.NS-1, &r)
	javaReport(l[1], c.NS-1, 530)
	b.Select(l, lbtest.Call("Say"))
	v := view(t, b, l)
	assert.Equal(t, 530.0, v.Table.value(0), "Java's cost reads Java's load of every provider")
	assert.Equal(t, 530.0, v.Table.value(1))
}

// lowLoad is a run of lowLoadGaps: the cost function, the third
// provider's report (CPU, qps; the others report CPU 0.5 at 100 qps), the
// providers' URL parameters, and holdSilent (Balancer.holdSilent).
type lowLoad struct {
	cost       Cost
	cpu3, qps3 float64
	params     map[string]string
	holdSilent bool
}

// lowLoadGaps runs a minute of calls at 50 a second, each over before the
// next begins (no call in flight at any pick: the costs are the
// candidates' values alone), on three equal providers of 10 ms whose
// reports differ as r says. Each call brings its provider a sample and a
// fresh report, as the filter does. It returns each provider's longest
// silence (s).
func lowLoadGaps(t *testing.T, r lowLoad) [3]float64 {
	c := &lbtest.Nanos{NS: 1000 * sec}
	b := New(Options{Cost: r.cost, Blackout: time.Nanosecond, Env: lbenv.Env{Now: c.Now, Rand: algo.Seeded(6).Uint64}})
	b.holdSilent = r.holdSilent
	l := lbtest.NoEjection(21600, 3, r.params)
	cpu, qps := []float64{0.5, 0.5, r.cpu3}, []float64{100, 100, r.qps3}
	var last [3]int64
	for i := range l {
		lbtest.Feed(l[i], c.NS, 1, 10*time.Millisecond, false)
		report(l[i], c.NS, qps[i], cpu[i])
		last[i] = c.NS
	}
	var gaps [3]float64
	for range 60 * 50 {
		c.NS += sec / 50
		p := b.Select(l, lbtest.Call("Say"))
		k := slices.Index(l, p)
		require.GreaterOrEqual(t, k, 0)
		lbtest.Feed(l[k], c.NS, 1, 10*time.Millisecond, false)
		report(l[k], c.NS, qps[k], cpu[k])
		gaps[k] = max(gaps[k], float64(c.NS-last[k])/float64(sec))
		last[k] = c.NS
	}
	for k := range last {
		gaps[k] = max(gaps[k], float64(c.NS-last[k])/float64(sec))
	}
	return gaps
}

// noProbe turns the probe off (Options.ProbeAfter).
var noProbe = map[string]string{probeAfterKey: "0"}

// At low load a provider whose value is lower than the others' is still
// called every few seconds, though it loses every comparison of costs:
//   - a little lower (CPU 0.55 against 0.5: a weight 9 % lower): its cost
//     decays with its silence until it wins a pick (Balancer.cost), long
//     before a probe is due; its negative control, without the decay and
//     the probe, hears nothing for the whole run, until its report would
//     expire;
//   - far lower (1 qps against 100, as one that got few calls reports: a
//     hundredth of the weight): the decay would take EWMADecay × ln 100 =
//     46 s, the probe calls it once it has gone ProbeAfter (5 s) longer
//     than the other candidate without a call; its negative control is
//     the probe off (loadaware.probe-after 0).
func TestSilentProviderIsProbedAtLowLoad(t *testing.T) {
	cases := []struct {
		name                 string
		run, control         lowLoad
		longest, shortestGap float64 // s: bounds of the third's longest silence
	}{
		{"a little lower", lowLoad{cpu3: 0.55, qps3: 100}, lowLoad{cpu3: 0.55, qps3: 100, params: noProbe, holdSilent: true}, 5, 0},
		{"far lower", lowLoad{cpu3: 0.5, qps3: 1}, lowLoad{cpu3: 0.5, qps3: 1, params: noProbe}, 5.5, 4},
	}
	for _, tc := range cases {
		for _, cost := range []Cost{CostCapacity, CostWRR} {
			t.Run(tc.name+"/"+string(cost), func(t *testing.T) {
				tc.run.cost, tc.control.cost = cost, cost
				gaps := lowLoadGaps(t, tc.run)
				t.Logf("longest silences %v s", gaps)
				for k, g := range gaps {
					assert.LessOrEqual(t, g, tc.longest, "provider %d silent for %.1f s (%v)", k, g, gaps)
				}
				assert.GreaterOrEqual(t, gaps[2], tc.shortestGap, "the worse provider waits for the decay or the probe (%v)", gaps)
				off := lowLoadGaps(t, tc.control)
				t.Logf("negative control: longest silences %v s", off)
				assert.Greater(t, off[2], 30.0, "negative control: the provider of the lower value is locked out (%v)", off)
			})
		}
	}
}

// A provider with a call in flight is not probed, however long its
// silence: a provider that hangs gets one call, not every call.
func TestProbeSkipsAProviderWithACallInFlight(t *testing.T) {
	c := &lbtest.Nanos{NS: 1000 * sec}
	b := New(Options{Blackout: time.Nanosecond, Env: lbenv.Env{Now: c.Now, Rand: algo.Seeded(7).Uint64}})
	l := lbtest.NoEjection(21610, 2, nil)
	for i := range l {
		lbtest.Feed(l[i], c.NS, 1, 10*time.Millisecond, false)
		report(l[i], c.NS, []float64{100, 1}[i], 0.5)
	}
	hung := rpcstatus.Of(l[1].GetURL()).Method("Say")
	hung.Begin(c.NS)
	defer hung.End(c.NS, c.NS, false)
	for range 50 * 20 { // 20 s at 50 a second: the hung one's silence grows
		c.NS += sec / 50
		require.Equal(t, l[0], b.Select(l, lbtest.Call("Say")), "the provider with a call in flight is not probed")
		lbtest.Feed(l[0], c.NS, 1, 10*time.Millisecond, false)
	}
}

// A provider's run of reports, and so its blackout, carries across a
// membership change, whether the change is beside it or at the list's other
// end. A provider that came starts its own blackout.
func TestBlackoutCarriesAcrossChanges(t *testing.T) {
	for k, change := range []struct {
		name string
		of   func(l []base.Invoker, port int) []base.Invoker
	}{
		{"the change far", func(l []base.Invoker, port int) []base.Invoker {
			return append(slices.Clone(l[:len(l)-1]), lbtest.EjectionOff(lbtest.Provider(port, nil))...)
		}},
		{"the change beside", func(l []base.Invoker, port int) []base.Invoker {
			return append(append([]base.Invoker{l[0]}, l[2:]...), lbtest.EjectionOff(lbtest.Provider(port, nil))...)
		}},
	} {
		port := 23000 + 500*k
		c := &lbtest.Nanos{NS: 1000 * sec}
		b := New(Options{Cost: CostWRR, Env: lbenv.Env{Now: c.Now, Rand: algo.Seeded(uint64(7 + k)).Uint64}})
		l := lbtest.NoEjection(port, 400, nil)
		reportAll := func(l []base.Invoker) {
			for _, p := range l {
				report(p, c.NS, 100, 0.5)
			}
		}
		reportAll(l)
		before := view(t, b, l)
		b.Select(l, lbtest.Call("Say")) // every run of reports begins now
		start := c.NS
		c.NS += 2 * sec
		reportAll(l)
		after := change.of(l, port+450)
		v := view(t, b, after)
		b.Select(after, lbtest.Call("Say"))
		require.NotSame(t, before, v, change.name)
		assert.Equal(t, start, v.Table.providers[0].since.Load(), change.name)

		c.NS = start + int64(defaultBlackout) + sec/2
		reportAll(after)
		b.Select(after, lbtest.Call("Say"))
		assert.True(t, v.Table.providers[0].own.Load(), "%s: out of its blackout", change.name)
		assert.False(t, v.Table.providers[len(after)-1].own.Load(), "%s: the newcomer is in its blackout", change.name)
	}
}

// URL parameters override the options per method.
func TestParamsOverrideOptions(t *testing.T) {
	c := &lbtest.Nanos{NS: 1000 * sec}
	b := New(Options{Env: lbenv.Env{Now: c.Now}})
	l := []base.Invoker{
		lbtest.Provider(21200, map[string]string{blackoutKey: "0", "methods.Say." + costKey: "java", errorPenaltyKey: "x"}),
		lbtest.Provider(21201, nil),
	}
	restore := lbtest.CaptureLogs(t)
	b.Select(l, lbtest.Call("Say"))
	v := view(t, b, l)
	assert.Equal(t, CostJava, v.Table.cfg.cost)
	assert.Zero(t, v.Table.cfg.blackout)
	assert.Equal(t, defaultErrorPenalty, v.Table.cfg.penalty)
	// A membership change keeps the configuration: no second WARN.
	b.Select(append(l, lbtest.Provider(21202, nil)), lbtest.Call("Say"))
	b.sk.WaitBuilds()
	logs := restore()
	require.Len(t, logs, 1, "%q", logs)
	assert.Contains(t, logs[0], `loadaware.error-penalty "x" is not a number from 0 to 100; using 1`)
}
