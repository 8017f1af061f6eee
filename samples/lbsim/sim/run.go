package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"

	"github.com/dubbogo-lb/lb/filter"
)

// Service is the interface the fake providers serve.
const Service = "org.example.SimGreeter"

// DefaultBucket is the width of the time buckets of a Result.
const DefaultBucket = time.Second

// backoff is how long a caller waits after a call that could not be made
// (no provider selected, a balancer panic), so that virtual time moves on.
const backoff = time.Millisecond

// Options configure one run.
type Options struct {
	// Seed seeds the simulator's randomness (jitter, injected errors).
	Seed uint64
	// Bucket is the width of the result's time buckets; default
	// DefaultBucket.
	Bucket time.Duration
}

// Errors a fake provider returns.
var (
	// ErrInjected is the error of a call failed by Provider.ErrorRate.
	ErrInjected = errors.New("sim: injected provider error")
	// ErrNotSimulated is returned by a fake provider called outside a
	// simulated caller (its context does not carry one).
	ErrNotSimulated = errors.New("sim: provider called outside a simulation")
	errStopped      = errors.New("sim: simulation ended")
)

// ports hands out distinct ports, so that the providers of concurrent or
// successive runs are distinct everywhere (rpcstatus, dubbo-go's counters).
var ports atomic.Int64

// run is the state of one simulation.
type run struct {
	sc     *Scenario
	e      *engine
	lb     balancer
	filter *filter.Filter
	rng    *rand.Rand
	invs   []*invoker
	list   []base.Invoker // current membership, replaced, never modified
	rec    recorder
}

// invoker is a fake provider: a real dubbo-go invoker whose Invoke takes
// virtual time.
type invoker struct {
	*base.BaseInvoker
	r    *run
	idx  int
	spec *Provider
	// free holds, per slot of a provider with a capacity, the virtual time
	// it becomes free.
	free []int64
}

type callerKey struct{}

// Invoke serves the call: it waits for a free slot in arrival order, takes
// the service time and returns, all in virtual time.
func (p *invoker) Invoke(ctx context.Context, inv base.Invocation) result.Result {
	c, ok := ctx.Value(callerKey{}).(*caller)
	if !ok {
		return &result.RPCResult{Err: ErrNotSimulated}
	}
	r := p.r
	now := r.e.clock.Now()
	start := now
	slot := -1
	if len(p.free) > 0 {
		slot = 0
		for i, t := range p.free {
			if t < p.free[slot] {
				slot = i
			}
		}
		start = max(now, p.free[slot])
	}
	d := float64(p.spec.LatencyAt(time.Duration(start - Origin)))
	if j := r.sc.Jitter; j > 0 {
		d *= 1 + j*(2*r.rng.Float64()-1)
	}
	end := start + max(int64(d), 1)
	if slot >= 0 {
		p.free[slot] = end
	}
	fail := p.spec.ErrorRate > 0 && r.rng.Float64() < p.spec.ErrorRate
	if r.lb.dubboActive {
		base.BeginCount(p.GetURL(), inv.MethodName())
	}
	r.e.sleep(c, end)
	if r.lb.dubboActive {
		base.EndCount(p.GetURL(), inv.MethodName(), (end-now)/int64(time.Millisecond), !fail)
	}
	switch {
	case r.e.stopped:
		return &result.RPCResult{Err: errStopped}
	case fail:
		return &result.RPCResult{Err: ErrInjected}
	}
	return &result.RPCResult{Rest: "hello"}
}

// Run simulates scenario sc with the balancer registered as name.
func Run(sc Scenario, name string, opts Options) (*Result, error) {
	r, err := newRun(sc, name, opts)
	if err != nil {
		return nil, err
	}
	return r.execute(), nil
}

// newRun prepares a run: the balancer, the filter and the providers.
func newRun(sc Scenario, name string, opts Options) (*run, error) {
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if opts.Bucket <= 0 {
		opts.Bucket = DefaultBucket
	}
	if sc.Method == "" {
		sc.Method = "SayHello"
	}
	e := newEngine()
	lb, err := newBalancer(name, Clocks{Now: e.clock.Now, Wall: e.clock.Wall})
	if err != nil {
		return nil, err
	}
	r := &run{
		sc:     &sc,
		e:      e,
		lb:     lb,
		filter: filter.New(filter.Options{Now: e.clock.Now}),
		rng:    rand.New(rand.NewPCG(opts.Seed, 0x5eed)),
	}
	n := int64(len(sc.Providers))
	port := 20000 + int((ports.Add(n)-n)%40000)
	for i := range sc.Providers {
		spec := &sc.Providers[i]
		u, err := providerURL(port+i, spec)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", spec.Name, err)
		}
		p := &invoker{BaseInvoker: base.NewBaseInvoker(u), r: r, idx: i, spec: spec}
		if spec.Capacity > 0 {
			p.free = make([]int64, spec.Capacity)
		}
		r.invs = append(r.invs, p)
	}
	r.rec.init(&sc, opts.Bucket)
	r.res().Balancer, r.res().Note = name, lb.note
	return r, nil
}

// execute runs the simulation to its end and returns what it measured.
func (r *run) execute() *Result {
	sc, e := r.sc, r.e
	r.membership()
	for i := range sc.Providers {
		if j := sc.Providers[i].Join; j > 0 {
			e.at(j, r.membership)
		}
		if l := sc.Providers[i].Leave; l > 0 {
			e.at(l, r.membership)
		}
	}
	for range sc.Callers {
		e.spawn(r.caller)
	}
	e.run(sc.Duration)
	return r.rec.finish()
}

func (r *run) res() *Result { return &r.rec.res }

// membership sets the invoker list to the providers present now.
func (r *run) membership() {
	t := r.e.clock.Elapsed()
	var list []base.Invoker
	for i, p := range r.invs {
		s := &r.sc.Providers[i]
		if s.Join <= t && (s.Leave == 0 || t < s.Leave) {
			list = append(list, p)
		}
	}
	r.list = list
}

// caller is the body of one caller of the closed loop.
func (r *run) caller(c *caller) {
	ctx := context.WithValue(context.Background(), callerKey{}, c)
	inv := invocation.NewRPCInvocation(r.sc.Method, nil, nil)
	for !r.e.stopped {
		r.call(c, ctx, inv)
	}
}

// call makes one call: Select, then the filter's Invoke on the choice.
func (r *run) call(c *caller, ctx context.Context, inv base.Invocation) {
	start := r.e.clock.Now()
	defer func() {
		if v := recover(); v != nil {
			if r.e.stopped {
				return
			}
			r.rec.panicked(fmt.Sprint(v), start, r.e.clock.Now())
			r.e.sleep(c, r.e.clock.Now()+int64(backoff))
		}
	}()
	chosen := r.lb.lb.Select(r.list, inv)
	p, ours := chosen.(*invoker)
	if !ours || p.r != r {
		r.rec.unrouted(chosen == nil, start, start)
		r.e.sleep(c, start+int64(backoff))
		return
	}
	res := r.filter.Invoke(ctx, p, inv)
	if r.e.stopped {
		return
	}
	r.rec.done(p.idx, start, r.e.clock.Now(), res == nil || res.Error() != nil)
}

// providerURL returns the URL of a fake provider as a consumer receives it
// from the registry: the provider's parameters merged with the consumer's.
func providerURL(port int, p *Provider) (*common.URL, error) {
	q := url.Values{}
	q.Set(constant.InterfaceKey, Service)
	q.Set(constant.ReleaseKey, "dubbo-golang-3.3.2")
	if p.Weight != "" {
		q.Set(constant.WeightKey, p.Weight)
	}
	if p.Warmup > 0 {
		// dubbo-go providers write their export time in seconds and the
		// warmup in seconds.
		q.Set(constant.TimestampKey, strconv.FormatInt(WallOrigin.Add(p.Join).Unix(), 10))
		q.Set(constant.WarmupKey, strconv.FormatFloat(p.Warmup.Seconds(), 'f', -1, 64))
	}
	pu, err := common.NewURL(fmt.Sprintf("tri://127.0.0.1:%d/%s?%s", port, Service, q.Encode()))
	if err != nil {
		return nil, err
	}
	cu, err := common.NewURL("consumer://127.0.0.1/" + Service + "?" + constant.InterfaceKey + "=" + Service)
	if err != nil {
		return nil, err
	}
	return pu.MergeURL(cu), nil
}
