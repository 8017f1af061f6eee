// Package lbtest has the in-process fakes the balancer tests share:
// providers with real dubbo-go URLs, shaped as a consumer receives them
// from Nacos, helpers that measure traffic shares, Select benchmarks beside
// dubbo-go's built-ins, and Driver, the simulator engine (package simulate)
// with bucketed shares and throughput. Its own tests hold the conformance
// suite every balancer passes (Conformance) and the scale benchmarks.
package lbtest

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/zone"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Service is the interface the fake providers serve.
const Service = "org.example.Greeter"

// Provider returns a provider invoker for 127.0.0.1:port with params, its
// URL merged with a consumer URL as dubbo-go's registry directory does.
// The consumer-only keys of params (urlparam.IsConsumerOnly: zones,
// ejection, …) are the consumer's, as a reference's params are; the others
// are the provider's.
func Provider(port int, params map[string]string) base.Invoker {
	own, consumer := map[string]string{}, map[string]string{}
	for k, v := range params {
		if urlparam.IsConsumerOnly(k) {
			consumer[k] = v
		} else {
			own[k] = v
		}
	}
	return merged(port, own, consumer)
}

// Hostile returns a provider invoker for 127.0.0.1:port that registers
// every one of params itself, consumer-only keys included, beside a
// consumer with consumer's params.
func Hostile(port int, params, consumer map[string]string) base.Invoker {
	return merged(port, params, consumer)
}

// HostileParams are the consumer-only keys a hostile provider registers
// to take a consumer's calls and keep them: its zone as the consumer's,
// zones on at any size, all callers in its zone, ejection off, and a
// fallback and hash key of its choosing. Its own zone (lb.zone, a
// provider's fact) is "evil". The outlier keys are spelled out: package
// outlier's tests import this package (and check the spelling).
var HostileParams = map[string]string{
	urlparam.ZoneKey:               "evil",
	zone.LocalKey:                  "evil",
	zone.MinClusterSizeKey:         "0",
	zone.CallersKey:                "evil:1",
	"outlier.rules":                "none",
	"methods.Say.outlier.rules":    "none",
	"Say.outlier.rules":            "none",
	"loadbalance.fallback":         "roundrobin",
	"hash.attachment":              "user",
	"lb.load-report":               "false",
	"outlier.max-ejection-percent": "0",
	"outlier.consecutive-failures": "1000",
	"methods.Say.hash.attachment":  "user",
	"shortestresponse.slidePeriod": "1ms",
	"loadaware.blackout":           "1h",
	zone.OverprovisioningKey:       "1000",
}

// merged returns the invoker of a provider URL with params merged with a
// marked consumer URL (urlparam.MarkConsumer) with consumer's.
func merged(port int, params, consumer map[string]string) base.Invoker {
	p := parse(fmt.Sprintf("tri://127.0.0.1:%d/%s", port, Service), map[string]string{"release": "dubbo-golang-3.3.2"}, params)
	c := parse("consumer://127.0.0.1/"+Service, consumer)
	urlparam.MarkConsumer(c)
	return base.NewBaseInvoker(p.MergeURL(c))
}

// parse returns the URL addr with the interface Service and the params of
// each of ps, later ones first.
func parse(addr string, ps ...map[string]string) *common.URL {
	q := url.Values{"interface": {Service}}
	for _, p := range ps {
		for k, v := range p {
			q.Set(k, v)
		}
	}
	u, err := common.NewURL(addr + "?" + q.Encode())
	if err != nil {
		panic(err)
	}
	return u
}

// SetConsumer sets key to value in the consumer configuration of every
// provider of list, as a reference param would. Call it before the first
// Select of list.
func SetConsumer(key, value string, list ...base.Invoker) []base.Invoker {
	for _, p := range list {
		urlparam.Consumer(p.GetURL()).SetParam(key, value)
	}
	return list
}

// EjectionOff turns outlier ejection off for the providers of list (the
// outlier.rules=none parameter), for tests of a balancer's own response to
// failures. Call it before the first Select of list.
func EjectionOff(list ...base.Invoker) []base.Invoker {
	return SetConsumer("outlier.rules", "none", list...)
}

// NoEjection returns n providers on ports port, port+1, … with params and
// outlier ejection off (see EjectionOff): the fixtures of tests of a
// balancer's own response, each on ports of its own so that no other test
// of the package shares their statistics.
func NoEjection(port, n int, params map[string]string) []base.Invoker {
	return EjectionOff(providers(port, n, params)...)
}

// Ports returns n providers of weight 100 on ports from, from+1, …
func Ports(from, n int) []base.Invoker { return providers(from, n, map[string]string{"weight": "100"}) }

// N returns n providers of weight 100 on ports 20000, 20001, …
func N(n int) []base.Invoker { return Ports(20000, n) }

// providers returns n providers with params on ports from, from+1, …
func providers(from, n int, params map[string]string) []base.Invoker {
	out := make([]base.Invoker, n)
	for i := range out {
		out[i] = Provider(from+i, params)
	}
	return out
}

// Weighted returns providers on ports 20000, 20001, … with the given weights.
func Weighted(weights ...string) []base.Invoker {
	out := make([]base.Invoker, len(weights))
	for i, w := range weights {
		out[i] = Provider(20000+i, map[string]string{"weight": w})
	}
	return out
}

// Mixed returns n providers whose weights cycle through 100, 200 and 50:
// the weighted lists of the benchmarks.
func Mixed(n int) []base.Invoker {
	w := make([]string, n)
	for i := range w {
		w[i] = []string{"100", "200", "50"}[i%3]
	}
	return Weighted(w...)
}

// Zoned returns providers of weight 100 on ports from, from+1, …: n[k] of
// them in zone zones[k] (the lb.zone parameter), each URL carrying the
// consumer's params (as dubbo-go merges a reference's params into every
// provider URL).
func Zoned(from int, zones []string, n []int, consumer map[string]string) []base.Invoker {
	var out []base.Invoker
	for k, z := range zones {
		params := map[string]string{"lb.zone": z}
		maps.Copy(params, consumer)
		out = append(out, providers(from+len(out), n[k], params)...)
	}
	return out
}

// Started returns a provider of weight 100 with a warmup of warmup that
// started at start.
func Started(port int, start time.Time, warmup time.Duration) base.Invoker {
	return Provider(port, map[string]string{
		"weight":    "100",
		"timestamp": strconv.FormatInt(start.Unix(), 10),
		"warmup":    strconv.FormatInt(int64(warmup/time.Second), 10),
	})
}

// Call returns an invocation of method with args.
func Call(method string, args ...any) base.Invocation {
	return invocation.NewRPCInvocation(method, args, nil)
}

// Tol is the tolerance, in percentage points, of the share of a provider
// that gets each of picks independent draws with probability p: five
// standard deviations of the binomial share, so a correct balancer misses
// it for fewer than one seed in a million. Tests run on a seeded source,
// which makes them deterministic; Tol says how far any seed may stray.
func Tol(p float64, picks int) float64 { return 5 * 100 * math.Sqrt(p*(1-p)/float64(picks)) }

// Shares runs picks selections and returns each provider's share in
// percent, in the order of list.
func Shares(lb loadbalance.LoadBalance, list []base.Invoker, inv base.Invocation, picks int) []float64 {
	counts := Counts(lb, list, inv, picks)
	out := make([]float64, len(list))
	for i, c := range counts {
		out[i] = 100 * float64(c) / float64(picks)
	}
	return out
}

// Counts runs picks selections and counts how often each provider of list
// was chosen. A pick outside list panics: that is a bug worth a stack.
func Counts(lb loadbalance.LoadBalance, list []base.Invoker, inv base.Invocation, picks int) []int {
	pos := make(map[base.Invoker]int, len(list))
	for i, ivk := range list {
		pos[ivk] = i
	}
	counts := make([]int, len(list))
	for range picks {
		got := lb.Select(list, inv)
		i, ok := pos[got]
		if !ok {
			panic(fmt.Sprintf("Select returned %v, not in the list", got))
		}
		counts[i]++
	}
	return counts
}

// Clock is a settable wall clock for warmup tests, safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a Clock set to t.
func NewClock(t time.Time) *Clock {
	c := new(Clock)
	c.ns.Store(t.UnixNano())
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// Nanos is a monotonic clock (ns) that a test sets and advances by hand,
// from one goroutine: its Now is an lbenv.Env.Now.
type Nanos struct{ NS int64 }

// Now returns the clock's time, NS.
func (c *Nanos) Now() int64 { return c.NS }

// CaptureLogs collects the lines the module logs (package lblog) until
// the test ends, and returns what reads them.
func CaptureLogs(t testing.TB) func() []string {
	var mu sync.Mutex
	var got []string
	t.Cleanup(lblog.Capture(func(line string) {
		mu.Lock()
		got = append(got, line)
		mu.Unlock()
	}))
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// Feed records n completions of method Say on p, one per millisecond from
// at (ns), each taking lat and failing if fail, as the lbactive filter
// would.
func Feed(p base.Invoker, at int64, n int, lat time.Duration, fail bool) {
	pr := rpcstatus.Of(p.GetURL())
	m := pr.Method("Say")
	for k := range n {
		s := at + int64(k)*int64(time.Millisecond)
		pr.Begin(m, s).End(s+int64(lat), fail)
	}
}

// FeedAll records n completions of lat each, without error, on every
// provider of list, as Feed does.
func FeedAll(list []base.Invoker, at int64, n int, lat time.Duration) {
	for _, p := range list {
		Feed(p, at, n, lat, false)
	}
}

// FeedCycle records, as Feed does, calls completions on every provider of
// list, one per millisecond from ago before now: the i-th provider's take
// 1+i%4 ms (latencies cycling from 1 to 4 ms) and, when failEvery > 0,
// fail on every failEvery-th provider (i%failEvery == 0). It returns list
// and now (rpcstatus.Nanotime), for what a caller records besides: the
// statistics of the benchmarks' lists.
func FeedCycle(list []base.Invoker, ago time.Duration, calls, failEvery int) ([]base.Invoker, int64) {
	now := rpcstatus.Nanotime()
	for i, p := range list {
		Feed(p, now-int64(ago), calls, time.Duration(1+i%4)*time.Millisecond, failEvery > 0 && i%failEvery == 0)
	}
	return list, now
}

// OutlierFail records n failures without a status code (transport errors)
// of method Say on p, ending at now (the filter's clock), for outlier
// detection alone (rpcstatus.Stats.Judge): the statistics that balancers
// read themselves stay as they are, so that a test sees ejection apart
// from a balancer's own response to failures.
func OutlierFail(p base.Invoker, now int64, n int) {
	s := rpcstatus.Of(p.GetURL()).Method("Say")
	for range n {
		s.Judge(now, true, rpcstatus.NoCode)
	}
}

// OutlierSucceed records a success of method Say on p at now for outlier
// detection alone, as OutlierFail does.
func OutlierSucceed(p base.Invoker, now int64) {
	rpcstatus.Of(p.GetURL()).Method("Say").Judge(now, false, 0)
}
