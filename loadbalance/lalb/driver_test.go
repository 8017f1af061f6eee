package lalb

import (
	"container/heap"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// A discrete-event driver for the adapter: callers pick providers with the
// real Balancer.Select on real provider URLs and record their calls in
// rpcstatus exactly as the lbactive filter does (Begin after the pick, End
// at completion), on a virtual clock. The providers are the simulated
// servers of sim_test.go. No sleeps; the picks use the global random
// source, so assertions keep a statistical margin.

// wallBase is the wall time at virtual time 0, a whole second so that
// timestamps in seconds are exact.
var wallBase = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

type driver struct {
	b       *Balancer
	clock   atomic.Int64 // virtual monotonic ns
	list    []base.Invoker
	pool    []base.Invoker // every provider ever offered, by server id
	id      map[base.Invoker]int
	servers []*simServer
	rng     *rand.Rand
	events  drvHeap
	inv     base.Invocation
	// hook refreshes a provider's weight on each of its completions too,
	// as a completion listener in rpcstatus would (the design not taken).
	hook     bool
	interval int64

	bucket int64
	picks  [][]int64 // [bucket][server id]
	done   []int64   // [bucket] completions
	latSum []int64   // [bucket]
}

type drvEvent struct {
	t    int64
	call rpcstatus.Call
	srv  int
	fail bool
}

type drvHeap []drvEvent

func (h drvHeap) Len() int           { return len(h) }
func (h drvHeap) Less(i, j int) bool { return h[i].t < h[j].t }
func (h drvHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *drvHeap) Push(x any)        { *h = append(*h, x.(drvEvent)) }
func (h *drvHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

const drvArrival = -1 // drvEvent.srv of an open-loop arrival

// newDriver returns a driver over one provider per server, all of weight
// 100, and a Balancer built with opts on the driver's clocks.
func newDriver(opts Options, seed uint64, bucket time.Duration, servers ...*simServer) *driver {
	d := &driver{rng: rand.New(rand.NewPCG(seed, 7)), inv: lbtest.Call("Say"), bucket: int64(bucket), id: map[base.Invoker]int{}}
	d.clock.Store(int64(time.Second)) // away from 0, which rpcstatus reads as "never"
	opts.Now = d.clock.Load
	opts.Warmup.Now = d.wall
	d.b = New(opts)
	for _, s := range servers {
		d.list = append(d.list, d.add(lbtest.Provider(20000+len(d.pool), map[string]string{"weight": "100"}), s))
	}
	return d
}

func (d *driver) wall() time.Time { return wallBase.Add(time.Duration(d.clock.Load())) }

// add registers a provider served by s; the caller puts it in d.list.
func (d *driver) add(p base.Invoker, s *simServer) base.Invoker {
	d.id[p] = len(d.pool)
	d.pool = append(d.pool, p)
	d.servers = append(d.servers, s)
	return p
}

// startedAt returns a provider of weight 100 that started at virtual time
// at with a warmup of warm (whole seconds), served by s.
func (d *driver) startedAt(at, warm time.Duration, s *simServer) base.Invoker {
	return d.add(lbtest.Started(20000+len(d.pool), wallBase.Add(at), warm), s)
}

func (d *driver) now() int64 { return d.clock.Load() }

func (d *driver) start() {
	now := d.now()
	got := d.b.Select(d.list, d.inv)
	k, ok := d.id[got]
	if !ok {
		panic("Select returned a provider outside the list")
	}
	p := rpcstatus.Of(got.GetURL())
	c := p.Begin(p.Method("Say"), now)
	end, fail := d.servers[k].call(now, d.rng)
	heap.Push(&d.events, drvEvent{t: end, call: c, srv: k, fail: fail})
	b := d.grow(now)
	d.picks[b][k]++
}

func (d *driver) grow(t int64) int {
	b := int(t / d.bucket)
	for len(d.picks) <= b {
		d.picks = append(d.picks, nil)
		d.done = append(d.done, 0)
		d.latSum = append(d.latSum, 0)
	}
	for len(d.picks[b]) < len(d.pool) {
		d.picks[b] = append(d.picks[b], 0)
	}
	return b
}

// run starts callers closed-loop callers on the first call and runs until
// the virtual clock reaches until.
func (d *driver) run(callers int, until time.Duration) {
	if len(d.events) == 0 {
		for range callers {
			d.start()
		}
	}
	d.loop(until, true)
}

// runOpen sends rate calls per second whatever happens, until until.
func (d *driver) runOpen(rate float64, until time.Duration) {
	if len(d.events) == 0 {
		heap.Push(&d.events, drvEvent{t: d.now(), srv: drvArrival})
	}
	d.interval = int64(float64(time.Second) / rate)
	d.loop(until, false)
}

func (d *driver) loop(until time.Duration, closed bool) {
	for len(d.events) > 0 && d.events[0].t < int64(until) {
		e := heap.Pop(&d.events).(drvEvent)
		d.clock.Store(e.t)
		if e.srv == drvArrival {
			d.start()
			heap.Push(&d.events, drvEvent{t: e.t + d.interval, srv: drvArrival})
			continue
		}
		e.call.End(e.t, e.fail)
		b := d.grow(e.t)
		d.done[b]++
		d.latSum[b] += e.t - e.call.Start()
		if d.hook {
			d.feedback(d.pool[e.srv])
		}
		if closed {
			d.start()
		}
	}
	d.clock.Store(int64(until))
}

// feedback refreshes p's weight, as a completion hook would.
func (d *driver) feedback(p base.Invoker) {
	v, _ := d.b.View(d.list, "Say")
	if i, ok := v.Index(p); ok {
		d.b.refresh(v, i)
	}
}

// share returns the share of the picks in [from, to) that went to server k.
func (d *driver) share(k int, from, to time.Duration) float64 {
	var mine, all int64
	for b := int(int64(from) / d.bucket); b < int(int64(to)/d.bucket) && b < len(d.picks); b++ {
		for j, c := range d.picks[b] {
			all += c
			if j == k {
				mine += c
			}
		}
	}
	if all == 0 {
		return 0
	}
	return float64(mine) / float64(all)
}

// picked returns how many picks in [from, to) went to server k.
func (d *driver) picked(k int, from, to time.Duration) (n int64) {
	for b := int(int64(from) / d.bucket); b < int(int64(to)/d.bucket) && b < len(d.picks); b++ {
		if k < len(d.picks[b]) {
			n += d.picks[b][k]
		}
	}
	return n
}

// throughput returns completions per second and their mean latency in
// [from, to).
func (d *driver) throughput(from, to time.Duration) (float64, time.Duration) {
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

// weights returns the tree weights of d.list.
func (d *driver) weights() []int64 { return d.b.Weights(d.list, "Say") }
