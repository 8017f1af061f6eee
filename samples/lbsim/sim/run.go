package sim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/filter"
	"github.com/dubbogo-lb/lb/internal/assembly/simulate"
	"github.com/dubbogo-lb/lb/internal/subset"
	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
	"github.com/dubbogo-lb/lb/warmup"
)

// Service is the interface the fake providers serve.
const Service = "org.example.SimGreeter"

// DefaultBucket is the width of the time buckets of a Result.
const DefaultBucket = time.Second

// Origin and WallOrigin are the virtual clocks' readings at the start of
// a run (package simulate).
const Origin = simulate.Origin

var WallOrigin = simulate.WallOrigin

// Options configure one run.
type Options struct {
	// Seed seeds the simulator's randomness (jitter, injected errors) and
	// that of this module's balancers.
	Seed uint64
	// Bucket is the width of the result's time buckets; default
	// DefaultBucket.
	Bucket time.Duration
	// EjectionOff turns outlier ejection off (outlier.rules=none on every
	// provider URL), to show a balancer on its own.
	EjectionOff bool
}

// Errors a fake provider returns.
var (
	// ErrInjected is the error of a call failed by Provider.ErrorRate.
	ErrInjected = simulate.ErrInjected
	// ErrNotSimulated is returned by a fake provider called outside a
	// simulated caller.
	ErrNotSimulated = simulate.ErrNotSimulated
)

// ports hands out distinct ports, so that the providers of concurrent or
// successive runs are distinct everywhere (rpcstatus, dubbo-go's counters).
var ports atomic.Int64

// run is the state of one simulation: the engine of package simulate with
// the scenario's providers, and what the run measured.
type run struct {
	sc     *Scenario
	s      *simulate.Sim
	invs   []base.Invoker
	others []*simulate.Consumer // consumers beside the Sim's own
	views  [][]base.Invoker     // each of others' invokers of the providers
	loads  []*load              // the providers' load, when they report it
	rec    recorder
}

// server returns the Server of provider spec: simulate's model with the
// spec's steps of latency, error rate and capacity, jittered by the
// scenario's Jitter, reporting its load to ld when the provider reports.
func (r *run) server(spec *Provider, ld *load) simulate.Server {
	elapsed := func(now int64) time.Duration { return time.Duration(now - Origin) }
	m := simulate.Model{
		Latency:   func(now int64) time.Duration { return spec.LatencyAt(elapsed(now)) },
		ErrorRate: func(now int64) float64 { return spec.ErrorRateAt(elapsed(now)) },
		Jitter:    r.sc.Jitter,
		Exp:       spec.Exp,
		Workers:   spec.maxCapacity(),
		WorkersAt: func(now int64) int { return spec.CapacityAt(elapsed(now)) },
	}
	if ld != nil {
		m.Served = ld.begin
	}
	return m.Server()
}

// Run simulates scenario sc with the balancer registered as name.
func Run(sc Scenario, name string, opts Options) (*Result, error) {
	r, err := newRun(sc, name, opts)
	if err != nil {
		return nil, err
	}
	return r.execute(), nil
}

// newRun prepares a run: the balancer, the filter and the providers.
func newRun(sc Scenario, name string, opts Options) (*run, error) {
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if opts.Bucket <= 0 {
		opts.Bucket = DefaultBucket
	}
	if sc.Method == "" {
		sc.Method = "SayHello"
	}
	r := &run{sc: &sc}
	if sc.Reports {
		// Every balancer's calls ask for the reports (as loadaware's do
		// by default), so that they all run through the same filter work.
		params := map[string]string{filter.LoadReportKey: "true"}
		for k, v := range sc.Params {
			params[k] = v
		}
		sc.Params = params
		r.loads = make([]*load, len(sc.Providers))
		for i := range r.loads {
			r.loads[i] = newLoad(&sc.Providers[i])
		}
	}
	if z := sc.Zones; z != nil {
		// The consumer's zone-aware routing, as reference params reach
		// every provider URL.
		params := map[string]string{"lb.zone.local": z.Local}
		if !z.Learned {
			params["lb.zone.callers"] = zoneCallers(z.Callers)
		}
		for k, v := range sc.Params {
			params[k] = v
		}
		sc.Params = params
	}
	s := simulate.New(simulate.Options{
		Ask:        loadreport.AskKey,
		Answer:     r.answer,
		Rand:       rand.New(rand.NewPCG(opts.Seed, 0x5eed)),
		Method:     sc.Method,
		Keys:       sc.Keys,
		OnDone:     r.rec.done,
		OnUnrouted: func(_ base.Invoker, now int64) { r.rec.unrouted(now) },
		OnPanic:    func(v any, now int64) { r.rec.panicked(fmt.Sprint(v), now) },
	})
	// Only one simulated caller runs at a time, so one source serves them.
	rnd := rand.New(rand.NewPCG(opts.Seed, 0xba1)).Uint64
	lb, err := newBalancer(name, lbenv.Env{Now: s.Clock().Now, Wall: s.Clock().Wall, Rand: rnd})
	if err != nil {
		return nil, err
	}
	s.LB, s.DubboActive = lb.lb, lb.dubboActive
	r.s = s
	n := int64(len(sc.Providers))
	port := 20000 + int((ports.Add(n)-n)%40000)
	for i := range sc.Providers {
		spec := &sc.Providers[i]
		u, err := providerURL(port+i, spec, sc.Params, opts.EjectionOff)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", spec.Name, err)
		}
		var ld *load
		if r.loads != nil {
			ld = r.loads[i]
		}
		r.invs = append(r.invs, s.Add(u, r.server(spec, ld)))
	}
	// The other consumers: their own balancer and their own invokers of
	// the same providers (distinct URLs, so distinct statistics).
	for k := 1; k < sc.Consumers; k++ {
		lb, err := newBalancer(name, lbenv.Env{Now: s.Clock().Now, Wall: s.Clock().Wall, Rand: rnd})
		if err != nil {
			return nil, err
		}
		var view []base.Invoker
		for i := range sc.Providers {
			u, err := providerURL(port+i, &sc.Providers[i], sc.Params, opts.EjectionOff)
			if err != nil {
				return nil, err
			}
			view = append(view, s.View(u, r.invs[i]))
		}
		r.others = append(r.others, &simulate.Consumer{LB: lb.lb})
		r.views = append(r.views, view)
	}
	r.rec.init(&sc, opts.Bucket)
	r.res().Balancer, r.res().Note, r.res().EjectionOff = name, lb.note, opts.EjectionOff
	return r, nil
}

// execute runs the simulation to its end and returns what it measured.
func (r *run) execute() *Result {
	sc, s := r.sc, r.s
	r.membership()
	for i := range sc.Providers {
		if j := sc.Providers[i].Join; j > 0 {
			s.At(Origin+int64(j), r.membership)
		}
		if l := sc.Providers[i].Leave; l > 0 {
			s.At(Origin+int64(l), r.membership)
		}
	}
	if r.loads != nil {
		r.sample()
	}
	n := max(sc.Consumers, 1)
	s.Callers(sc.Callers / n)
	for k, c := range r.others {
		s.CallersOf(c, sc.Callers/n+boolInt(k+1 < sc.Callers%n))
	}
	s.Run(Origin + int64(sc.Duration))
	s.Stop()
	return r.rec.finish()
}

func (r *run) res() *Result { return &r.rec.res }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// membership sets each consumer's invoker list to the providers present
// now, or to its subset of them when the scenario subsets. The subsets
// drawn at the start are the result's Subsets.
func (r *run) membership() {
	t := r.s.Clock().Elapsed()
	var present []int
	for i := range r.invs {
		s := &r.sc.Providers[i]
		if s.Join <= t && (s.Leave == 0 || t < s.Leave) {
			present = append(present, i)
		}
	}
	start := r.res().Subsets == nil && r.sc.Subset.Size > 0
	for k := range max(r.sc.Consumers, 1) {
		held := r.subset(k, present)
		if start {
			r.res().Subsets = append(r.res().Subsets, held)
		}
		invs := r.invs
		if k > 0 {
			invs = r.views[k-1]
		}
		list := make([]base.Invoker, len(held))
		for j, i := range held {
			list[j] = invs[i]
		}
		if k == 0 {
			r.s.List = list
		} else {
			r.others[k-1].List = list
		}
	}
}

// subset returns the providers (indices of the scenario's list) of
// present that consumer k holds: all of them, or its subset as the
// discovery draws it, from the providers' weight and zone as their URLs
// say, keyed by stable addresses given by their place in the list.
func (r *run) subset(k int, present []int) []int {
	sub := r.sc.Subset
	if sub.Size <= 0 {
		return present
	}
	ps := make([]subset.Provider, len(present))
	for j, i := range present {
		u := r.invs[i].GetURL()
		ps[j] = subset.Provider{
			Key:    fmt.Sprintf("10.%d.%d.%d:20880", i>>16&255, i>>8&255, i&255),
			Weight: warmup.Parse(u, "", time.Time{}).Weight,
			Zone:   urlparam.ServiceParam(u, urlparam.ZoneKey),
		}
	}
	c := subset.Consumer{ID: fmt.Sprintf("consumer-%d", k)}
	if !sub.Rendezvous {
		c.Index, c.Count = k, max(r.sc.Consumers, 1)
	}
	idx := subset.Select(nil, ps, c, subset.Options{Size: sub.Size, Zones: r.sc.Zones != nil}, nil)
	for j, i := range idx {
		idx[j] = present[i]
	}
	return idx
}

// providerURL returns the URL of a fake provider as a consumer receives it
// from the registry: the provider's parameters merged with the consumer's
// (its consumer-only keys among params, on a marked consumer URL, as a
// reference's params are), with outlier ejection off if ejectionOff.
func providerURL(port int, p *Provider, params map[string]string, ejectionOff bool) (*common.URL, error) {
	q, cq := url.Values{}, url.Values{}
	for k, v := range params {
		if urlparam.IsConsumerOnly(k) {
			cq.Set(k, v)
		} else {
			q.Set(k, v)
		}
	}
	if ejectionOff {
		cq.Set("outlier.rules", "none")
	}
	q.Set(constant.InterfaceKey, Service)
	q.Set(constant.ReleaseKey, "dubbo-golang-3.3.2")
	if p.Weight != "" {
		q.Set(constant.WeightKey, p.Weight)
	}
	if p.Zone != "" {
		q.Set(urlparam.ZoneKey, p.Zone)
	}
	if p.Warmup > 0 {
		// dubbo-go providers write their export time in seconds and the
		// warmup in seconds.
		q.Set(constant.TimestampKey, strconv.FormatInt(WallOrigin.Add(p.Join).Unix(), 10))
		q.Set(constant.WarmupKey, strconv.FormatFloat(p.Warmup.Seconds(), 'f', -1, 64))
	}
	pu, err := common.NewURL(fmt.Sprintf("tri://127.0.0.1:%d/%s?%s", port, Service, q.Encode()))
	if err != nil {
		return nil, err
	}
	cq.Set(constant.InterfaceKey, Service)
	cu, err := common.NewURL("consumer://127.0.0.1/" + Service + "?" + cq.Encode())
	if err != nil {
		return nil, err
	}
	urlparam.MarkConsumer(cu)
	return pu.MergeURL(cu), nil
}

// zoneCallers formats callers as lb.zone.callers, in zone order.
func zoneCallers(callers map[string]float64) string {
	var pairs []string
	for _, z := range slices.Sorted(maps.Keys(callers)) {
		pairs = append(pairs, z+":"+strconv.FormatFloat(callers[z], 'g', -1, 64))
	}
	return strings.Join(pairs, ",")
}
