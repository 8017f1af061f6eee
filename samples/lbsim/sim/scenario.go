package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Step changes a provider's service time, and the share of its calls that
// fail, at a virtual time.
type Step struct {
	// At is the time since the start of the simulation.
	At time.Duration
	// Latency is the service time from then on.
	Latency time.Duration
	// ErrorRate, in [0, 1], is the share of calls that fail from then on.
	ErrorRate float64
	// Capacity, when > 0, is the provider's capacity from then on.
	Capacity int
}

// Provider describes one fake provider.
type Provider struct {
	// Name labels the provider in tables and plots.
	Name string
	// Latency is the service time of a call at the start; must be > 0.
	Latency time.Duration
	// Steps change Latency over time; their At must increase.
	Steps []Step
	// Capacity is how many calls the provider serves at once; the others
	// wait in arrival order. 0 means no limit (a pure delay).
	Capacity int
	// ErrorRate, in [0, 1], is the probability that a call fails (after its
	// service time, like a provider that answers with an error).
	ErrorRate float64
	// Weight is the provider's weight URL parameter; empty sets none
	// (weight 100).
	Weight string
	// Join is when the provider enters the consumer's invoker list; 0 means
	// from the start. Its timestamp URL parameter is the join time.
	Join time.Duration
	// Warmup, when > 0, is the provider's warmup URL parameter.
	Warmup time.Duration
	// Leave, when > 0, is when the provider leaves the invoker list.
	Leave time.Duration
	// Exp draws service times from an exponential distribution of mean
	// Latency (instead of Latency ± Jitter).
	Exp bool
	// Zone is the provider's zone (its lb.zone URL parameter); "" none.
	Zone string
}

// CapacityAt returns the provider's capacity at t after the start (0: no
// limit).
func (p *Provider) CapacityAt(t time.Duration) int {
	c := p.Capacity
	for _, s := range p.Steps {
		if s.At > t {
			break
		}
		if s.Capacity > 0 {
			c = s.Capacity
		}
	}
	return c
}

// maxCapacity is the largest capacity the provider ever has.
func (p *Provider) maxCapacity() int {
	c := p.Capacity
	for _, s := range p.Steps {
		c = max(c, s.Capacity)
	}
	return c
}

// LatencyAt returns the service time of a call that starts being served at
// t after the start.
func (p *Provider) LatencyAt(t time.Duration) time.Duration {
	d, _ := p.at(t)
	return d
}

// ErrorRateAt returns the share of failing calls among those that start
// being served at t after the start.
func (p *Provider) ErrorRateAt(t time.Duration) float64 {
	_, e := p.at(t)
	return e
}

// at returns the latency and the error rate from the latest step at or
// before t.
func (p *Provider) at(t time.Duration) (time.Duration, float64) {
	d, e := p.Latency, p.ErrorRate
	for _, s := range p.Steps {
		if s.At > t {
			break
		}
		d, e = s.Latency, s.ErrorRate
	}
	return d, e
}

// Mark is a scripted change worth showing on a plot.
type Mark struct {
	At    time.Duration
	Label string
}

// Scenario is a simulated deployment: providers, a closed loop of callers
// and a duration.
type Scenario struct {
	// Name is what -scenario selects.
	Name string
	// Title is a one-line description for tables and plots.
	Title string
	// Duration is the virtual time simulated.
	Duration time.Duration
	// Callers is the number of callers in the closed loop: each sends its
	// next call as soon as the previous one returns.
	Callers int
	// Jitter, in [0, 1), spreads each service time uniformly by ±Jitter of
	// its value, so providers are not perfectly regular.
	Jitter float64
	// Method is the method called; default "SayHello".
	Method string
	// Keys is the number of distinct keys the calls carry in turn (one
	// string argument), for consistent hashing; 0: calls without
	// arguments, which a hashing balancer sends to one provider. The
	// built-in scenarios use DefaultKeys.
	Keys int
	// Providers are the providers, in the order of the invoker list.
	Providers []Provider
	// Marks are the scripted changes, for plots.
	Marks []Mark
	// Params are URL parameters of every provider, as a reference's
	// params reach them (outlier.*, hash.*…).
	Params map[string]string
	// Consumers is the number of independent consumers (0 or 1: one),
	// each with its own balancer, statistics and an equal share of the
	// callers: the case where each sees only its own calls in flight.
	Consumers int
	// Reports makes the providers answer load reports as the lbload
	// filter does (package providerload): every 100 ms each samples its
	// busy slots over its capacity (its utilization), its calls in flight
	// and its rates, smoothed over 1 s.
	Reports bool
	// Zones, when set, makes the consumer zone-aware; the zones table
	// (WriteZones) compares the calls that leave its zone with Envoy's
	// formula, phase by phase.
	Zones *Zones
	// Failure, when set, is a provider's spell of failure, which the
	// failure table (WriteFailures) measures; the simulator then runs
	// this module's balancers with outlier ejection off and on.
	Failure *Failure
	// Subset, when its Size is set, gives each consumer only its subset of
	// the providers present, as the discovery does with lb.subset.size.
	Subset Subset
}

// Subset is how each consumer of a scenario draws its subset of the
// providers (package internal/subset, as the discovery calls it). The
// providers' keys are stable addresses given by their place in the list,
// so a scenario's subsets are the same in every run; each consumer's is
// drawn again whenever a provider joins or leaves. Ejection does not grow
// the subsets here (the discovery's feedback is not simulated).
type Subset struct {
	// Size is lb.subset.size; 0 gives every consumer every provider.
	Size int
	// Rendezvous draws by rendezvous hashing on each consumer's ID, as
	// when the consumers are unknown; otherwise by deterministic aperture
	// from each consumer's index among the scenario's Consumers.
	Rendezvous bool
}

// Failure is a spell during which a provider fails.
type Failure struct {
	// Provider is the index of the provider that fails.
	Provider int
	// From and To bound the spell; To 0 means to the end.
	From, To time.Duration
}

// Zones is a zone-aware scenario's consumer side.
type Zones struct {
	// Local is the consumer's zone (lb.zone.local).
	Local string
	// Callers is the share of the calls each zone's consumers send
	// (lb.zone.callers).
	Callers map[string]float64
	// Learned leaves lb.zone.callers unset: the consumer takes the
	// callers from the zones' provisioned weights (Callers is then only
	// the truth the results are compared with).
	Learned bool
	// Phases start at these times (the first at 0): the zones table
	// reports each phase, from a second after its start.
	Phases []time.Duration
}

// maxCallers bounds Callers: each is a goroutine.
const maxCallers = 100_000

// Validate reports the first thing wrong with s, or nil.
func (s *Scenario) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Duration <= 0 {
		bad("duration %v: must be > 0", s.Duration)
	}
	if s.Callers < 1 || s.Callers > maxCallers {
		bad("callers %d: must be in [1, %d]", s.Callers, maxCallers)
	}
	if !(s.Jitter >= 0 && s.Jitter < 1) {
		bad("jitter %v: must be in [0, 1)", s.Jitter)
	}
	if len(s.Providers) == 0 {
		bad("no providers")
	}
	for i := range s.Providers {
		p := &s.Providers[i]
		name := p.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		if p.Latency <= 0 {
			bad("provider %s: latency %v must be > 0", name, p.Latency)
		}
		for j, st := range p.Steps {
			if st.Latency <= 0 {
				bad("provider %s: step %d latency %v must be > 0", name, j, st.Latency)
			}
			if st.At < 0 || (j > 0 && st.At <= p.Steps[j-1].At) {
				bad("provider %s: step %d at %v: steps must be at increasing times >= 0", name, j, st.At)
			}
			if st.Capacity < 0 || (st.Capacity > 0 && p.Capacity == 0) {
				bad("provider %s: step %d capacity %d: must be >= 0, and only on a provider with a capacity", name, j, st.Capacity)
			}
			if !(st.ErrorRate >= 0 && st.ErrorRate <= 1) {
				bad("provider %s: step %d error rate %v must be in [0, 1]", name, j, st.ErrorRate)
			}
		}
		if p.Exp && p.Capacity == 0 {
			bad("provider %s: exponential service times need a capacity", name)
		}
		if p.Capacity < 0 {
			bad("provider %s: capacity %d must be >= 0 (0: unlimited)", name, p.Capacity)
		}
		if !(p.ErrorRate >= 0 && p.ErrorRate <= 1) {
			bad("provider %s: error rate %v must be in [0, 1]", name, p.ErrorRate)
		}
		if p.Join < 0 || p.Warmup < 0 || p.Leave < 0 {
			bad("provider %s: join, warmup and leave must be >= 0", name)
		}
		if p.Leave > 0 && p.Leave <= p.Join {
			bad("provider %s: leaves at %v, before it joins at %v", name, p.Leave, p.Join)
		}
	}
	if s.Consumers < 0 || s.Consumers > s.Callers {
		bad("consumers %d: must be in [0, callers]", s.Consumers)
	}
	if s.Subset.Size < 0 {
		bad("subset size %d: must be >= 0 (0: off)", s.Subset.Size)
	}
	if f := s.Failure; f != nil {
		if f.Provider < 0 || f.Provider >= len(s.Providers) {
			bad("failure of provider %d: there are %d providers", f.Provider, len(s.Providers))
		}
		if f.From < 0 || (f.To != 0 && f.To <= f.From) {
			bad("failure from %v to %v: must start at >= 0 and end after it starts", f.From, f.To)
		}
	}
	return errors.Join(errs...)
}

// Scale returns a copy of s with every time (duration, steps, joins,
// leaves, warmups, marks) multiplied by f, latencies unchanged: the same
// story, shorter or longer.
func (s Scenario) Scale(f float64) Scenario {
	if !(f > 0) || math.IsInf(f, 0) {
		return s
	}
	sc := func(d time.Duration) time.Duration { return time.Duration(math.Round(float64(d) * f)) }
	s.Duration = sc(s.Duration)
	s.Providers = slices.Clone(s.Providers)
	for i := range s.Providers {
		p := &s.Providers[i]
		p.Steps = slices.Clone(p.Steps)
		for j := range p.Steps {
			p.Steps[j].At = sc(p.Steps[j].At)
		}
		p.Join, p.Leave, p.Warmup = sc(p.Join), sc(p.Leave), sc(p.Warmup)
	}
	s.Marks = slices.Clone(s.Marks)
	for i := range s.Marks {
		s.Marks[i].At = sc(s.Marks[i].At)
	}
	if f := s.Failure; f != nil {
		s.Failure = &Failure{Provider: f.Provider, From: sc(f.From), To: sc(f.To)}
	}
	return s
}

const ms = time.Millisecond

// DefaultKeys is the number of keys of the built-in scenarios.
const DefaultKeys = 1000

// Brpc is brpc's LALB experiment: three providers sleeping 1, 2 and 3 ms
// with ample capacity, 50 callers; halfway the latencies are reversed.
func Brpc() Scenario {
	half := 10 * time.Second
	return Scenario{
		Name:     "brpc",
		Title:    "brpc's experiment: providers at 1/2/3 ms, 50 callers, latencies reversed halfway",
		Duration: 2 * half,
		Callers:  50,
		Keys:     DefaultKeys,
		Jitter:   0.05,
		Providers: []Provider{
			{Name: "p0 1→3ms", Latency: 1 * ms, Steps: []Step{{At: half, Latency: 3 * ms}}},
			{Name: "p1 2ms", Latency: 2 * ms},
			{Name: "p2 3→1ms", Latency: 3 * ms, Steps: []Step{{At: half, Latency: 1 * ms}}},
		},
		Marks: []Mark{{half, "reversed"}},
	}
}

// BrpcConsumers is the number of consumers of BrpcMany.
const BrpcConsumers = 16

// BrpcMany is brpc's experiment with its 50 callers spread over
// BrpcConsumers independent consumers, each with its own balancer and
// statistics, sharing the three providers: each consumer sees about a
// sixteenth of the calls.
func BrpcMany() Scenario {
	s := Brpc()
	s.Name = "brpc16"
	s.Title = "brpc's experiment over 16 consumers of 3 or 4 callers each, sharing the providers"
	s.Consumers = BrpcConsumers
	return s
}

// Capacity has three providers of equal latency that serve 4, 8 and 16
// calls at once and queue the rest, with enough callers to saturate them.
func Capacity() Scenario {
	return Scenario{
		Name:     "capacity",
		Title:    "2 ms providers serving 4/8/16 calls at once (FIFO queue), 48 callers",
		Duration: 10 * time.Second,
		Callers:  48,
		Keys:     DefaultKeys,
		Jitter:   0.05,
		Providers: []Provider{
			{Name: "p0 cap 4", Latency: 2 * ms, Capacity: 4},
			{Name: "p1 cap 8", Latency: 2 * ms, Capacity: 8},
			{Name: "p2 cap 16", Latency: 2 * ms, Capacity: 16},
		},
	}
}

// WideCopies is how many copies of each provider of brpc's experiment and
// of Capacity the wide scenarios have, and WideSubsetSize the subset each
// of their consumers holds when they subset: a third of the 12 providers,
// each held by 16·4/12 = 5⅓ consumers on average.
const (
	WideCopies     = 4
	WideSubsetSize = 4
)

// BrpcWide is BrpcMany on a fleet WideCopies times as wide: 12 providers
// (four at 1 ms turning 3 ms, four at 2 ms, four at 3 ms turning 1 ms) and
// 200 callers over BrpcConsumers consumers, each over every provider.
func BrpcWide() Scenario {
	s := widen(BrpcMany(), WideCopies)
	s.Name = "brpc-wide"
	s.Title = "brpc's experiment ×4: 12 providers at 1/2/3 ms (reversed halfway), 200 callers over 16 consumers, full set"
	return s
}

// BrpcWideSubsets is BrpcWide with each consumer holding WideSubsetSize
// providers, drawn by aperture, or by rendezvous hashing when rendezvous.
func BrpcWideSubsets(rendezvous bool) Scenario {
	return subsetted(BrpcWide(), rendezvous)
}

// CapacityWide is Capacity on a fleet WideCopies times as wide, with
// BrpcConsumers consumers: 12 providers at 2 ms serving 4, 8 or 16 calls
// at once (four of each), 192 callers (1.7 times the 112 slots, as in
// Capacity), 12 per consumer, each over every provider.
func CapacityWide() Scenario {
	s := widen(Capacity(), WideCopies)
	s.Name = "capacity-wide"
	s.Title = "capacity ×4: 12 providers at 2 ms of 4/8/16 slots, 192 callers over 16 consumers, full set"
	s.Consumers = BrpcConsumers
	return s
}

// CapacityWideSubsets is CapacityWide with each consumer holding
// WideSubsetSize providers, drawn by aperture, or by rendezvous hashing
// when rendezvous.
func CapacityWideSubsets(rendezvous bool) Scenario {
	return subsetted(CapacityWide(), rendezvous)
}

// widen returns s with copies of each provider (copy k of p named
// "p/k", the copies of the list one after the other) and copies times
// the callers.
func widen(s Scenario, copies int) Scenario {
	var ps []Provider
	for k := range copies {
		for _, p := range s.Providers {
			p.Name = fmt.Sprintf("%s/%d", p.Name, k)
			ps = append(ps, p)
		}
	}
	s.Providers = ps
	s.Callers *= copies
	return s
}

// subsetted returns the wide scenario s with subsets of WideSubsetSize,
// named after its mode.
func subsetted(s Scenario, rendezvous bool) Scenario {
	s.Subset = Subset{Size: WideSubsetSize, Rendezvous: rendezvous}
	mode := "aperture"
	if rendezvous {
		mode = "rendezvous"
	}
	s.Name += "-" + mode
	s.Title = strings.Replace(s.Title, "full set", fmt.Sprintf("subsets of %d by %s", WideSubsetSize, mode), 1)
	return s
}

// Slowdown has ten 2 ms providers; one turns 20 times slower from 10 s to
// 20 s, then recovers.
func Slowdown() Scenario {
	from, to := 10*time.Second, 20*time.Second
	ps := alike(10, Provider{Latency: 2 * ms})
	ps[0].Name = "p0 (20× slower)"
	ps[0].Steps = []Step{{At: from, Latency: 40 * ms}, {At: to, Latency: 2 * ms}}
	return Scenario{
		Name:      "slowdown",
		Title:     "10 providers at 2 ms, p0 20× slower during the middle third, 40 callers",
		Duration:  30 * time.Second,
		Callers:   40,
		Keys:      DefaultKeys,
		Jitter:    0.05,
		Providers: ps,
		Marks:     []Mark{{from, "p0 slow"}, {to, "p0 recovers"}},
	}
}

// Join has four warm providers; at 10 s a fifth joins with a 10 s warmup
// (timestamp and warmup URL parameters) and is cold: 10 ms at first,
// reaching the others' 2 ms after 7.5 s.
func Join() Scenario {
	at := 10 * time.Second
	ps := alike(5, Provider{Latency: 2 * ms, Capacity: 8})
	ps[4] = Provider{
		Name: "p4 (joins cold)", Latency: 10 * ms, Capacity: 8,
		Steps: []Step{
			{At: at + 2500*ms, Latency: 6 * ms},
			{At: at + 5000*ms, Latency: 4 * ms},
			{At: at + 7500*ms, Latency: 2 * ms},
		},
		Join: at, Warmup: 10 * time.Second,
	}
	return Scenario{
		Name:      "join",
		Title:     "4 providers at 2 ms, 8 slots each; a cold 5th joins after a third of the run with a warmup of a third, 36 callers",
		Duration:  30 * time.Second,
		Callers:   36,
		Keys:      DefaultKeys,
		Jitter:    0.05,
		Providers: ps,
		Marks:     []Mark{{at, "p4 joins"}},
	}
}

// FailFast is the case outlier ejection is for: one of five equal 2 ms
// providers answers every call with an error in 0.1 ms from 10 s to 30 s.
// With ejection it is out after five failures in a row for 30 s, and gets
// traffic again once that is over.
func FailFast() Scenario {
	return failing("failfast", "5 providers at 2 ms; p0 fails every call in 0.1 ms from 10 s to 30 s, 20 callers",
		Step{At: 10 * time.Second, Latency: ms / 10, ErrorRate: 1}, "p0 (fails fast)")
}

// Hang has one of five equal 2 ms providers hang every call until its 1 s
// timeout, which fails it, from 10 s to 30 s.
func Hang() Scenario {
	return failing("hang", "5 providers at 2 ms; p0 hangs every call until its 1 s timeout from 10 s to 30 s, 20 callers",
		Step{At: 10 * time.Second, Latency: time.Second, ErrorRate: 1}, "p0 (hangs)")
}

// failing is five 2 ms providers of which p0 fails as step says until
// 30 s, over 50 s with 20 callers.
func failing(name, title string, step Step, p0 string) Scenario {
	from, to := step.At, 30*time.Second
	ps := alike(5, Provider{Latency: 2 * ms})
	ps[0].Name = p0
	ps[0].Steps = []Step{step, {At: to, Latency: 2 * ms}}
	return Scenario{
		Name:      name,
		Title:     title,
		Duration:  50 * time.Second,
		Callers:   20,
		Keys:      DefaultKeys,
		Jitter:    0.05,
		Providers: ps,
		Marks:     []Mark{{from, "p0 fails"}, {to, "p0 recovers"}},
		Failure:   &Failure{Provider: 0, From: from, To: to},
	}
}

// FailMany has twelve 2 ms providers of which three answer every call
// with an error in 0.1 ms from the start, 24 callers. Outlier ejection at
// its defaults (at most 10 % of the providers out) takes out one of the
// three: the others are left to the balancer, which must not prefer them.
func FailMany() Scenario {
	ps := alike(12, Provider{Latency: 2 * ms})
	for i := range FailManyFailing {
		ps[i].Name += " (fails fast)"
		ps[i].Latency, ps[i].ErrorRate = ms/10, 1
	}
	return Scenario{
		Name:      "failmany",
		Title:     "12 providers at 2 ms; p0-p2 fail every call in 0.1 ms from the start, 24 callers",
		Duration:  20 * time.Second,
		Callers:   24,
		Keys:      DefaultKeys,
		Jitter:    0.05,
		Providers: ps,
	}
}

// FailManyFailing is the number of providers of FailMany that fail, the
// first ones of its list.
const FailManyFailing = 3

// Fleet has 512 providers of 2 slots at 2 ms, one in eight 5 times
// slower, and 600 callers (about 60 % of the capacity): above
// fewestactive.DefaultScanUpTo providers, where fewestactive draws two
// candidates instead of scanning them all; compare it with
// FewestactiveScan, the exact scan.
func Fleet() Scenario {
	ps := alike(512, Provider{Latency: 2 * ms, Capacity: 2})
	for i := 0; i < len(ps); i += 8 {
		ps[i].Latency = 10 * ms
		ps[i].Name += " (5× slower)"
	}
	return Scenario{
		Name:      "fleet",
		Title:     "512 providers of 2 slots at 2 ms, 1 in 8 at 10 ms, 600 callers",
		Duration:  time.Second,
		Callers:   600,
		Keys:      DefaultKeys,
		Jitter:    0.05,
		Providers: ps,
	}
}

// alike returns n copies of p named p0, p1, …
func alike(n int, p Provider) []Provider {
	ps := make([]Provider, n)
	for i := range ps {
		ps[i] = p
		ps[i].Name = fmt.Sprintf("p%d", i)
	}
	return ps
}

// Tianchi is the setting of the Tianchi Dubbo load-balancing contest:
// three providers of 200, 450 and 650 calls at once, exponential service
// times, capacities and latencies that change every 10 s, and 4
// independent consumers with 390 callers each (1.2 × the capacity). Each
// consumer sees only its own calls; the providers report their load.
func Tianchi() Scenario {
	s := tianchi(4)
	s.Name, s.Title = "tianchi", "Tianchi: providers of 200/450/650 slots, exp. service times, schedule every 10 s, 4 consumers × 390 callers, load reports"
	return s
}

// TianchiOne is Tianchi with one consumer and all the callers.
func TianchiOne() Scenario {
	s := tianchi(1)
	s.Name, s.Title = "tianchi1", "Tianchi with one consumer of 1560 callers"
	return s
}

func tianchi(consumers int) Scenario {
	a, b := 10*time.Second, 20*time.Second
	return Scenario{
		Duration:  30 * time.Second,
		Callers:   1560,
		Consumers: consumers,
		Reports:   true,
		Keys:      DefaultKeys,
		Providers: []Provider{
			{Name: "p0", Latency: 50 * ms, Capacity: 200, Exp: true,
				Steps: []Step{{At: a, Latency: 40 * ms, Capacity: 650}, {At: b, Latency: 80 * ms, Capacity: 650}}},
			{Name: "p1", Latency: 50 * ms, Capacity: 450, Exp: true,
				Steps: []Step{{At: a, Latency: 60 * ms, Capacity: 450}, {At: b, Latency: 30 * ms, Capacity: 200}}},
			{Name: "p2", Latency: 50 * ms, Capacity: 650, Exp: true,
				Steps: []Step{{At: a, Latency: 50 * ms, Capacity: 200}, {At: b, Latency: 50 * ms, Capacity: 450}}},
		},
		Marks: []Mark{{a, "capacities swap"}, {b, "latencies change"}},
	}
}

// Bound returns the throughput the providers can serve at most, calls per
// second averaged over the run: the sum of capacity / mean service time,
// for scenarios whose providers all have a capacity; 0 otherwise.
func (s *Scenario) Bound() float64 {
	const step = 10 * time.Millisecond
	var sum float64
	n := 0
	for t := time.Duration(0); t < s.Duration; t += step {
		for i := range s.Providers {
			p := &s.Providers[i]
			c := p.CapacityAt(t)
			if c == 0 {
				return 0
			}
			if p.Join <= t && (p.Leave == 0 || t < p.Leave) {
				sum += float64(c) / p.LatencyAt(t).Seconds()
			}
		}
		n++
	}
	return sum / float64(max(n, 1))
}

// ZoneShrink has three zones of uneven size, 6, 4 and 2 providers, whose
// consumers send calls in the same proportions; the simulated consumer is
// in the largest zone, whose providers answer in 2 ms, the others in 3 ms
// (a cross-zone hop costs 1 ms). Halfway, half of the local zone's
// providers leave.
func ZoneShrink() Scenario { return zoneShrink(10 * time.Second) }

// zoneShrink is ZoneShrink with phases of length half.
func zoneShrink(half time.Duration) Scenario {
	var ps []Provider
	for i := range 6 {
		p := Provider{Name: fmt.Sprintf("a%d", i), Latency: 2 * ms, Zone: "az-a"}
		if i >= 3 {
			p.Name += " (leaves)"
			p.Leave = half
		}
		ps = append(ps, p)
	}
	for i := range 4 {
		ps = append(ps, Provider{Name: fmt.Sprintf("b%d", i), Latency: 3 * ms, Zone: "az-b"})
	}
	for i := range 2 {
		ps = append(ps, Provider{Name: fmt.Sprintf("c%d", i), Latency: 3 * ms, Zone: "az-c"})
	}
	return Scenario{
		Name:      "zones",
		Title:     "zones of 6/4/2 providers (2 ms local, 3 ms across), consumer in az-a; half of az-a leaves halfway",
		Duration:  2 * half,
		Callers:   24,
		Keys:      10 * DefaultKeys, // ringhash routes keys: its spill is a sample of them
		Jitter:    0.05,
		Providers: ps,
		Zones:     &Zones{Local: "az-a", Callers: map[string]float64{"az-a": 6, "az-b": 4, "az-c": 2}, Phases: []time.Duration{0, half}},
		Marks:     []Mark{{half, "half of az-a leaves"}},
	}
}

// ZoneShrinkLearned is ZoneShrink with no callers configured: the
// consumer remembers each zone's provisioned weight.
func ZoneShrinkLearned() Scenario {
	sc := zoneShrink(10 * time.Second)
	sc.Name = "zones-learned"
	sc.Title = "zones of 6/4/2 providers, no callers configured (learned from the zones' provisioned weights); half of az-a leaves halfway"
	sc.Zones.Learned = true
	return sc
}

// ZoneFailing is ZoneShrinkLearned where, halfway, half of the local
// zone's providers fail every call in 0.1 ms instead of leaving: they stay
// listed, and outlier ejection (at most 10 % of the providers) takes out
// one of them.
func ZoneFailing() Scenario { return zoneFailing(10 * time.Second) }

// zoneFailing is ZoneFailing with phases of length half.
func zoneFailing(half time.Duration) Scenario {
	sc := zoneShrink(half)
	sc.Name = "zones-failing"
	sc.Title = "zones of 6/4/2 providers, no callers configured; half of az-a fails every call fast halfway, listed still"
	sc.Zones.Learned = true
	for i := 3; i < 6; i++ {
		p := &sc.Providers[i]
		p.Name, p.Leave = fmt.Sprintf("a%d (fails fast)", i), 0
		p.Steps = []Step{{At: half, Latency: ms / 10, ErrorRate: 1}}
	}
	sc.Marks = []Mark{{half, "half of az-a fails"}}
	return sc
}

// Scenarios returns the built-in scenarios that "all" runs.
func Scenarios() []Scenario {
	return []Scenario{Brpc(), BrpcMany(), Capacity(), Slowdown(), Join(), FailFast(), Hang(), Tianchi(), TianchiOne(), ZoneShrink(), ZoneShrinkLearned(), ZoneFailing(), FailMany()}
}

// SubsetComparisons are the deployments lbsim -scenario subsets compares:
// each over the full set, over aperture subsets and over rendezvous
// subsets.
func SubsetComparisons() [][3]Scenario {
	return [][3]Scenario{
		{BrpcWide(), BrpcWideSubsets(false), BrpcWideSubsets(true)},
		{CapacityWide(), CapacityWideSubsets(false), CapacityWideSubsets(true)},
	}
}

// Extra returns the built-in scenarios that run only by name: Fleet,
// whose 512 providers take dubbo-go's leastactive minutes, and the wide
// scenarios, over the full set and over subsets (lbsim -scenario subsets
// runs and compares them).
func Extra() []Scenario {
	return []Scenario{Fleet(), BrpcWide(), BrpcWideSubsets(false), BrpcWideSubsets(true),
		CapacityWide(), CapacityWideSubsets(false), CapacityWideSubsets(true)}
}

// Lookup returns the built-in scenario called name.
func Lookup(name string) (Scenario, error) {
	var names []string
	for _, s := range append(Scenarios(), Extra()...) {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q; known: %v", name, names)
}
