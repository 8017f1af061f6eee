package rtadaptive

import (
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/assembly/simulate"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
)

// The servers of the simulator engine (lbtest.Driver over package
// simulate): calls picked with the real Balancer.Select on real provider
// URLs, through the real lbactive filter, on a virtual clock.

const (
	ms  = time.Millisecond
	sec = time.Second
)

// server says when a call that arrives at a provider ends and whether it
// fails; rng is the driver's seeded source.
type server = simulate.Server

// fixed returns a server whose calls take d ±20 %: with exactly equal
// latencies, ties between providers would be decided by the few
// nanoseconds their estimates decayed since their last sample.
func fixed(d time.Duration) server { return phases([]time.Duration{d}) }

// phases returns a server whose calls take d[0] (±20 %) until the virtual
// time at[0], d[1] until at[1], and so on, d[len(at)] after the last.
func phases(d []time.Duration, at ...time.Duration) server {
	return simulate.Model{Latency: simulate.Steps(d, at...), Jitter: 0.2}.Server()
}

// failsFast returns a server like fixed(ms) whose calls fail after
// 100 µs (±20 %) from the virtual time from until to.
func failsFast(from, to time.Duration) server {
	return simulate.Model{
		Latency:   simulate.Steps([]time.Duration{ms, 100 * time.Microsecond, ms}, from, to),
		Jitter:    0.2,
		ErrorRate: simulate.Steps([]float64{0, 1, 0}, from, to),
	}.Server()
}

// driver is the simulator engine around a Balancer.
type driver struct {
	*lbtest.Driver
	b *Balancer
}

// newDriver returns a driver over list (providers served by servers, in
// order; d.List holds the engine's providers for them) and a Balancer built
// with opts on the driver's clocks. It stops when t ends.
func newDriver(t testing.TB, opts Options, bucket time.Duration, list []base.Invoker, servers ...server) *driver {
	d := &driver{}
	d.Driver = lbtest.NewDriver(t, 1, bucket, func(env lbenv.Env) loadbalance.LoadBalance {
		opts.Env = env
		d.b = New(opts)
		return d.b
	})
	for i, p := range list {
		d.List = append(d.List, d.Add(p, servers[i]))
	}
	return d
}
