package rtadaptive

import (
	"container/heap"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// A discrete-event driver: calls picked with the real Balancer.Select on
// real provider URLs are recorded in rpcstatus as the lbactive filter
// records them (Begin after the pick, End at completion), on a virtual
// clock. No sleeps; picks use the global random source, so assertions keep
// a statistical margin.

const (
	ms  = time.Millisecond
	sec = time.Second
)

// wallBase is the wall time at virtual time 0, a whole second so that
// timestamps in seconds are exact.
var wallBase = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// server says how long a call started at now (virtual ns) takes and
// whether it fails.
type server func(now int64) (time.Duration, bool)

// jitter spreads a latency uniformly over ±20 %, as real ones are spread:
// with exactly equal latencies, ties between providers would be decided by
// the few nanoseconds their estimates decayed since their last sample.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// fixed returns a server whose calls take d (±20 %).
func fixed(d time.Duration) server {
	return func(int64) (time.Duration, bool) { return jitter(d), false }
}

// phases returns a server whose calls take d[0] (±20 %) until the virtual
// time at[0], d[1] until at[1], and so on, d[len(at)] after the last.
func phases(d []time.Duration, at ...time.Duration) server {
	return func(now int64) (time.Duration, bool) {
		for k, t := range at {
			if now < int64(t) {
				return jitter(d[k]), false
			}
		}
		return jitter(d[len(d)-1]), false
	}
}

type driver struct {
	b        *Balancer
	clock    atomic.Int64
	list     []base.Invoker
	id       map[base.Invoker]int
	servers  []server
	events   evHeap
	inv      base.Invocation
	interval int64
	bucket   int64
	picks    [][]int64 // [bucket][server]
}

type event struct {
	t    int64
	call rpcstatus.Call
	srv  int // -1: an arrival
	fail bool
}

type evHeap []event

func (h evHeap) Len() int           { return len(h) }
func (h evHeap) Less(i, j int) bool { return h[i].t < h[j].t }
func (h evHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)        { *h = append(*h, x.(event)) }
func (h *evHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// newDriver returns a driver over list (providers served by servers, in
// order) and a Balancer built with opts on the driver's clocks.
func newDriver(opts Options, bucket time.Duration, list []base.Invoker, servers ...server) *driver {
	d := &driver{list: list, servers: servers, id: map[base.Invoker]int{}, inv: lbtest.Call("Say"), bucket: int64(bucket)}
	d.clock.Store(int64(sec)) // away from 0, which rpcstatus reads as "never"
	opts.Now = d.clock.Load
	opts.Warmup.Now = func() time.Time { return wallBase.Add(time.Duration(d.clock.Load())) }
	d.b = New(opts)
	for i, p := range list {
		d.id[p] = i
	}
	return d
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
	lat, fail := d.servers[k](now)
	heap.Push(&d.events, event{t: now + int64(lat), call: c, srv: k, fail: fail})
	b := int(now / d.bucket)
	for len(d.picks) <= b {
		d.picks = append(d.picks, make([]int64, len(d.servers)))
	}
	d.picks[b][k]++
}

// runOpen sends rate calls per second whatever happens, until until.
func (d *driver) runOpen(rate float64, until time.Duration) {
	if len(d.events) == 0 {
		heap.Push(&d.events, event{t: d.now(), srv: -1})
	}
	d.interval = int64(float64(sec) / rate)
	for len(d.events) > 0 && d.events[0].t < int64(until) {
		e := heap.Pop(&d.events).(event)
		d.clock.Store(e.t)
		if e.srv < 0 {
			d.start()
			heap.Push(&d.events, event{t: e.t + d.interval, srv: -1})
			continue
		}
		e.call.End(e.t, e.fail)
	}
	d.clock.Store(int64(until))
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
		n += d.picks[b][k]
	}
	return n
}
