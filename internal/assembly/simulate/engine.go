package simulate

import (
	"sync/atomic"
	"time"
)

// Origin is the value of the virtual monotonic clock when a simulation
// starts. It is not 0, which rpcstatus reads as "never".
const Origin = int64(time.Second)

// WallOrigin is the default virtual wall-clock time at Origin: a whole
// second, so that provider timestamps in seconds are exact.
var WallOrigin = time.Unix(1_700_000_000, 0)

// Clock is the virtual clock of one simulation. It only moves when the
// scheduler advances it to the next event.
type Clock struct {
	ns   atomic.Int64
	wall time.Time // at Origin
}

// Now returns monotonic virtual nanoseconds, as rpcstatus.Nanotime does for
// real time: the clock for filter.Options.Now and the balancers.
func (c *Clock) Now() int64 { return c.ns.Load() }

// Wall returns the virtual wall-clock time, for lbenv.Env.Wall.
func (c *Clock) Wall() time.Time { return c.wall.Add(c.Elapsed()) }

// Elapsed returns the virtual time since Origin.
func (c *Clock) Elapsed() time.Duration { return time.Duration(c.ns.Load() - Origin) }

// event is a wake-up of a caller or an action at a virtual time. seq
// orders events of the same instant by when they were scheduled.
type event struct {
	at  int64
	seq uint64
	c   *caller
	fn  func()
}

func (a *event) before(b *event) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// queue is a binary min-heap of events, written out rather than through
// container/heap so that pushing an event does not box it.
type queue []event

func (q *queue) push(e event) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *queue) pop() event {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = event{} // drop references
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].before(&h[m]) {
			m = l
		}
		if r < len(h) && h[r].before(&h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// engine runs the events of one simulation in time order. Callers are
// goroutines, but only one runs at a time: the engine wakes it and waits on
// yield until it blocks again (sleep) or exits. Every access to the
// simulation's state is therefore ordered by those channel operations.
type engine struct {
	clock   Clock
	q       queue
	seq     uint64
	yield   chan struct{}
	stopped bool
	callers map[*caller]struct{} // alive
}

// caller is one simulated client goroutine.
type caller struct {
	wake chan struct{}
}

func (e *engine) init(wall time.Time) {
	e.clock.ns.Store(Origin)
	e.clock.wall = wall
	e.yield = make(chan struct{})
	e.callers = map[*caller]struct{}{}
}

// schedule adds an event at virtual time at (monotonic ns).
func (e *engine) schedule(at int64, c *caller, fn func()) {
	e.seq++
	e.q.push(event{at: at, seq: e.seq, c: c, fn: fn})
}

// spawn starts body as a caller goroutine, first run at the current time.
func (e *engine) spawn(body func(c *caller)) {
	c := &caller{wake: make(chan struct{})}
	e.callers[c] = struct{}{}
	go func() {
		<-c.wake
		body(c)
		delete(e.callers, c)
		e.yield <- struct{}{}
	}()
	e.schedule(e.clock.Now(), c, nil)
}

// sleep blocks caller c until virtual time until (monotonic ns). It must be
// called from c's own goroutine while it is the one running.
func (e *engine) sleep(c *caller, until int64) {
	e.schedule(max(until, e.clock.Now()), c, nil)
	e.yield <- struct{}{}
	<-c.wake
}

// runUntil processes the events before the virtual time limit (monotonic
// ns) and leaves the clock at limit. Callers stay blocked where they are,
// so a later runUntil carries on.
func (e *engine) runUntil(limit int64) {
	for len(e.q) > 0 && e.q[0].at < limit && !e.stopped {
		ev := e.q.pop()
		e.clock.ns.Store(ev.at)
		if ev.fn != nil {
			ev.fn()
			continue
		}
		ev.c.wake <- struct{}{}
		<-e.yield
	}
	e.clock.ns.Store(max(limit, e.clock.Now()))
}

// stop ends the simulation: every caller returns from its sleep with
// e.stopped set and must exit; stop waits for each.
func (e *engine) stop() {
	if e.stopped {
		return
	}
	e.stopped = true
	for len(e.callers) > 0 {
		for c := range e.callers {
			c.wake <- struct{}{}
			<-e.yield
			break
		}
	}
	e.q = nil
}
