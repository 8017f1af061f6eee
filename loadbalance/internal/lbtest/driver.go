package lbtest

import (
	"container/heap"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/rpcstatus"
)

// WallBase is the wall time at a Driver's virtual time 0, a whole second so
// that timestamps in seconds are exact.
var WallBase = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Server says when a call started at now (virtual ns) ends and whether it
// fails; rng is the driver's seeded source.
type Server func(now int64, rng *rand.Rand) (end int64, fail bool)

// Driver is the discrete-event engine of the balancers' tests: callers pick
// providers with a real balancer on real provider URLs and record their
// calls in rpcstatus exactly as the lbactive filter does (Begin after the
// pick, End at completion), on a virtual clock, with no sleep. Servers draw
// from one seeded source.
type Driver struct {
	LB    loadbalance.LoadBalance
	Clock atomic.Int64 // virtual monotonic ns
	// List is what each pick is offered; Pool is every provider ever
	// added, by server id.
	List, Pool []base.Invoker
	Rng        *rand.Rand
	// OnComplete, when set, runs after each completion of provider p.
	OnComplete func(p base.Invoker)

	id       map[base.Invoker]int
	servers  []Server
	events   eventHeap
	inv      base.Invocation
	interval int64
	bucket   int64
	picks    [][]int64 // [bucket][server id]
	done     []int64   // [bucket] completions
	latSum   []int64   // [bucket]
}

// NewDriver returns a Driver whose statistics are bucketed by bucket and
// whose balancer build makes on the driver's clocks: now, the monotonic
// clock of the statistics, and wall, the clock of warmup.
func NewDriver(seed uint64, bucket time.Duration, build func(now func() int64, wall func() time.Time) loadbalance.LoadBalance) *Driver {
	d := &Driver{Rng: rand.New(rand.NewPCG(seed, 7)), inv: Call("Say"), bucket: int64(bucket), id: map[base.Invoker]int{}}
	d.Clock.Store(int64(time.Second)) // away from 0, which rpcstatus reads as "never"
	d.LB = build(d.Clock.Load, d.Wall)
	return d
}

// Wall returns the wall time now.
func (d *Driver) Wall() time.Time { return WallBase.Add(time.Duration(d.Clock.Load())) }

// Now returns the virtual time (ns).
func (d *Driver) Now() int64 { return d.Clock.Load() }

// Add registers provider p served by s and returns it; the caller puts it
// in List.
func (d *Driver) Add(p base.Invoker, s Server) base.Invoker {
	d.id[p] = len(d.Pool)
	d.Pool = append(d.Pool, p)
	d.servers = append(d.servers, s)
	return p
}

// AddN adds one provider of weight 100 per server to the pool and List.
func (d *Driver) AddN(servers ...Server) {
	for _, s := range servers {
		d.List = append(d.List, d.Add(Provider(20000+len(d.Pool), map[string]string{"weight": "100"}), s))
	}
}

// StartedAt returns a provider of weight 100 that started at virtual time
// at with a warmup of warm (whole seconds), served by s.
func (d *Driver) StartedAt(at, warm time.Duration, s Server) base.Invoker {
	return d.Add(Started(20000+len(d.Pool), WallBase.Add(at), warm), s)
}

func (d *Driver) start() {
	now := d.Now()
	got := d.LB.Select(d.List, d.inv)
	k, ok := d.id[got]
	if !ok {
		panic("Select returned a provider outside the list")
	}
	p := rpcstatus.Of(got.GetURL())
	c := p.Begin(p.Method("Say"), now)
	end, fail := d.servers[k](now, d.Rng)
	heap.Push(&d.events, event{t: end, call: c, srv: k, fail: fail})
	d.picks[d.grow(now)][k]++
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
	if len(d.events) == 0 {
		for range callers {
			d.start()
		}
	}
	d.loop(until, true)
}

// RunOpen sends rate calls per second whatever happens, until until.
func (d *Driver) RunOpen(rate float64, until time.Duration) {
	if len(d.events) == 0 {
		heap.Push(&d.events, event{t: d.Now(), srv: arrival})
	}
	d.interval = int64(float64(time.Second) / rate)
	d.loop(until, false)
}

func (d *Driver) loop(until time.Duration, closed bool) {
	for len(d.events) > 0 && d.events[0].t < int64(until) {
		e := heap.Pop(&d.events).(event)
		d.Clock.Store(e.t)
		if e.srv == arrival {
			d.start()
			heap.Push(&d.events, event{t: e.t + d.interval, srv: arrival})
			continue
		}
		e.call.End(e.t, e.fail)
		b := d.grow(e.t)
		d.done[b]++
		d.latSum[b] += e.t - e.call.Start()
		if d.OnComplete != nil {
			d.OnComplete(d.Pool[e.srv])
		}
		if closed {
			d.start()
		}
	}
	d.Clock.Store(int64(until))
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

type event struct {
	t    int64
	call rpcstatus.Call
	srv  int // arrival: an open-loop arrival
	fail bool
}

const arrival = -1

type eventHeap []event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].t < h[j].t }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
