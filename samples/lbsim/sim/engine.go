package sim

import (
	"sync/atomic"
	"time"
)

// Origin is the value of the virtual monotonic clock when a simulation
// starts. It is not 0 so that a clock reading never looks like "unset".
const Origin = int64(time.Second)

// WallOrigin is the virtual wall-clock time when a simulation starts: a
// whole second, so that provider timestamps in seconds are exact.
var WallOrigin = time.Unix(1_700_000_000, 0)

// Clock is the virtual clock of one simulation. It only moves when the
// scheduler advances it to the next event.
type Clock struct {
	ns atomic.Int64
}

func newClock() *Clock {
	c := new(Clock)
	c.ns.Store(Origin)
	return c
}

// Now returns monotonic virtual nanoseconds, as rpcstatus.Nanotime does for
// real time. It is the clock for filter.Options.Now and the balancers.
func (c *Clock) Now() int64 { return c.ns.Load() }

// Wall returns the virtual wall-clock time, for warmup.Options.Now.
func (c *Clock) Wall() time.Time { return WallOrigin.Add(c.Elapsed()) }

// Elapsed returns the virtual time since the simulation started.
func (c *Clock) Elapsed() time.Duration { return time.Duration(c.ns.Load() - Origin) }

func (c *Clock) set(ns int64) { c.ns.Store(ns) }

// event is a wake-up of a caller or a scenario action at a virtual time.
// seq orders events of the same instant by when they were scheduled.
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
// engine's fields is therefore ordered by those channel operations.
type engine struct {
	clock   *Clock
	q       queue
	seq     uint64
	yield   chan struct{}
	stopped bool
	callers []*caller
}

// caller is one simulated client goroutine.
type caller struct {
	wake chan struct{}
	done bool // body returned
}

func newEngine() *engine {
	return &engine{clock: newClock(), yield: make(chan struct{})}
}

// schedule adds an event at virtual time at (monotonic ns).
func (e *engine) schedule(at int64, c *caller, fn func()) {
	e.seq++
	e.q.push(event{at: at, seq: e.seq, c: c, fn: fn})
}

// at runs fn at the virtual time elapsed after the start.
func (e *engine) at(elapsed time.Duration, fn func()) {
	e.schedule(Origin+int64(elapsed), nil, fn)
}

// spawn starts body as a caller goroutine, first run at the current time.
func (e *engine) spawn(body func(c *caller)) {
	c := &caller{wake: make(chan struct{})}
	e.callers = append(e.callers, c)
	go func() {
		<-c.wake
		body(c)
		c.done = true
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

// run processes the events before the virtual time end (elapsed after the
// start), so that a run covers [0, end), then stops every caller: each
// returns from its sleep with e.stopped set and must exit.
func (e *engine) run(end time.Duration) {
	limit := Origin + int64(end)
	for len(e.q) > 0 && e.q[0].at < limit {
		ev := e.q.pop()
		e.clock.set(ev.at)
		if ev.fn != nil {
			ev.fn()
			continue
		}
		ev.c.wake <- struct{}{}
		<-e.yield
	}
	e.clock.set(limit)
	e.stopped = true
	// Every caller is blocked in sleep (or has not started): release them
	// one at a time and wait for each to exit.
	for _, c := range e.callers {
		if !c.done {
			c.wake <- struct{}{}
			<-e.yield
		}
	}
	e.q = nil
}
