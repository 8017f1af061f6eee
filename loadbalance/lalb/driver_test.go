package lalb

import (
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
)

// driver is the simulator engine (lbtest.Driver over package simulate)
// around a Balancer, with the servers of servers_test.go.
type driver struct {
	*lbtest.Driver
	b *Balancer
	// hook refreshes a provider's weight on each of its completions too,
	// as a completion listener in rpcstatus would (the design not taken).
	hook bool
}

// newDriver returns a driver over one provider per server, all of weight
// 100, and a Balancer built with opts on the driver's clocks. It stops when
// t ends.
func newDriver(t testing.TB, opts Options, seed uint64, bucket time.Duration, servers ...server) *driver {
	d := &driver{}
	d.Driver = lbtest.NewDriver(t, seed, bucket, func(env lbenv.Env) loadbalance.LoadBalance {
		opts.Env = env
		d.b = New(opts)
		return d.b
	})
	d.OnComplete = func(p base.Invoker) {
		if d.hook {
			d.feedback(p)
		}
	}
	d.AddN(servers...)
	return d
}

// startedAt returns a provider of weight 100 that started at virtual time
// at with a warmup of warm (whole seconds), served by s.
func (d *driver) startedAt(at, warm time.Duration, s server) base.Invoker {
	return d.StartedAt(at, warm, s)
}

// feedback refreshes p's weight, as a completion hook would.
func (d *driver) feedback(p base.Invoker) {
	v, _ := d.b.sk.View(d.List, "Say")
	if i, ok := v.Index(p); ok {
		d.b.refresh(v, i)
	}
}

// weights returns the tree weights of d.List.
func (d *driver) weights() []int64 { return d.b.weights(d.List, "Say") }
