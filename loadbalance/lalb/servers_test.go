package lalb

import (
	"time"

	"github.com/dubbogo-lb/lb/internal/assembly/simulate"
)

// The servers of the simulated providers (lbtest.Driver, driver_test.go),
// all made with simulate's one server model.

// server says when a call that arrives at a provider ends and whether it
// fails.
type server = simulate.Server

// fixed returns a server whose calls all take d (no queueing).
func fixed(d time.Duration) server {
	return simulate.Model{Latency: simulate.Constant(d)}.Server()
}

// switching returns a server taking a before the virtual time at and b from
// then on.
func switching(a, b time.Duration, at time.Duration) server {
	return simulate.Model{Latency: simulate.Steps([]time.Duration{a, b}, at)}.Server()
}

// queued returns a server with workers workers, a FIFO queue and
// exponential service times of mean d: its latency grows with its load.
func queued(d time.Duration, workers int) server {
	return simulate.Model{Latency: simulate.Constant(d), Exp: true, Workers: workers}.Server()
}

// hanging returns a server whose calls take 1 ms until the virtual time
// at, and from then on fail after timeout, as calls to a provider that
// stopped answering fail at their timeout.
func hanging(at, timeout time.Duration) server {
	return simulate.Model{
		Latency:   simulate.Steps([]time.Duration{ms, timeout}, at),
		ErrorRate: simulate.Steps([]float64{0, 1}, at),
	}.Server()
}

// failingUntil returns a server like queued(ms, 4) whose calls fail until
// the virtual time at.
func failingUntil(at time.Duration) server {
	return simulate.Model{
		Latency:   simulate.Constant(ms),
		Workers:   4,
		ErrorRate: simulate.Steps([]float64{1, 0}, at),
	}.Server()
}
