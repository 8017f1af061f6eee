package lbtest

import (
	"math/rand/v2"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/assembly/simulate"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
)

// WallBase is the wall time at a Driver's virtual time 0, a whole second so
// that timestamps in seconds are exact.
var WallBase = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Driver is the simulator engine (package simulate) as the balancers' tests
// use it: a real balancer picks among real provider URLs, its calls go
// through the real lbactive filter, and picks, completions and latencies
// are counted in buckets of virtual time. Times are the virtual monotonic
// clock, which starts at 1 s (simulate.Origin). Servers draw from one
// seeded source.
type Driver struct {
	*simulate.Sim
	// List is what each pick is offered (copied to the engine at each
	// run); Pool is every provider ever added, by server id.
	List, Pool []base.Invoker
	// OnComplete, when set, runs after each completion of provider p.
	OnComplete func(p base.Invoker)

	started bool
	bucket  int64
	picks   [][]int64 // [bucket][server id]
	done    []int64   // [bucket] completions
	latSum  []int64   // [bucket]
}

// NewDriver returns a Driver whose statistics are bucketed by bucket and
// whose balancer build makes on the driver's environment: its virtual
// clocks, and a random source seeded from seed apart from the servers'. The driver is
// stopped when t ends.
func NewDriver(t testing.TB, seed uint64, bucket time.Duration, build func(env lbenv.Env) loadbalance.LoadBalance) *Driver {
	d := &Driver{bucket: int64(bucket)}
	d.Sim = simulate.New(simulate.Options{
		Rand:   rand.New(rand.NewPCG(seed, 7)),
		Wall:   WallBase.Add(time.Duration(simulate.Origin)),
		Method: "Say",
		OnPick: func(p int, now int64) { d.picks[d.grow(now)][p]++ },
		OnDone: func(p int, start, end int64, _ bool) {
			b := d.grow(end)
			d.done[b]++
			d.latSum[b] += end - start
			if d.OnComplete != nil {
				d.OnComplete(d.Pool[p])
			}
		},
		OnUnrouted: func(got base.Invoker, _ int64) {
			panic("Select returned a provider outside the list")
		},
	})
	// Only one simulated caller runs at a time, so one source serves them.
	d.LB = build(lbenv.Env{Now: d.Clock().Now, Wall: d.Clock().Wall, Rand: rand.New(rand.NewPCG(seed, 8)).Uint64})
	t.Cleanup(d.Stop)
	return d
}

// Add registers provider p (its URL) served by s and returns the engine's
// provider for it; the caller puts it in List.
func (d *Driver) Add(p base.Invoker, s simulate.Server) base.Invoker {
	got := d.Sim.Add(p.GetURL(), s)
	d.Pool = append(d.Pool, got)
	return got
}

// AddN adds one provider of weight 100 per server to the pool and List.
func (d *Driver) AddN(servers ...simulate.Server) {
	for _, s := range servers {
		d.List = append(d.List, d.Add(Provider(20000+len(d.Pool), map[string]string{"weight": "100"}), s))
	}
}

// StartedAt returns a provider of weight 100 that started at virtual time
// at with a warmup of warm (whole seconds), served by s.
func (d *Driver) StartedAt(at, warm time.Duration, s simulate.Server) base.Invoker {
	return d.Add(Started(20000+len(d.Pool), WallBase.Add(at), warm), s)
}

func (d *Driver) grow(t int64) int {
	b := int(t / d.bucket)
	for len(d.picks) <= b {
		d.picks = append(d.picks, nil)
		d.done = append(d.done, 0)
		d.latSum = append(d.latSum, 0)
	}
	for len(d.picks[b]) < len(d.Pool) {
		d.picks[b] = append(d.picks[b], 0)
	}
	return b
}

// Run starts callers closed-loop callers on the first call and runs until
// the virtual clock reaches until.
func (d *Driver) Run(callers int, until time.Duration) {
	d.Sim.List = d.List
	if !d.started {
		d.started = true
		d.Callers(callers)
	}
	d.Sim.Run(int64(until))
}

// RunOpen sends rate calls per second whatever happens, until until.
func (d *Driver) RunOpen(rate float64, until time.Duration) {
	d.Sim.List = d.List
	d.started = true
	d.Arrivals(rate)
	d.Sim.Run(int64(until))
}

// Share returns the share of the picks in [from, to) that went to server k.
func (d *Driver) Share(k int, from, to time.Duration) float64 {
	var all int64
	for b := int(int64(from) / d.bucket); b < int(int64(to)/d.bucket) && b < len(d.picks); b++ {
		for _, c := range d.picks[b] {
			all += c
		}
	}
	if all == 0 {
		return 0
	}
	return float64(d.Picked(k, from, to)) / float64(all)
}

// Picked returns how many picks in [from, to) went to server k.
func (d *Driver) Picked(k int, from, to time.Duration) (n int64) {
	for b := int(int64(from) / d.bucket); b < int(int64(to)/d.bucket) && b < len(d.picks); b++ {
		if k < len(d.picks[b]) {
			n += d.picks[b][k]
		}
	}
	return n
}

// Throughput returns completions per second and their mean latency in
// [from, to).
func (d *Driver) Throughput(from, to time.Duration) (float64, time.Duration) {
	var n, sum int64
	for b := int(int64(from) / d.bucket); b < int(int64(to)/d.bucket) && b < len(d.done); b++ {
		n += d.done[b]
		sum += d.latSum[b]
	}
	if n == 0 {
		return 0, 0
	}
	return float64(n) / (to - from).Seconds(), time.Duration(sum / n)
}

// FastFailureShare runs one of five equal providers (2 ms, 20 callers)
// answering every call with an error in 0.1 ms from 1 s on, with outlier
// ejection off, and returns the share of the picks it got from 2 s to 4 s:
// what the balancer's own response to failures makes of a provider that
// fails fast. A balancer that a fast failure makes look better gives it
// more than the fair 20 %. build makes the balancer on the driver's clocks.
func FastFailureShare(t testing.TB, build func(env lbenv.Env) loadbalance.LoadBalance) float64 {
	d := NewDriver(t, 3, 100*time.Millisecond, build)
	healthy := simulate.Model{Latency: simulate.Constant(2 * time.Millisecond)}.Server()
	failing := simulate.Model{
		Latency:   simulate.Steps([]time.Duration{2 * time.Millisecond, 100 * time.Microsecond}, time.Second),
		ErrorRate: simulate.Steps([]float64{0, 1}, time.Second),
	}.Server()
	d.AddN(failing, healthy, healthy, healthy, healthy)
	EjectionOff(d.List...)
	d.Run(20, 4*time.Second)
	return d.Share(0, 2*time.Second, 4*time.Second)
}
