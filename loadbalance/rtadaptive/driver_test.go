package rtadaptive

import (
	"math/rand/v2"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

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

// server says how long a call started at now (virtual ns) takes and
// whether it fails; rng is the driver's seeded source.
type server func(now int64, rng *rand.Rand) (time.Duration, bool)

// jitter spreads a latency uniformly over ±20 %, as real ones are spread:
// with exactly equal latencies, ties between providers would be decided by
// the few nanoseconds their estimates decayed since their last sample.
func jitter(d time.Duration, rng *rand.Rand) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rng.Float64()))
}

// fixed returns a server whose calls take d (±20 %).
func fixed(d time.Duration) server {
	return func(_ int64, rng *rand.Rand) (time.Duration, bool) { return jitter(d, rng), false }
}

// phases returns a server whose calls take d[0] (±20 %) until the virtual
// time at[0], d[1] until at[1], and so on, d[len(at)] after the last.
func phases(d []time.Duration, at ...time.Duration) server {
	return func(now int64, rng *rand.Rand) (time.Duration, bool) {
		for k, t := range at {
			if now < int64(t) {
				return jitter(d[k], rng), false
			}
		}
		return jitter(d[len(d)-1], rng), false
	}
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
		srv := servers[i]
		d.List = append(d.List, d.Add(p, func(now int64, rng *rand.Rand) (int64, bool) {
			lat, fail := srv(now, rng)
			return now + int64(lat), fail
		}))
	}
	return d
}
