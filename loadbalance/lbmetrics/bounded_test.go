package lbmetrics

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/loadbalance/warmrandom"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// fleetMethods are the methods of the large fleet.
var fleetMethods = []string{"M0", "M1", "M2", "M3", "M4"}

// fleet returns a registry of one warmrandom balancer serving n providers
// (ports 20000…) for each of fleetMethods, with 4 picks a provider, the
// first 10 providers 10 times slower than the others and the next 2
// ejected, as a consumer of a large fleet sees it; and the providers.
func fleet(tb testing.TB, n int) (*describe.Registry, []base.Invoker) {
	tb.Helper()
	defer lblog.Capture(func(string) {})()
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	list := lbtest.N(n)
	now := rpcstatus.Nanotime()
	for _, m := range fleetMethods {
		call := lbtest.Call(m)
		lb.Select(list, call)
		lbtest.WaitBuilds(lb)
		lbtest.Counts(lb, list, call, 4*n)
		for i, p := range list {
			lat := time.Millisecond
			if i < 10 {
				lat *= 10
			}
			pr := rpcstatus.Of(p.GetURL())
			pr.Begin(pr.Method(m), now).End(now+int64(lat), false)
		}
		for _, p := range list[10:12] {
			st := rpcstatus.Of(p.GetURL()).Method(m)
			for range 5 {
				st.Judge(now, true, rpcstatus.NoCode)
			}
		}
		lb.Select(list, call)
		lbtest.WaitBuilds(lb)
	}
	// The registry's clock starts at the time of the calls: building the
	// fleet takes minutes under -race on a busy machine, over which every
	// peak EWMA would decay to 0 ns and no provider would read slow.
	built := rpcstatus.Nanotime()
	reg := describe.New(describe.Options{Now: func() int64 { return now + rpcstatus.Nanotime() - built }})
	reg.Register(warmrandom.Name, lb)
	return reg, list
}

// samples returns the number of samples (the series Prometheus stores) in
// mfs: one per counter or gauge, per histogram its buckets, +Inf, sum and
// count.
func samples(mfs []*dto.MetricFamily) int {
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				n += len(h.GetBucket()) + 3
				continue
			}
			n++
		}
	}
	return n
}

// byName returns the families of mfs by name.
func byName(mfs []*dto.MetricFamily) map[string]*dto.MetricFamily {
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// At 10,000 providers × 5 methods a scrape holds at most 2,000 series by
// default: the per-method series of each method, and series of their own
// for at most DefaultMaxProviders providers of each, the slow and the
// ejected ones among them; the per-method counters add up to the
// providers'.
func TestCollectorBoundedAt10000Providers(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 providers")
	}
	reg, list := fleet(t, 10000)
	pr := prom.NewPedanticRegistry()
	require.NoError(t, pr.Register(New(Options{Registry: reg})))
	mfs, err := pr.Gather()
	require.NoError(t, err)
	n := samples(mfs)
	t.Logf("%d series at 10,000 providers × %d methods", n, len(fleetMethods))
	assert.LessOrEqual(t, n, 2000)
	fams := byName(mfs)

	perMethod := map[string]map[string]bool{}
	for _, m := range fams[metricPicksTotal].GetMetric() {
		if perMethod[label(m, "method")] == nil {
			perMethod[label(m, "method")] = map[string]bool{}
		}
		perMethod[label(m, "method")][label(m, labelProvider)] = true
	}
	require.Len(t, perMethod, len(fleetMethods))
	for method, shown := range perMethod {
		assert.Len(t, shown, DefaultMaxProviders, method)
		for _, p := range list[:12] {
			assert.True(t, shown[p.GetURL().Location], "%s: the slow and the ejected have series: %s", method, p.GetURL().Location)
		}
	}
	assert.Nil(t, fams[metricLatency], "no per-provider histogram above the bound")

	picks := fams[metricMethodPicks].GetMetric()
	require.Len(t, picks, len(fleetMethods), "one zone, one series per method")
	for _, m := range picks {
		assert.Equal(t, float64(4*10000+2), m.GetCounter().GetValue(), "every pick of %s", label(m, "method"))
	}
	ejected := 0.0
	for _, m := range fams[metricMethodProviders].GetMetric() {
		if label(m, labelState) == string(describe.StateEjected) {
			ejected += m.GetGauge().GetValue()
		}
	}
	assert.Equal(t, float64(2*len(fleetMethods)), ejected)
	for _, m := range fams[metricMethodLatency].GetMetric() {
		assert.EqualValues(t, 10000, m.GetHistogram().GetSampleCount(), "a call per provider of %s", label(m, "method"))
	}
}

// AllProviders exports every provider's series, above the bound too: on 200
// providers (the bound is per method, so the size of the fleet changes
// nothing but the time a gather of 1.4 million series takes under the race
// detector; BenchmarkGather10000Providers gathers them at 10 000).
func TestCollectorAllProvidersExportsEveryProvider(t *testing.T) {
	reg, _ := fleet(t, 200)
	all := prom.NewPedanticRegistry()
	require.NoError(t, all.Register(New(Options{Registry: reg, AllProviders: true})))
	mfs, err := all.Gather()
	require.NoError(t, err)
	assert.Len(t, byName(mfs)[metricLatency].GetMetric(), 200*len(fleetMethods), "AllProviders: every provider's histogram")
	bounded := prom.NewPedanticRegistry()
	require.NoError(t, bounded.Register(New(Options{Registry: reg})))
	mfs, err = bounded.Gather()
	require.NoError(t, err)
	assert.Nil(t, byName(mfs)[metricLatency], "negative control: the default exports no per-provider histogram at 200")
}

// A provider that leaves takes its series away, but not its counts from
// the method's counters, which never go back; a provider that comes back
// with the same statistics is counted once.
func TestCollectorMethodCountersKeepProvidersThatLeft(t *testing.T) {
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	list := []base.Invoker{provider(20600), provider(20601), provider(20602)}
	lbtest.Counts(lb, list, lbtest.Call("Say"), 300)
	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)
	c := New(Options{Registry: reg})
	method := func() (picks float64, providers int) {
		mfs := gather(t, c)
		m := mfs[metricMethodPicks].GetMetric()
		require.Len(t, m, 1)
		return m[0].GetCounter().GetValue(), len(mfs[metricPicksTotal].GetMetric())
	}
	picks, n := method()
	assert.Equal(t, 300.0, picks)
	assert.Equal(t, 3, n)
	picks, n = method() // the same list: the steady path
	assert.Equal(t, 300.0, picks)
	assert.Equal(t, 3, n)

	lbtest.Counts(lb, list[:2], lbtest.Call("Say"), 100) // the third left
	picks, n = method()
	assert.Equal(t, 400.0, picks, "the third's picks kept")
	assert.Equal(t, 2, n)

	lbtest.Counts(lb, list, lbtest.Call("Say"), 100) // and came back
	picks, n = method()
	assert.Equal(t, 500.0, picks, "counted once")
	assert.Equal(t, 3, n)
}

// Above MaxProviders, a provider far from the mean has series of its own
// and keeps them while it stays at least half as far; the others have
// none.
func TestCollectorNotableProviders(t *testing.T) {
	ps := make([]describe.Provider, 100)
	for i := range ps {
		ps[i] = describe.Provider{Address: "p" + strconv.Itoa(i), State: describe.StateOK, Share: 0.01, LatencyMs: 10}
	}
	m := &describe.Method{Providers: ps}
	l := &ledger{}
	ps[7].LatencyMs = 20                                                     // twice the mean or so
	ps[9].State = describe.StateEjected                                      // first
	ps[50].Share, ps[51].Share = 0.03, 0.0                                   // 3× the mean, none
	assert.Equal(t, []int{7, 9, 50, 51}, notable(m, 8, l, new([]candidate))) // in snapshot order
	assert.Equal(t, []int{9, 50}, notable(m, 2, l, new([]candidate)), "ejected first, then the farthest")

	ps[50].Share = 0.0135 // 0.35 from the mean: kept, as it was shown
	ps[51].Share = 0.0135 // but this one was not
	assert.Equal(t, []int{7, 9, 50}, notable(m, 8, l, new([]candidate))[:3])
	assert.Len(t, notable(m, 8, l, new([]candidate)), 3)
}

// ProvidersEnv: all, a number, or the defaults (with a WARN line for
// anything else).
func TestProvidersFromEnv(t *testing.T) {
	logs := lbtest.CaptureLogs(t)
	all, most := providersFromEnv("all")
	assert.True(t, all)
	all, most = providersFromEnv(" 100 ")
	assert.False(t, all)
	assert.Equal(t, 100, most)
	all, most = providersFromEnv("")
	assert.Equal(t, []any{false, 0}, []any{all, most})
	assert.Empty(t, logs())
	all, most = providersFromEnv("-3")
	assert.Equal(t, []any{false, 0}, []any{all, most})
	require.Len(t, logs(), 1)
	assert.Contains(t, logs()[0], ProvidersEnv)
}

// BenchmarkGather10000Providers gathers the metrics of one balancer
// serving 10,000 providers for each of 5 methods, as dubbo-go's endpoint
// does, by default and with every provider's series; series/op is the
// number of series a scrape holds.
func BenchmarkGather10000Providers(b *testing.B) {
	reg, _ := fleet(b, 10000)
	for _, all := range []bool{false, true} {
		b.Run("all="+strconv.FormatBool(all), func(b *testing.B) {
			pr := prom.NewRegistry()
			pr.MustRegister(New(Options{Registry: reg, AllProviders: all}))
			b.ReportAllocs()
			n := 0
			var before, after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			for b.Loop() {
				mfs, err := pr.Gather()
				if err != nil {
					b.Fatal(err)
				}
				n = samples(mfs)
			}
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			b.ReportMetric(float64(n), "series/op")
			// CPU time, garbage collection included: on a busy machine
			// ns/op is mostly waiting for a core.
			cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// dubbo-go destroys the invoker of a provider that left, which then
// answers a placeholder URL with no host, port or service; a call still
// holding the list from before sees it, first or elsewhere. No series
// comes of it: no provider ":" (which DubboLBProviderGetsNoPicks took for
// a healthy provider without picks), no method of an empty service, and
// the method's counters are those of the providers there.
func TestCollectorDestroyedInvokers(t *testing.T) {
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	list := []base.Invoker{provider(20700), provider(20701), provider(20702), provider(20703)}
	lbtest.Counts(lb, list, lbtest.Call("Say"), 200)
	list[0].Destroy()
	list[2].Destroy()
	lbtest.Counts(lb, list, lbtest.Call("Say"), 100) // the first destroyed
	gone := provider(20705)                          // destroyed before any snapshot held it
	gone.Destroy()
	within := []base.Invoker{list[1], gone, list[3], provider(20704)}
	lbtest.Counts(lb, within, lbtest.Call("Say"), 100) // one destroyed within
	lbtest.WaitBuilds(lb)
	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)
	snap := reg.Snapshot()
	require.Len(t, snap.Balancers, 1)
	require.Len(t, snap.Balancers[0].Methods, 1, "the snapshot of the current list only")
	mfs := gather(t, New(Options{Registry: reg}))
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if p := label(m, labelProvider); p != "" || name == metricPicksTotal {
				assert.Contains(t, []string{"127.0.0.1:20701", "127.0.0.1:20703", "127.0.0.1:20704"}, p, "%s: %v", name, m.GetLabel())
			}
			if label(m, "method") != "" {
				assert.Equal(t, lbtest.Service, label(m, "interface"), "%s: %v", name, m.GetLabel())
			}
		}
	}
	require.Len(t, mfs[metricMethodPicks].GetMetric(), 1)
}
