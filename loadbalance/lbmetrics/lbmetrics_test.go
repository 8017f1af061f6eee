package lbmetrics

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/metrics"
	_ "dubbo.apache.org/dubbo-go/v3/metrics/prometheus" // dubbo-go's Prometheus registry
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
	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// gather collects c on a pedantic registry (which checks every metric
// against its description) and returns the families by name.
func gather(t *testing.T, c *Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prom.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	return byName(mfs)
}

// series returns the metrics of mf by their provider label.
func series(mf *dto.MetricFamily) map[string]*dto.Metric {
	out := map[string]*dto.Metric{}
	for _, m := range mf.GetMetric() {
		out[label(m, labelProvider)+label(m, labelReason)] = m
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// provider returns a provider of the service as a consumer of application
// "shop" sees it, in group g and version 1.0.0.
func provider(port int) base.Invoker {
	return lbtest.Provider(port, map[string]string{"weight": "100", "application": "shop", "group": "g", "version": "1.0.0"})
}

func TestCollectorValues(t *testing.T) {
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	list := []base.Invoker{provider(20000), provider(20001)}
	counts := lbtest.Counts(lb, list, lbtest.Call("Say"), 100)
	ms := time.Millisecond
	lbtest.Feed(list[0], 0, 3, 3*ms, false)  // (2.048, 4.096] ms
	lbtest.Feed(list[0], 0, 1, 100*ms, true) // (65.536, 131.072] ms
	pr := rpcstatus.Of(list[1].GetURL())
	pr.Begin(pr.Method("Say"), 0)

	// Read at the end of the last call fed: a peak EWMA decays with the
	// time since its last sample, here the age of the test process.
	reg := describe.New(describe.Options{Now: func() int64 { return int64(100 * ms) }})
	reg.Register(warmrandom.Name, lb)
	c := New(Options{Registry: reg, Application: "me", AppVersion: "v1", Hostname: "host", IP: "10.1.2.3"})
	mfs := gather(t, c)

	picks := series(mfs[metricPicksTotal])
	require.Len(t, picks, 2)
	a := picks["127.0.0.1:20000"]
	assert.Equal(t, float64(counts[0]), a.GetCounter().GetValue())
	assert.Equal(t, float64(counts[1]), picks["127.0.0.1:20001"].GetCounter().GetValue())
	want := map[string]string{
		"application_name": "shop", "application_version": "", "hostname": "host", "ip": "10.1.2.3",
		"interface": lbtest.Service, "method": "Say", "group": "g", "version": "1.0.0",
		"provider": "127.0.0.1:20000", "loadbalance": warmrandom.Name,
	}
	assert.Len(t, a.GetLabel(), len(want))
	for k, v := range want {
		assert.Equal(t, v, label(a, k), k)
	}

	assert.Equal(t, 1.0, series(mfs[metricInFlight])["127.0.0.1:20001"].GetGauge().GetValue())
	assert.Equal(t, 1.0, series(mfs[metricFailedTotal])["127.0.0.1:20000"].GetCounter().GetValue())
	assert.Equal(t, 100.0, series(mfs[metricWeight])["127.0.0.1:20000"].GetGauge().GetValue())
	ewma := series(mfs[metricLatencyEWMA])["127.0.0.1:20000"].GetGauge().GetValue()
	assert.True(t, ewma > 0.003 && ewma <= 0.1, "peak EWMA %v s: between the latencies fed", ewma)
	p := series(mfs[metricPanic])
	require.Len(t, p, 1, "one per method")
	assert.Equal(t, 0.0, p[""].GetGauge().GetValue(), "no panic mode")
	assert.Equal(t, "Say", label(p[""], "method"))
	assert.Equal(t, "shop", label(p[""], "application_name"))
	assert.Nil(t, mfs[metricCost], "no cost outside rtadaptive")

	h := series(mfs[metricLatency])["127.0.0.1:20000"].GetHistogram()
	assert.EqualValues(t, 4, h.GetSampleCount())
	assert.InDelta(t, 0.109, h.GetSampleSum(), 1e-12, "seconds")
	bucket := map[float64]uint64{}
	for _, b := range h.GetBucket() {
		bucket[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	assert.Len(t, bucket, rpcstatus.HistogramBuckets)
	assert.EqualValues(t, 0, bucket[0.002048], "bounds in seconds")
	assert.EqualValues(t, 3, bucket[0.004096])
	assert.EqualValues(t, 3, bucket[0.065536])
	assert.EqualValues(t, 4, bucket[0.131072])
	assert.EqualValues(t, 4, bucket[8.388608])

	rebuilds := series(mfs[metricRebuildsTotal])
	require.Len(t, rebuilds, 2)
	m := rebuilds[reasonMember]
	assert.Equal(t, 1.0, m.GetCounter().GetValue())
	assert.Equal(t, "me", label(m, "application_name"))
	assert.Equal(t, "v1", label(m, "application_version"))
	assert.Equal(t, warmrandom.Name, label(m, labelBalancer))
	assert.Equal(t, 0.0, rebuilds[reasonWarmup].GetCounter().GetValue())

	// A provider that leaves leaves the metrics.
	list[0].Destroy()
	assert.Len(t, series(gather(t, c)[metricPicksTotal]), 1)
}

// A provider that outlier ejection took out is ejected (1) with one
// ejection; the others are at 0.
func TestCollectorEjection(t *testing.T) {
	defer lblog.Capture(func(string) {})()
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	list := []base.Invoker{provider(20100), provider(20101), provider(20102), provider(20103), provider(20104)}
	lb.Select(list, lbtest.Call("Say"))
	lbtest.OutlierFail(list[1], int64(time.Hour), 5)
	lb.Select(list, lbtest.Call("Say")) // the snapshot now has the ejection

	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)
	mfs := gather(t, New(Options{Registry: reg}))
	ejected, ejections := series(mfs[metricEjected]), series(mfs[metricEjectionsTotal])
	require.Len(t, ejected, 5)
	for i, p := range list {
		want := 0.0
		if i == 1 {
			want = 1
		}
		addr := p.GetURL().Location
		assert.Equal(t, want, ejected[addr].GetGauge().GetValue(), addr)
		assert.Equal(t, want, ejections[addr].GetCounter().GetValue(), addr)
	}
	assert.Equal(t, describe.StateEjected, reg.Snapshot().Balancers[0].Methods[0].Providers[1].State)
}

// Two of three providers fail with no cap on ejections: ejecting both
// would leave fewer than half, so outlier ejection is in panic mode, which
// the method's panic gauge shows, and nobody is ejected.
func TestCollectorPanicMode(t *testing.T) {
	defer lblog.Capture(func(string) {})()
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	params := map[string]string{"weight": "100", "outlier.max-ejection-percent": "100"}
	list := []base.Invoker{lbtest.Provider(20300, params), lbtest.Provider(20301, params), lbtest.Provider(20302, params)}
	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)
	c := New(Options{Registry: reg})
	panicked := func() float64 {
		lb.Select(list, lbtest.Call("Say"))
		p := series(gather(t, c)[metricPanic])
		require.Len(t, p, 1)
		return p[""].GetGauge().GetValue()
	}
	require.Equal(t, 0.0, panicked())
	lbtest.OutlierFail(list[0], int64(time.Hour), 5)
	assert.Equal(t, 0.0, panicked(), "one of three ejected: two left")
	lbtest.OutlierFail(list[1], int64(time.Hour), 5)
	assert.Equal(t, 1.0, panicked(), "two of three: panic mode")
	assert.Equal(t, 0.0, series(gather(t, c)[metricEjected])["127.0.0.1:20300"].GetGauge().GetValue(), "every provider serves")
}

// A provider listed twice (two invokers of one address) would make the
// whole scrape fail: it is reported once.
func TestCollectorTwoInvokersOfOneAddress(t *testing.T) {
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	list := []base.Invoker{provider(20000), provider(20000), provider(20001)}
	lbtest.Counts(lb, list, lbtest.Call("Say"), 10)
	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)
	assert.Len(t, series(gather(t, New(Options{Registry: reg}))[metricPicksTotal]), 2)
}

func TestCollectorFuncOtherProtocol(t *testing.T) {
	logs := lbtest.CaptureLogs(t)
	u, _ := common.NewURL("localhost", common.WithProtocol("opentelemetry"))
	CollectorFunc(nil, u)
	require.Len(t, logs(), 1)
	assert.Contains(t, logs()[0], `"prometheus" only`)
}

// Through dubbo-go itself: with metrics enabled, the balancers' metrics
// are on dubbo-go's Prometheus endpoint, beside dubbo-go's own.
func TestOnDubboGoEndpoint(t *testing.T) {
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	lbtest.Counts(lb, []base.Invoker{provider(20000), provider(20001)}, lbtest.Call("Say"), 10)
	describe.Register("test-"+warmrandom.Name, lb) // replaces the one of a previous run (-count)
	port := dubboGoEndpoint(t)

	var body string
	deadline := time.Now().Add(time.Minute) // the exporter starts in the background
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		require.True(t, time.Now().Before(deadline), "dubbo-go's endpoint does not answer: %v", err)
		time.Sleep(50 * time.Millisecond) // polling a server that starts in the background
	}
	for _, want := range []string{
		`(?m)^dubbo_consumer_lb_picks_total\{application_name="shop",.*loadbalance="test-warmrandom",method="Say",provider="127.0.0.1:20001",version="1.0.0"\} \d+$`,
		`(?m)^dubbo_consumer_lb_snapshot_rebuilds_total\{application_name="consumer-app",.*loadbalance="test-warmrandom",reason="membership"\} 1$`,
		// Two providers: the snapshot is built on the call, no interim pick.
		`(?m)^dubbo_consumer_lb_interim_picks_total\{application_name="consumer-app",.*loadbalance="test-warmrandom"\} 0$`,
		// dubbo-go's exporter counts its own scrapes: the same endpoint.
		`(?m)^promhttp_metric_handler_requests_total\{code="200"\} \d+$`,
	} {
		assert.True(t, regexp.MustCompile(want).MatchString(body), "no line matches %s", want)
	}
}

// endpoint is the port of dubbo-go's metrics endpoint: metrics.Init
// starts it once per process, as in a consumer, so every run of a test
// (-count) scrapes the one the first run started.
var endpoint struct {
	once sync.Once
	port int
	err  error
}

// dubboGoEndpoint starts dubbo-go's metrics, with our Collector added as
// package extension adds it, on the first call, and returns the port of
// its endpoint.
func dubboGoEndpoint(t *testing.T) int {
	endpoint.once.Do(func() {
		metrics.AddCollector(Name, CollectorFunc) // as package extension does
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			endpoint.err = err
			return
		}
		endpoint.port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		u, _ := common.NewURL("localhost", common.WithProtocol(constant.ProtocolPrometheus))
		u.SetParam(constant.PrometheusExporterEnabledKey, "true")
		u.SetParam(constant.PrometheusExporterMetricsPortKey, strconv.Itoa(endpoint.port))
		u.SetParam(constant.PrometheusExporterMetricsPathKey, "/metrics")
		u.SetParam(constant.ApplicationKey, "consumer-app")
		metrics.Init(u)
	})
	require.NoError(t, endpoint.err)
	return endpoint.port
}

// A provider's load report shows beside the consumer's own figures, in the
// metrics and in the snapshot; a provider without one has no such series.
func TestCollectorReportedLoad(t *testing.T) {
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	list := []base.Invoker{provider(20200), provider(20201), provider(20202)}
	lb.Select(list, lbtest.Call("Say"))
	r := loadreport.Report{CPU: 0.25, Inflight: 12, Capacity: 16, QPS: 300, Has: loadreport.Own}
	rpcstatus.Of(list[0].GetURL()).Load().Store(rpcstatus.Nanotime(), &r)
	// A Dubbo Java provider's report: its machine's load only.
	java := loadreport.Report{TimeMs: 1764560000123, JavaLoad: 530, Has: loadreport.HasTime | loadreport.HasJavaLoad}
	rpcstatus.Of(list[2].GetURL()).Load().Store(rpcstatus.Nanotime(), &java)

	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)
	mfs := gather(t, New(Options{Registry: reg}))
	util := series(mfs[metricReportedUtil])
	require.Len(t, util, 1)
	assert.Equal(t, 0.75, util["127.0.0.1:20200"].GetGauge().GetValue(), "in flight over capacity, above the CPU")
	jl := series(mfs[metricReportedJava])
	require.Len(t, jl, 1, "only the Java provider reported Java's load")
	assert.Equal(t, 5.3, jl["127.0.0.1:20202"].GetGauge().GetValue(), "the machine's load (530 %) as a ratio, not capped")
	assert.Equal(t, 300.0, series(mfs[metricReportedQPS])["127.0.0.1:20200"].GetGauge().GetValue())
	assert.Equal(t, 12.0, series(mfs[metricReportedFlight])["127.0.0.1:20200"].GetGauge().GetValue())
	assert.Less(t, series(mfs[metricReportedAge])["127.0.0.1:20200"].GetGauge().GetValue(), 3600.0)

	ps := reg.Snapshot().Balancers[0].Methods[0].Providers
	require.NotNil(t, ps[0].Reported)
	require.NotNil(t, ps[0].Reported.Utilization)
	assert.Equal(t, 0.75, *ps[0].Reported.Utilization)
	assert.Nil(t, ps[0].Reported.JavaLoad)
	assert.Nil(t, ps[1].Reported)
	require.NotNil(t, ps[2].Reported)
	assert.Nil(t, ps[2].Reported.Utilization, "machine load is no utilization of the provider")
	require.NotNil(t, ps[2].Reported.JavaLoad)
	assert.Equal(t, 530.0, *ps[2].Reported.JavaLoad)
}

// Names lists exactly the metrics the Collector describes, which the
// dashboard's and the alert rules' tests check their queries against.
func TestNamesAreTheDescribedMetrics(t *testing.T) {
	ch := make(chan *prom.Desc, 64)
	New(Options{Registry: describe.New(describe.Options{})}).Describe(ch)
	close(ch)
	var described []string
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		require.NotNil(t, m, d.String())
		described = append(described, m[1])
	}
	assert.ElementsMatch(t, Names(), described)
}

// Zone-aware routing: the share the plan keeps local, and the picks per
// zone, which add up to the picks of the method; nothing while the
// consumer names no zone.
func TestCollectorZones(t *testing.T) {
	defer lblog.Capture(func(string) {})()
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	cfg := map[string]string{"lb.zone.local": "a", "lb.zone.callers": "a:1,b:1"}
	list := lbtest.Zoned(20400, []string{"a", "b"}, []int{2, 6}, cfg)
	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)
	c := New(Options{Registry: reg})
	lbtest.Counts(lb, list, lbtest.Call("Say"), 1000)
	mfs := gather(t, c)
	local := mfs[metricZoneLocal].GetMetric()
	require.Len(t, local, 1)
	assert.Equal(t, "a", label(local[0], labelZone))
	assert.InDelta(t, 0.5, local[0].GetGauge().GetValue(), 1e-12, "a holds 25 % of the capacity for 50 % of the calls")
	picks := map[string]float64{}
	for _, m := range mfs[metricZonePicks].GetMetric() {
		picks[label(m, labelZone)+"/"+label(m, labelLocal)] = m.GetCounter().GetValue()
	}
	require.Len(t, picks, 2)
	assert.Equal(t, 1000.0, picks["a/true"]+picks["b/false"])
	assert.InDelta(t, 500, picks["a/true"], 5*math.Sqrt(1000*0.25), "half the picks stay in a")

	off := warmrandom.New(warmrandom.Options{})
	reg2 := describe.New(describe.Options{})
	reg2.Register(warmrandom.Name, off)
	lbtest.Counts(off, lbtest.Zoned(20500, []string{"a", "b"}, []int{2, 6}, nil), lbtest.Call("Say"), 10)
	mfs = gather(t, New(Options{Registry: reg2}))
	assert.Nil(t, mfs[metricZoneLocal])
	assert.Nil(t, mfs[metricZonePicks])
}

// Subsetting: three series per reference that subsets (held, serving,
// all), with its service, level and mode; none while no reference does.
func TestCollectorSubsets(t *testing.T) {
	reg := describe.New(describe.Options{})
	c := New(Options{Registry: reg})
	assert.NotContains(t, gather(t, c), metricSubsetProviders, "no subset")
	reg.SetSubsets(func() []describe.Subset {
		return []describe.Subset{{Service: "g/org.Greeter:1.0.0", Registry: "interface", Mode: describe.SubsetAperture, Size: 2, Held: 3, Serving: 2, Total: 40}}
	})
	mf := gather(t, c)[metricSubsetProviders]
	require.NotNil(t, mf)
	got := map[string]float64{}
	for _, m := range mf.GetMetric() {
		assert.Equal(t, "g/org.Greeter:1.0.0", label(m, labelService))
		assert.Equal(t, "interface", label(m, labelRegistry))
		assert.Equal(t, describe.SubsetAperture, label(m, labelMode))
		got[label(m, labelSet)] = m.GetGauge().GetValue()
	}
	assert.Equal(t, map[string]float64{"held": 3, "serving": 2, "all": 40}, got)
}
