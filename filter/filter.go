// Package filter is the consumer filter that feeds package rpcstatus: it
// counts every call to a provider as in flight from the moment the filter
// passes it on until the provider's answer (or error, or panic) comes back,
// and records its outcome and duration.
//
// Least-active, RT-adaptive and LALB read these figures, so enable the filter
// on every reference that uses them:
//
//	dubbo:
//	  consumer:
//	    filter: lbactive
//
// Unlike dubbo-go's own "active" filter, the start time stays in process
// (nothing is attached to the request), the call is ended exactly once even
// when the next invoker panics, and the hot path takes no lock and allocates
// nothing.
//
// Every call's outcome also goes to outlier detection (rpcstatus.Stats.Judge)
// with the triple status code of its error, so that the
// balancers can eject a provider that fails (package
// loadbalance/internal/outlier); without this filter no provider is ever
// ejected.
//
// An optional limit on calls in flight per method, the actives URL parameter
// (methods.<m>.actives, or Dubbo Java's <m>.actives, first; see
// urlparam.MethodParam), makes a caller wait for a free slot for up to
// the method's timeout and then fail with ErrActiveLimit, as Dubbo's
// ActiveLimitFilter does. The limiter (the limit, the waiting and waking)
// is this package's; rpcstatus only counts, with Stats.TryBegin.
package filter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"
	"dubbo.apache.org/dubbo-go/v3/protocol/triple/triple_protocol"

	"github.com/dubbogo-lb/lb/internal/urlmap"
	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Name is the name the filter is registered under with dubbo-go.
const Name = "lbactive"

// ErrActiveLimit is returned, wrapped with details, when a call waited for
// a free slot under the actives limit for its whole timeout.
var ErrActiveLimit = errors.New("active limit exceeded")

// Options configure a Filter. The zero value is ready to use.
type Options struct {
	// Now is the monotonic clock, in nanoseconds; default rpcstatus.Nanotime.
	Now func() int64
	// After is the timer used while waiting for a slot; default time.After.
	After func(time.Duration) <-chan time.Time
	// AskLoad says whether the calls of method to the provider at u ask
	// for a load report (see LoadReportKey); read once per (provider,
	// method). Default: LoadReportKey when set, else whether the method's
	// balancer is one that asks for reports (loadaware, adaptive).
	AskLoad func(u *common.URL, method string) bool
	// Idle is how long the state of a (provider, method) without a call
	// is kept (its actives limiter, and the filter's hold on its
	// statistics); default DefaultIdle. Method names come from callers:
	// besides, at most rpcstatus.MethodLimit names per provider have a
	// state of their own, and the calls of further names share one
	// (urlmap.Overflow).
	Idle time.Duration
}

// DefaultIdle is the default Options.Idle.
const DefaultIdle = 5 * time.Minute

// Filter is the active-count filter. It is safe for concurrent use.
type Filter struct {
	now     func() int64
	after   func(time.Duration) <-chan time.Time
	askLoad func(u *common.URL, method string) bool
	idle    int64 // ns
}

// New returns a Filter with opts.
func New(opts Options) *Filter {
	f := &Filter{now: opts.Now, after: opts.After, askLoad: opts.AskLoad, idle: int64(opts.Idle)}
	if f.idle <= 0 {
		f.idle = int64(DefaultIdle)
	}
	if f.now == nil {
		f.now = rpcstatus.Nanotime
	}
	if f.after == nil {
		f.after = time.After
	}
	if f.askLoad == nil {
		f.askLoad = asksLoad
	}
	return f
}

// Invoke counts the call as in flight, passes it on and records its end.
func (f *Filter) Invoke(ctx context.Context, invoker base.Invoker, inv base.Invocation) result.Result {
	u := invoker.GetURL()
	now := f.now()
	p, m := f.lookup(u, inv.MethodName(), now)
	var call rpcstatus.Call
	if m.limit.max > 0 {
		var err error
		if call, err = f.acquire(ctx, p, m, u, inv.MethodName()); err != nil {
			return &result.RPCResult{Err: err}
		}
	} else {
		call = p.Begin(m.stats, now)
	}
	// Ended here rather than in OnResponse: dubbo-go calls OnResponse right
	// after Invoke returns, but not when the next invoker panics.
	failed, code := true, -1 // a panic: no outcome of the provider's
	defer func() {
		now := f.now()
		call.End(now, failed)
		if failed || m.stats.SuccessIsNews() {
			m.stats.Judge(now, failed, code)
		}
		if m.waiters.Load() > 0 {
			m.wakeWaiters()
		}
	}()
	var trailer *http.Header
	if m.ask {
		trailer = askLoad(inv)
	}
	res := invoker.Invoke(ctx, inv)
	if m.ask {
		readLoad(p, f.now(), inv, res, trailer)
	}
	switch {
	case res == nil:
	case res.Error() != nil:
		code = statusCode(res.Error())
	default:
		failed = false
	}
	return res
}

// statusCode returns the status code of a failed call's error as outlier
// detection judges it: the code of the triple status it carries (wrapped
// or not), the codes of deadline_exceeded and canceled for the context's
// errors, else rpcstatus.NoCode (a transport error, a closed client). It
// allocates nothing.
func statusCode(err error) int {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if te, ok := e.(*triple_protocol.Error); ok {
			return int(te.Code())
		}
		switch e {
		case context.DeadlineExceeded:
			return int(triple_protocol.CodeDeadlineExceeded)
		case context.Canceled:
			return int(triple_protocol.CodeCanceled)
		}
	}
	return rpcstatus.NoCode
}

// OnResponse returns res unchanged: the call was already ended in Invoke.
func (f *Filter) OnResponse(_ context.Context, res result.Result, _ base.Invoker, _ base.Invocation) result.Result {
	return res
}

// acquire waits for a slot under m's limit.
func (f *Filter) acquire(ctx context.Context, p *rpcstatus.Provider, m *method, u *common.URL, name string) (rpcstatus.Call, error) {
	lim := m.limit
	if c, ok := p.TryBegin(m.stats, f.now(), lim.max); ok {
		return c, nil
	}
	start := f.now()
	deadline := f.after(lim.wait)
	for {
		wake := m.wait()
		c, ok := p.TryBegin(m.stats, f.now(), lim.max)
		if ok {
			m.done()
			return c, nil
		}
		select {
		case <-wake:
			m.done()
		case <-deadline:
			m.done()
			return rpcstatus.Call{}, fmt.Errorf("%w: waited %v for a free slot on %s, method %s: %d calls in flight, limit %d (actives)",
				ErrActiveLimit, time.Duration(f.now()-start), u.Location, name, m.stats.Active(), lim.max)
		case <-ctx.Done():
			m.done()
			return rpcstatus.Call{}, fmt.Errorf("%w on %s, method %s: %w", ErrActiveLimit, u.Location, name, ctx.Err())
		}
	}
}

// providers holds, per provider URL, what the filter needs on every call:
// the provider's statistics and, per method, its statistics and actives
// limiter. A call costs one lookup of the URL and one of the method, as
// rpcstatus.Of and Provider.Method would; entries go with their URL, and
// a method's entry goes when it had no call for the filter's idle time
// (see sweep).
var providers urlmap.Store[common.URL, provider]

type provider struct {
	stats   atomic.Pointer[rpcstatus.Provider]
	methods urlmap.Names[method] // stamped with stampOf
	// swept is when methods was last swept (ns, the filter's clock).
	swept atomic.Int64
}

// stampShift makes the unit of the methods' stamps (stampOf): 2^30 ns,
// about a second, so that a call stamps its method once a second at most.
const stampShift = 30

func stampOf(now int64) int64 { return now >> stampShift }

// method is the filter's state of one (provider, method): its statistics
// and its actives limiter, the limit and the callers waiting under it. It
// is ready once ready is set.
type method struct {
	ready atomic.Bool
	stats *rpcstatus.Stats
	limit limit
	// ask is true when the calls ask the provider for a load report.
	ask bool

	// waiters counts callers blocked in wait; wake is the channel they
	// wait on, replaced each time it is closed.
	waiters atomic.Int32
	wake    atomic.Pointer[chan struct{}]
}

// limit is a cap on calls in flight, as the actives parameter sets it.
type limit struct {
	// max is the most calls in flight; 0 means no limit.
	max int64
	// wait is how long a caller waits for a free slot.
	wait time.Duration
}

// lookup returns the statistics of the provider whose URL is u and the
// filter's state of its method name at now, reading the limit from u on
// first use, when it also sweeps the provider's idle methods (sweep).
func (f *Filter) lookup(u *common.URL, name string, now int64) (*rpcstatus.Provider, *method) {
	e := providers.Get(u)
	p := e.stats.Load()
	if p == nil {
		p = rpcstatus.Of(u) // the same pointer for every caller
		e.stats.Store(p)
	}
	m, _ := e.methods.Get(name, stampOf(now))
	if !m.ready.Load() {
		f.sweep(e, p, now)
		m.setup(p, u, name, f.askLoad)
	}
	return p, m
}

// sweep releases, at most once per idle time and on the path of a
// method's first call only, the provider's methods that had no call for
// the idle time and none in flight, and the filter's hold on their
// statistics (rpcstatus.Provider.Release): O(methods) once per idle time.
func (f *Filter) sweep(e *provider, p *rpcstatus.Provider, now int64) {
	last := e.swept.Load()
	if now-last < f.idle || !e.swept.CompareAndSwap(last, now) {
		return
	}
	keepFrom := now - f.idle
	e.methods.Sweep(stampOf(keepFrom), func(_ string, m *method) bool {
		return !m.ready.Load() || m.stats.Active() > 0 || m.waiters.Load() > 0
	}, false)
	p.Release(keepFrom)
}

// setupMu serialises the first use of each (provider, method).
var setupMu sync.Mutex

func (m *method) setup(p *rpcstatus.Provider, u *common.URL, name string, ask func(*common.URL, string) bool) {
	setupMu.Lock()
	defer setupMu.Unlock()
	if !m.ready.Load() {
		m.stats, m.limit = p.Method(name), readLimit(u, name)
		m.ask = ask != nil && ask(u, name)
		m.ready.Store(true)
	}
}

// wait returns a channel that is closed the next time a call of m ends.
// Callers that wait for a free slot must call done when they stop waiting.
func (m *method) wait() <-chan struct{} {
	m.waiters.Add(1)
	for {
		if ch := m.wake.Load(); ch != nil {
			return *ch
		}
		ch := make(chan struct{})
		if m.wake.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// done undoes one wait.
func (m *method) done() { m.waiters.Add(-1) }

func (m *method) wakeWaiters() {
	if ch := m.wake.Swap(nil); ch != nil {
		close(*ch)
	}
}

// readLimit reads the actives limit and the timeout of method from u.
func readLimit(u *common.URL, method string) limit {
	lim := limit{max: urlparam.Actives(u, method)}
	lim.wait, _ = urlparam.MethodTimeout(u, method)
	return lim
}
