package simulate

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"

	"github.com/dubbogo-lb/lb/filter"
	"github.com/dubbogo-lb/lb/internal/builds"
)

// Server says when a call that reaches a provider at now (virtual ns) ends
// and whether it fails. rng is the simulation's random source. A server
// with limited capacity keeps its own queue state.
type Server func(now int64, rng *rand.Rand) (end int64, fail bool)

// Backoff is how long a caller waits after a call that could not be made
// (no provider selected, a balancer panic), so that virtual time moves on.
const Backoff = time.Millisecond

// Errors a simulated provider returns.
var (
	// ErrInjected is the error of a call its Server said fails.
	ErrInjected = errors.New("simulate: injected provider error")
	// ErrNotSimulated is returned by a provider called outside a
	// simulated caller (its context does not carry one).
	ErrNotSimulated = errors.New("simulate: provider called outside a simulation")
	errStopped      = errors.New("simulate: simulation ended")
)

// Options configure a Sim. The zero value is ready to use.
type Options struct {
	// Rand is the simulation's random source, handed to every Server;
	// default a PCG seeded with 1.
	Rand *rand.Rand
	// Wall is the virtual wall-clock time at Origin; default WallOrigin.
	Wall time.Time
	// Method is the method called; default "SayHello".
	Method string
	// Keys, when positive, gives each call one string argument, "key-0"
	// to "key-<Keys-1>" in turn, for balancers that hash arguments; 0
	// calls without arguments.
	Keys int
	// OnPick, when set, runs after each Select that chose provider p (the
	// index of its Add) at now.
	OnPick func(p int, now int64)
	// OnDone, when set, runs when a call to provider p completes, after
	// the filter recorded its end and before the caller selects again.
	OnDone func(p int, start, end int64, failed bool)
	// OnUnrouted, when set, runs when Select returned nil or a provider
	// that is not one of this Sim's; the caller then waits Backoff.
	OnUnrouted func(chosen base.Invoker, now int64)
	// OnPanic, when set, runs when Select panicked with v; the caller
	// then waits Backoff. When nil the panic is not recovered.
	OnPanic func(v any, now int64)
	// Answer, when set, gives the result attachments of a call to
	// provider p that ends at now and carries the attachment ask (the
	// load report a consumer asked for, loadreport.AskKey); nil: none.
	Answer func(p int, now int64) map[string]any
	// Ask is the request attachment that Answer answers.
	Ask string
}

// Consumer is one of several independent consumers of a Sim's providers:
// its own balancer and its own invokers (see View), so its own statistics.
type Consumer struct {
	LB   loadbalance.LoadBalance
	List []base.Invoker
}

// Sim is one simulation: providers served by Servers, a balancer, the real
// lbactive filter and callers on a virtual clock. Set LB and List before
// running; between runs, the caller of Run may change List, add providers
// and read every statistic, since no simulated caller runs then.
type Sim struct {
	// LB is the balancer under test.
	LB loadbalance.LoadBalance
	// List is what each Select is offered: providers returned by Add.
	// Replace it, or change it between runs; it is never modified here.
	List []base.Invoker
	// DubboActive feeds dubbo-go's own active counters around each call,
	// as if its active filter were configured (for dubbo-go's leastactive).
	DubboActive bool

	opts     Options
	own      ownConsumer
	e        engine
	filter   *filter.Filter
	rng      *rand.Rand
	provs    []*provider
	interval int64 // between open-loop arrivals; 0: none scheduled
	calls    int   // calls made, for Options.Keys
}

// New returns a Sim at virtual time Origin, with no providers.
func New(opts Options) *Sim {
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(1, 0x5eed))
	}
	if opts.Wall.IsZero() {
		opts.Wall = WallOrigin
	}
	if opts.Method == "" {
		opts.Method = "SayHello"
	}
	s := &Sim{opts: opts, rng: opts.Rand}
	s.own.s = s
	s.e.init(opts.Wall)
	s.filter = filter.New(filter.Options{Now: s.e.clock.Now})
	return s
}

// Clock returns the virtual clock, for the balancer's options.
func (s *Sim) Clock() *Clock { return &s.e.clock }

// Now returns the virtual monotonic time (ns).
func (s *Sim) Now() int64 { return s.e.clock.Now() }

// Rand returns the simulation's random source.
func (s *Sim) Rand() *rand.Rand { return s.rng }

// provider is a simulated provider: a real dubbo-go invoker whose Invoke
// takes virtual time.
type provider struct {
	*base.BaseInvoker
	s   *Sim
	idx int
	srv Server
}

// Add registers a provider at u served by srv and returns it; it is not put
// in List. Its index, used by the hooks, is the number of providers added
// before it.
func (s *Sim) Add(u *common.URL, srv Server) base.Invoker {
	p := &provider{BaseInvoker: base.NewBaseInvoker(u), s: s, idx: len(s.provs), srv: srv}
	s.provs = append(s.provs, p)
	return p
}

// View returns another consumer's invoker of provider of (returned by
// Add): the same Server and index, its own URL u, so its own statistics.
func (s *Sim) View(u *common.URL, of base.Invoker) base.Invoker {
	o := of.(*provider)
	return &provider{BaseInvoker: base.NewBaseInvoker(u), s: s, idx: o.idx, srv: o.srv}
}

// Provider returns the provider of index i.
func (s *Sim) Provider(i int) base.Invoker { return s.provs[i] }

// Index returns the index of inv if it is one of this Sim's providers.
func (s *Sim) Index(inv base.Invoker) (int, bool) {
	p, ok := inv.(*provider)
	if !ok || p.s != s {
		return -1, false
	}
	return p.idx, true
}

type callerKey struct{}

// Invoke serves the call in virtual time: the caller sleeps until the end
// its Server gives.
func (p *provider) Invoke(ctx context.Context, inv base.Invocation) result.Result {
	c, ok := ctx.Value(callerKey{}).(*caller)
	if !ok {
		return &result.RPCResult{Err: ErrNotSimulated}
	}
	s := p.s
	now := s.e.clock.Now()
	end, fail := p.srv(now, s.rng)
	if s.DubboActive {
		base.BeginCount(p.GetURL(), inv.MethodName())
	}
	s.e.sleep(c, end)
	if s.DubboActive {
		base.EndCount(p.GetURL(), inv.MethodName(), (end-now)/int64(time.Millisecond), !fail)
	}
	if s.e.stopped {
		return &result.RPCResult{Err: errStopped}
	}
	res := &result.RPCResult{Rest: "hello"}
	if fail {
		res = &result.RPCResult{Err: ErrInjected}
	}
	if s.opts.Answer != nil {
		if _, asked := inv.GetAttachment(s.opts.Ask); asked {
			res.Attrs = s.opts.Answer(p.idx, end)
		}
	}
	return res
}

// At runs fn at virtual time t (monotonic ns), between callers.
func (s *Sim) At(t int64, fn func()) { s.e.schedule(t, nil, fn) }

// Callers starts n closed-loop callers now: each sends its next call as
// soon as the previous one returns.
func (s *Sim) Callers(n int) { s.callersOf(&s.own, n) }

// CallersOf starts n closed-loop callers of consumer c now.
func (s *Sim) CallersOf(c *Consumer, n int) {
	inline(c.LB)
	s.callersOf(c, n)
}

// chooser is what a caller selects with: the Sim's own LB and List (read
// at each call, as they may change between runs), or a Consumer's.
type chooser interface {
	choose(inv base.Invocation) base.Invoker
}

func (c *Consumer) choose(inv base.Invocation) base.Invoker { return c.LB.Select(c.List, inv) }

type ownConsumer struct{ s *Sim }

func (o *ownConsumer) choose(inv base.Invocation) base.Invoker {
	if o.s.LB == nil {
		panic("simulate: no balancer")
	}
	return o.s.LB.Select(o.s.List, inv)
}

func (s *Sim) callersOf(c chooser, n int) {
	for range n {
		s.e.spawn(func(cl *caller) { s.closedLoop(cl, c) })
	}
}

// Arrivals sends rate calls per second from now on, whatever happens to
// them (an open loop); a later call changes the rate.
func (s *Sim) Arrivals(rate float64) {
	first := s.interval == 0
	s.interval = max(int64(float64(time.Second)/rate), 1)
	if first {
		s.At(s.Now(), s.arrive)
	}
}

func (s *Sim) arrive() {
	s.e.spawn(s.oneCall)
	s.At(s.Now()+s.interval, s.arrive)
}

// Run runs the simulation until the virtual time until (monotonic ns):
// every event before it, in time order.
func (s *Sim) Run(until int64) {
	inline(s.LB)
	s.e.runUntil(until)
}

// inline makes lb build its snapshots on the calls that see a new
// membership, as a balancer of this module does for short lists only
// (package builds): a build on a goroutine of its own
// would race the virtual clock and make a run depend on the machine.
func inline(lb loadbalance.LoadBalance) {
	if c, ok := builds.Of(lb); ok {
		c.SetInlineUpTo(math.MaxInt)
	}
}

// Stop ends the simulation: the calls in flight return an error (the filter
// records them as failed at the current time) and every caller exits. Run
// does nothing after it.
func (s *Sim) Stop() { s.e.stop() }

func (s *Sim) closedLoop(c *caller, ch chooser) {
	ctx := context.WithValue(context.Background(), callerKey{}, c)
	inv := invocation.NewRPCInvocation(s.opts.Method, nil, nil)
	for !s.e.stopped {
		s.call(c, ch, ctx, s.invocation(inv))
	}
}

func (s *Sim) oneCall(c *caller) {
	if !s.e.stopped {
		s.call(c, &s.own, context.WithValue(context.Background(), callerKey{}, c), s.invocation(invocation.NewRPCInvocation(s.opts.Method, nil, nil)))
	}
}

// invocation returns the invocation of the next call: inv, or one with the
// next key when Options.Keys is set.
func (s *Sim) invocation(inv base.Invocation) base.Invocation {
	if s.opts.Keys <= 0 {
		return inv
	}
	k := s.calls % s.opts.Keys
	s.calls++
	return invocation.NewRPCInvocation(s.opts.Method, []any{"key-" + strconv.Itoa(k)}, nil)
}

// call makes one call: Select, then the filter's Invoke on the choice.
func (s *Sim) call(c *caller, ch chooser, ctx context.Context, inv base.Invocation) {
	start := s.Now()
	chosen, ok := s.selectProvider(ch, inv)
	if !ok {
		s.e.sleep(c, start+int64(Backoff))
		return
	}
	p, ours := chosen.(*provider)
	if !ours || p.s != s {
		if s.opts.OnUnrouted != nil {
			s.opts.OnUnrouted(chosen, start)
		}
		s.e.sleep(c, start+int64(Backoff))
		return
	}
	if s.opts.OnPick != nil {
		s.opts.OnPick(p.idx, start)
	}
	res := s.filter.Invoke(ctx, p, inv)
	if s.e.stopped {
		return
	}
	if s.opts.OnDone != nil {
		s.opts.OnDone(p.idx, start, s.Now(), res == nil || res.Error() != nil)
	}
}

// selectProvider runs Select, recovering a panic when OnPanic is set.
func (s *Sim) selectProvider(ch chooser, inv base.Invocation) (chosen base.Invoker, ok bool) {
	if s.opts.OnPanic != nil {
		defer func() {
			if v := recover(); v != nil {
				s.opts.OnPanic(v, s.Now())
				chosen, ok = nil, false
			}
		}()
	}
	return ch.choose(inv), true
}
