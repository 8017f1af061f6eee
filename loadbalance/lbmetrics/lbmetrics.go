// Package lbmetrics puts the figures of the module's balancers (package
// describe) on dubbo-go's metrics: importing package extension registers
// CollectorFunc with dubbo-go, so that a consumer whose configuration
// enables metrics with the Prometheus protocol serves them on the same
// endpoint as dubbo-go's own, with dubbo-go's dubbo_ prefix and labels
// plus provider and loadbalance:
//
//	dubbo:
//	  metrics:
//	    enable: true
//	    port: 9090
//
// Values are read from the balancers' snapshots at each scrape, so nothing
// is updated on the hot path beyond the pick counter, and a provider that
// leaves a snapshot leaves the metrics (docs/observability.md lists them;
// reasoning in DESIGN.md). Label values, which come from outside the
// process, are made valid UTF-8 of at most MaxLabelBytes; a series
// Prometheus would still refuse is skipped with one WARN line, so that
// nothing a provider registers can fail or panic a scrape.
package lbmetrics

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/metrics"
	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Name is the name CollectorFunc is added under with dubbo-go's
// metrics.AddCollector.
const Name = "loadbalance"

// Metric names: Prometheus's conventions (base units, _seconds, _ratio,
// _total for counters), dubbo-go's dubbo_consumer_ prefix.
const (
	metricPicksTotal     = "dubbo_consumer_lb_picks_total"
	metricInFlight       = "dubbo_consumer_lb_requests_in_flight"
	metricFailedTotal    = "dubbo_consumer_lb_requests_failed_total"
	metricLatencyEWMA    = "dubbo_consumer_lb_latency_ewma_seconds"
	metricLatency        = "dubbo_consumer_lb_latency_seconds"
	metricWeight         = "dubbo_consumer_lb_weight"
	metricCost           = "dubbo_consumer_lb_cost_seconds"
	metricRebuildsTotal  = "dubbo_consumer_lb_snapshot_rebuilds_total"
	metricInterimTotal   = "dubbo_consumer_lb_interim_picks_total"
	metricEjected        = "dubbo_consumer_lb_ejected"
	metricEjectionsTotal = "dubbo_consumer_lb_ejections_total"
	metricPanic          = "dubbo_consumer_lb_outlier_panic"
	metricReportedUtil   = "dubbo_consumer_lb_reported_utilization_ratio"
	metricReportedQPS    = "dubbo_consumer_lb_reported_requests_per_second"
	metricReportedFlight = "dubbo_consumer_lb_reported_requests_in_flight"
	metricReportedAge    = "dubbo_consumer_lb_reported_age_seconds"
	metricReportedJava   = "dubbo_consumer_lb_reported_java_load_ratio"
	metricZoneLocal      = "dubbo_consumer_lb_zone_local_ratio"
	metricZonePicks      = "dubbo_consumer_lb_zone_picks_total"

	// Per (service, method, balancer, zone): complete whatever the
	// number of providers.
	metricMethodPicks     = "dubbo_consumer_lb_method_picks_total"
	metricMethodFailed    = "dubbo_consumer_lb_method_requests_failed_total"
	metricMethodInFlight  = "dubbo_consumer_lb_method_requests_in_flight"
	metricMethodLatency   = "dubbo_consumer_lb_method_latency_seconds"
	metricMethodEjections = "dubbo_consumer_lb_method_ejections_total"
	metricMethodWeight    = "dubbo_consumer_lb_method_weight"
	metricMethodProviders = "dubbo_consumer_lb_method_providers"

	// Per (service, registry level) of a reference that subsets
	// (lb.subset.size): bounded by the consumer's references.
	metricSubsetProviders = "dubbo_consumer_lb_subset_providers"
)

// MaxLabelBytes bounds the length of a label value, in bytes: a longer one
// is cut at the last whole character within it.
const MaxLabelBytes = 256

// Names returns every metric name the Collector exports, for dashboards
// and alert rules to be checked against.
func Names() []string {
	return []string{metricPicksTotal, metricInFlight, metricFailedTotal, metricLatencyEWMA, metricLatency, metricWeight, metricCost, metricRebuildsTotal, metricInterimTotal,
		metricEjected, metricEjectionsTotal, metricPanic, metricReportedUtil, metricReportedQPS, metricReportedFlight, metricReportedAge, metricReportedJava,
		metricZoneLocal, metricZonePicks,
		metricMethodPicks, metricMethodFailed, metricMethodInFlight, metricMethodLatency, metricMethodEjections, metricMethodWeight, metricMethodProviders, metricSubsetProviders}
}

const (
	labelProvider = "provider"
	labelBalancer = "loadbalance"
	labelReason   = "reason"
	labelZone     = "zone"
	labelLocal    = "local"
	labelState    = "state"
	labelService  = "service"
	labelRegistry = "registry"
	labelMode     = "mode"
	labelSet      = "set"
	reasonMember  = "membership"
	reasonWarmup  = "warmup"
)

// providerLabels are the labels of the per-provider metrics: dubbo-go's
// labels of its consumer metrics (metrics/rpc), then provider and
// loadbalance.
var providerLabels = []string{
	constant.TagApplicationName, constant.TagApplicationVersion, constant.TagHostname, constant.TagIp,
	constant.TagInterface, constant.TagMethod, constant.TagGroup, constant.TagVersion,
	labelProvider, labelBalancer,
}

// methodLabels are the labels of the per-method metrics: providerLabels
// without provider.
var methodLabels = append(append([]string(nil), providerLabels[:8]...), labelBalancer)

// balancerLabels are the labels of the per-balancer metrics: dubbo-go's
// application-level labels, then loadbalance and reason.
var balancerLabels = []string{
	constant.TagApplicationName, constant.TagApplicationVersion, constant.TagHostname, constant.TagIp,
	labelBalancer, labelReason,
}

// interimLabels are balancerLabels without the reason.
var interimLabels = balancerLabels[:len(balancerLabels)-1]

// Options configure a Collector. The zero value is ready to use.
type Options struct {
	// Registry is what the Collector reports; default describe.Default.
	Registry *describe.Registry
	// Application and AppVersion label the per-balancer metrics (the
	// per-provider ones take them from the provider URL, as dubbo-go's
	// consumer metrics do).
	Application, AppVersion string
	// Hostname and IP label every metric; default this host's, as
	// dubbo-go finds them.
	Hostname, IP string
	// MaxProviders bounds the providers of a (service, method) that have
	// series of their own; default DefaultMaxProviders. Above it only the
	// notable ones have them, without the latency histogram: the ejected
	// and unavailable, then those whose share of the picks or latency is
	// farthest from the method's mean (DESIGN.md). The per-method series
	// (method_*) are complete either way.
	MaxProviders int
	// AllProviders gives every provider its series, the latency histogram
	// included, whatever their number (about 28 per provider and method).
	AllProviders bool
}

// DefaultMaxProviders is the default of Options.MaxProviders.
const DefaultMaxProviders = 32

// ProvidersEnv is the environment variable that sets the per-provider
// series of the Collector that CollectorFunc registers: "all"
// (Options.AllProviders), or a number (Options.MaxProviders).
const ProvidersEnv = "DUBBOGO_LB_METRICS_PROVIDERS"

// Collector is a prometheus.Collector of the balancers' figures, read from
// a describe.Registry at each scrape.
type Collector struct {
	opts                                                                      Options
	picks, inFlight, failed, ewma, latency, weight, cost, built, interim      *prom.Desc
	ejected, ejections, panic                                                 *prom.Desc
	zoneLocal, zonePicks                                                      *prom.Desc
	mPicks, mFailed, mInFlight, mLatency, mEjections, mWeight, mProvs, subset *prom.Desc
	repUtil, repQPS, repFlight, repAge, repJava                               *prom.Desc
	bounds                                                                    []float64 // histogram bounds, s
	warned                                                                    atomic.Bool

	mu      sync.Mutex         // serialises Collect; guards gen and ledgers
	gen     uint64             // scrapes so far
	ledgers map[string]*ledger // by per-method label values
	scratch []candidate        // notable's work memory
}

// New returns a Collector.
func New(opts Options) *Collector {
	if opts.Registry == nil {
		opts.Registry = describe.Default
	}
	if opts.Hostname == "" {
		opts.Hostname = common.GetLocalHostName()
	}
	if opts.IP == "" {
		opts.IP = common.GetLocalIp()
	}
	if opts.MaxProviders <= 0 {
		opts.MaxProviders = DefaultMaxProviders
	}
	zoned := append(append([]string(nil), methodLabels...), labelZone)
	agg := func(name, help string) *prom.Desc { return prom.NewDesc(name, help, zoned, nil) }
	per := func(name, help string) *prom.Desc { return prom.NewDesc(name, help, providerLabels, nil) }
	c := &Collector{
		opts:      opts,
		picks:     per(metricPicksTotal, "Times the balancer picked the provider for the method, failover retries included."),
		inFlight:  per(metricInFlight, "Calls to the provider for the method in flight, as the lbactive filter counts them."),
		failed:    per(metricFailedTotal, "Calls to the provider for the method that failed."),
		ewma:      per(metricLatencyEWMA, "Peak EWMA of the provider's latency for the method (10 s decay), in seconds."),
		latency:   per(metricLatency, "Latency of the calls to the provider for the method, in seconds."),
		weight:    per(metricWeight, "The balancer's effective weight of the provider: warm weight, LALB's weight, or for ringhash the percentage of the ring it owns."),
		cost:      per(metricCost, "The cost the balancer compares, lower picked: rtadaptive's charged RTT × (calls in flight + 1), loadaware's the same ÷ capacity, in seconds."),
		ejected:   per(metricEjected, "1 while outlier ejection keeps the provider out of the method's picks, else 0."),
		ejections: per(metricEjectionsTotal, "Times outlier ejection ejected the provider for the method."),
		panic: prom.NewDesc(metricPanic, "1 while outlier ejection of the method is in panic mode (it would leave fewer providers than its panic threshold, so every provider serves), else 0.",
			methodLabels, nil),
		repUtil:   per(metricReportedUtil, "Utilization the provider last reported (CPU, or calls in flight over capacity if higher), in [0, 1]; absent for a Dubbo Java provider."),
		repQPS:    per(metricReportedQPS, "Calls per second the provider last reported serving, for every consumer."),
		repFlight: per(metricReportedFlight, "Calls in flight the provider last reported, for every consumer."),
		repAge:    per(metricReportedAge, "Seconds since the provider's last load report reached this consumer."),
		repJava:   per(metricReportedJava, "Dubbo Java's load the provider last reported: its machine's 1-minute load average / CPUs (Java's percentage ÷ 100)."),
		zoneLocal: prom.NewDesc(metricZoneLocal, "Share of the method's calls that zone-aware routing keeps in the consumer's zone (label zone), in [0, 1]: 1 while every call stays local; 1 minus it spills. Absent while zones are off.",
			append(append([]string(nil), methodLabels...), labelZone), nil),
		zonePicks: prom.NewDesc(metricZonePicks, "Picks of the method's providers in a zone (the sum over its current providers; local is true for the consumer's zone): the measured split between zones.",
			append(append([]string(nil), methodLabels...), labelZone, labelLocal), nil),
		built: prom.NewDesc(metricRebuildsTotal, "Snapshots the balancer built, for a change of membership or a warmup refresh.",
			balancerLabels, nil),
		interim: prom.NewDesc(metricInterimTotal, "Picks the balancer made while the snapshot of a new membership was built off the call path, by its interim rule.",
			interimLabels, nil),
		mPicks:     agg(metricMethodPicks, "Times the balancer picked a provider of the zone for the method, failover retries included; counts of providers that left are kept."),
		mFailed:    agg(metricMethodFailed, "Calls to the method's providers of the zone that failed; counts of providers that left are kept."),
		mInFlight:  agg(metricMethodInFlight, "Calls to the method's providers of the zone in flight, as the lbactive filter counts them."),
		mLatency:   agg(metricMethodLatency, "Latency of the calls to the method's providers of the zone, in seconds; counts of providers that left are kept."),
		mEjections: agg(metricMethodEjections, "Times outlier ejection ejected a provider of the zone for the method; counts of providers that left are kept."),
		mWeight:    agg(metricMethodWeight, "Sum of the balancer's effective weights of the method's providers of the zone (the denominator of a provider's weight share)."),
		mProvs: prom.NewDesc(metricMethodProviders, "The method's providers of the zone in the balancer's snapshot, by state (ok, warming, drained, ejected, unavailable).",
			append(zoned, labelState), nil),
		subset: prom.NewDesc(metricSubsetProviders, "Providers of the service in the reference's subset (lb.subset.size), by set: held (referred and connected to), serving (held, neither ejected nor unhealthy), all (the full set the registry lists); mode aperture or rendezvous.",
			[]string{constant.TagApplicationName, constant.TagApplicationVersion, constant.TagHostname, constant.TagIp, labelService, labelRegistry, labelMode, labelSet}, nil),
		ledgers: map[string]*ledger{},
	}
	for i := range rpcstatus.HistogramBuckets {
		c.bounds = append(c.bounds, rpcstatus.HistogramBound(i).Seconds())
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prom.Desc) {
	for _, d := range []*prom.Desc{c.picks, c.inFlight, c.failed, c.ewma, c.latency, c.weight, c.cost, c.built, c.interim, c.ejected, c.ejections, c.panic,
		c.zoneLocal, c.zonePicks, c.repUtil, c.repQPS, c.repFlight, c.repAge, c.repJava,
		c.mPicks, c.mFailed, c.mInFlight, c.mLatency, c.mEjections, c.mWeight, c.mProvs, c.subset} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: per (service, method,
// balancer, zone) the method_* series, per provider those of the bounded
// set, per balancer the rebuilds. Series whose labels coincide (a provider
// listed twice, values that read alike once made valid) are sent once; a
// series Prometheus refuses is skipped, and a panic ends the scrape's
// series, each logged once. Scrapes of one Collector run one at a time.
func (c *Collector) Collect(ch chan<- prom.Metric) {
	defer func() {
		if v := recover(); v != nil {
			c.warn(fmt.Errorf("panic: %v", v))
		}
	}()
	snap := c.opts.Registry.Snapshot()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	firstBalancer, firstMethod, firstProvider := once(), once(), once()
	host, ip := labelValue(c.opts.Hostname), labelValue(c.opts.IP)
	for _, b := range snap.Balancers {
		name := labelValue(b.Name)
		app := []string{labelValue(c.opts.Application), labelValue(c.opts.AppVersion), host, ip, name}
		if firstBalancer(app) {
			c.send(ch, c.built, prom.CounterValue, float64(b.Rebuilds.Membership), append(app, reasonMember)...)
			c.send(ch, c.built, prom.CounterValue, float64(b.Rebuilds.Warmup), append(app, reasonWarmup)...)
			c.send(ch, c.interim, prom.CounterValue, float64(b.Rebuilds.InterimPicks), app...)
		}
		for _, m := range b.Methods {
			if len(m.Providers) == 0 {
				continue
			}
			mv := c.labels(m.Providers[0].URL, m.Method, "", b.Name)
			mv = append(mv[:8:8], name)
			if !firstMethod(mv) {
				continue
			}
			panicked := 0.0
			if m.Panic {
				panicked = 1
			}
			c.send(ch, c.panic, prom.GaugeValue, panicked, mv...)
			if m.Zones != nil {
				c.zones(ch, &m, mv)
			}
			l := c.ledger(mv)
			c.aggregates(ch, l, &m, mv)
			all := c.opts.AllProviders || len(m.Providers) <= c.opts.MaxProviders
			var chosen []int
			if all {
				chosen = make([]int, len(m.Providers))
				for i := range chosen {
					chosen[i] = i
				}
			} else {
				chosen = notable(&m, c.opts.MaxProviders, l, &c.scratch)
			}
			for _, i := range chosen {
				p := &m.Providers[i]
				lv := c.labels(p.URL, m.Method, p.Address, b.Name)
				if firstProvider(lv) { // a provider listed twice: the first
					c.provider(ch, p, lv, all)
				}
			}
		}
	}
	for _, sub := range snap.Subsets {
		sv := []string{labelValue(c.opts.Application), labelValue(c.opts.AppVersion), host, ip,
			labelValue(sub.Service), labelValue(sub.Registry), labelValue(sub.Mode)}
		c.send(ch, c.subset, prom.GaugeValue, float64(sub.Held), append(sv, "held")...)
		c.send(ch, c.subset, prom.GaugeValue, float64(sub.Serving), append(sv, "serving")...)
		c.send(ch, c.subset, prom.GaugeValue, float64(sub.Total), append(sv, "all")...)
	}
	c.sweep()
}

// once returns a function that reports whether it is called with a set of
// label values for the first time.
func once() func(lv []string) bool {
	seen := map[string]bool{}
	return func(lv []string) bool {
		key := strings.Join(lv, "\xff") // no valid label value holds 0xff
		if seen[key] {
			return false
		}
		seen[key] = true
		return true
	}
}

// send sends the metric desc of value v labelled lv; one Prometheus
// refuses is skipped (see warn).
func (c *Collector) send(ch chan<- prom.Metric, desc *prom.Desc, t prom.ValueType, v float64, lv ...string) {
	m, err := prom.NewConstMetric(desc, t, v, lv...)
	if err != nil {
		c.warn(err)
		return
	}
	ch <- m
}

// warn logs, once per Collector, why a series was skipped.
func (c *Collector) warn(err error) {
	if c.warned.CompareAndSwap(false, true) {
		lblog.Warnf("load-balancing metrics: a series was skipped (logged once): %v", err)
	}
}

// labelValue returns s as a Prometheus label value: valid UTF-8 (each run
// of invalid bytes reads U+FFFD) of at most MaxLabelBytes bytes, cut at a
// character boundary. It allocates only for a value it changes.
func labelValue(s string) string {
	if len(s) <= MaxLabelBytes && utf8.ValidString(s) {
		return s
	}
	if len(s) > MaxLabelBytes {
		s = s[:MaxLabelBytes] // what is cut here is cut below anyway
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > MaxLabelBytes {
		cut := MaxLabelBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// zones sends the zone-aware routing metrics of m, labelled mv (the
// per-method labels).
func (c *Collector) zones(ch chan<- prom.Metric, m *describe.Method, mv []string) {
	z := m.Zones
	local := labelValue(z.Local)
	if z.Mode != "off" {
		c.send(ch, c.zoneLocal, prom.GaugeValue, z.LocalShare, append(mv[:len(mv):len(mv)], local)...)
	}
	picks := map[string]int64{}
	var names []string
	for _, p := range m.Providers {
		zone := labelValue(p.Zone)
		if _, ok := picks[zone]; !ok {
			names = append(names, zone)
		}
		picks[zone] += p.Picks
	}
	for _, name := range names {
		isLocal := "false"
		if name == local {
			isLocal = "true"
		}
		c.send(ch, c.zonePicks, prom.CounterValue, float64(picks[name]), append(mv[:len(mv):len(mv)], name, isLocal)...)
	}
}

// provider sends the metrics of p, labelled lv; its latency histogram
// too when histogram is set.
func (c *Collector) provider(ch chan<- prom.Metric, p *describe.Provider, lv []string, histogram bool) {
	c.send(ch, c.picks, prom.CounterValue, float64(p.Picks), lv...)
	c.send(ch, c.inFlight, prom.GaugeValue, float64(p.InFlight), lv...)
	c.send(ch, c.failed, prom.CounterValue, float64(p.Failures), lv...)
	c.send(ch, c.ewma, prom.GaugeValue, p.LatencyMs/1e3, lv...)
	c.send(ch, c.weight, prom.GaugeValue, p.Weight, lv...)
	ejected := 0.0
	if p.State == describe.StateEjected {
		ejected = 1
	}
	c.send(ch, c.ejected, prom.GaugeValue, ejected, lv...)
	c.send(ch, c.ejections, prom.CounterValue, float64(p.Ejections), lv...)
	if p.CostMs > 0 {
		c.send(ch, c.cost, prom.GaugeValue, p.CostMs/1e3, lv...)
	}
	if r := p.Reported; r != nil {
		if r.Utilization != nil {
			c.send(ch, c.repUtil, prom.GaugeValue, *r.Utilization, lv...)
		}
		if r.JavaLoad != nil {
			c.send(ch, c.repJava, prom.GaugeValue, *r.JavaLoad/100, lv...)
		}
		c.send(ch, c.repQPS, prom.GaugeValue, r.QPS, lv...)
		c.send(ch, c.repFlight, prom.GaugeValue, r.InFlight, lv...)
		c.send(ch, c.repAge, prom.GaugeValue, r.AgeSeconds, lv...)
	}
	if histogram && p.Stats != nil {
		var t totals
		t.add(p.Stats)
		c.histogram(ch, c.latency, &t, lv)
	}
}

// histogram sends t's latency histogram as desc, labelled lv.
func (c *Collector) histogram(ch chan<- prom.Metric, desc *prom.Desc, t *totals, lv []string) {
	cumulative := make(map[float64]uint64, len(c.bounds))
	var sum uint64
	for i, bound := range c.bounds {
		sum += uint64(t.buckets[i])
		cumulative[bound] = sum
	}
	h, err := prom.NewConstHistogram(desc, uint64(t.count), float64(t.elapsed)/1e9, cumulative, lv...)
	if err != nil {
		c.warn(err)
		return
	}
	ch <- h
}

// labels returns the values of providerLabels for a provider whose URL is
// u (nil: empty URL labels), as dubbo-go's consumer metrics (metrics/rpc)
// label a call to it, each made a valid label value.
func (c *Collector) labels(u *common.URL, method, address, balancer string) []string {
	var app, appVersion, service, group, version string
	if u != nil {
		app, appVersion = u.GetParam(constant.ApplicationKey, ""), u.GetParam(constant.AppVersionKey, "")
		service, group, version = u.Service(), u.Group(), u.GetParam(constant.VersionKey, "")
	}
	lv := []string{app, appVersion, c.opts.Hostname, c.opts.IP, service, method, group, version, address, balancer}
	for i := range lv {
		lv[i] = labelValue(lv[i])
	}
	return lv
}

// providersFromEnv parses the value of ProvidersEnv: "all", or a positive
// number of providers; anything else (a WARN line unless empty) leaves
// the defaults.
func providersFromEnv(v string) (all bool, most int) {
	v = strings.TrimSpace(v)
	if v == "" {
		return false, 0
	}
	if strings.EqualFold(v, "all") {
		return true, 0
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return false, n
	}
	lblog.Warnf("%s=%q is neither all nor a positive number: at most %d providers per method have series of their own", ProvidersEnv, v, DefaultMaxProviders)
	return false, 0
}

// CollectorFunc is a dubbo-go metrics.CollectorFunc, called once when a
// consumer's configuration enables metrics. With the Prometheus protocol
// it registers a Collector of describe.Default (per-provider series as
// ProvidersEnv says) with the registerer dubbo-go's endpoint gathers;
// with another it says once that the metrics are not exported.
func CollectorFunc(_ metrics.MetricRegistry, u *common.URL) {
	if u.Protocol != constant.ProtocolPrometheus {
		lblog.Warnf("metrics protocol %q: the load-balancing metrics are exported with %q only", u.Protocol, constant.ProtocolPrometheus)
		return
	}
	opts := Options{Application: u.GetParam(constant.ApplicationKey, ""), AppVersion: u.GetParam(constant.AppVersionKey, "")}
	opts.AllProviders, opts.MaxProviders = providersFromEnv(os.Getenv(ProvidersEnv))
	c := New(opts)
	if err := prom.DefaultRegisterer.Register(c); err != nil {
		if _, dup := err.(prom.AlreadyRegisteredError); !dup {
			lblog.Warnf("load-balancing metrics not registered: %v", err)
		}
	}
}
