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
// An optional limit on calls in flight per method, the actives URL parameter
// (methods.<m>.actives, or Dubbo Java's <m>.actives, first; see
// urlparam.MethodParam), makes a caller wait for a free slot for up to
// the method's timeout and then fail with ErrActiveLimit, as Dubbo's
// ActiveLimitFilter does.
package filter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"

	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup/urlparam"
)

// Name is the name the filter is registered under with dubbo-go.
const Name = "lbactive"

// ActivesKey is the URL parameter that limits calls in flight per method.
const ActivesKey = urlparam.ActivesKey

// ErrActiveLimit is returned, wrapped with details, when a call waited for
// a free slot under the actives limit for its whole timeout.
var ErrActiveLimit = errors.New("active limit exceeded")

// Options configure a Filter. The zero value is ready to use.
type Options struct {
	// Now is the monotonic clock, in nanoseconds; default rpcstatus.Nanotime.
	Now func() int64
	// After is the timer used while waiting for a slot; default time.After.
	After func(time.Duration) <-chan time.Time
}

// Filter is the active-count filter. It is safe for concurrent use.
type Filter struct {
	now   func() int64
	after func(time.Duration) <-chan time.Time
}

// New returns a Filter with opts.
func New(opts Options) *Filter {
	f := &Filter{now: opts.Now, after: opts.After}
	if f.now == nil {
		f.now = rpcstatus.Nanotime
	}
	if f.after == nil {
		f.after = time.After
	}
	return f
}

// Invoke counts the call as in flight, passes it on and records its end.
func (f *Filter) Invoke(ctx context.Context, invoker base.Invoker, inv base.Invocation) result.Result {
	u := invoker.GetURL()
	p := rpcstatus.Of(u)
	m := p.Method(inv.MethodName())
	lim := m.Limit()
	if lim == nil {
		lim = readLimit(u, inv.MethodName())
		m.SetLimit(lim)
	}
	var call rpcstatus.Call
	if lim.Max > 0 {
		var err error
		if call, err = f.acquire(ctx, p, m, lim, u, inv.MethodName()); err != nil {
			return &result.RPCResult{Err: err}
		}
	} else {
		call = p.Begin(m, f.now())
	}
	// Ended here rather than in OnResponse: dubbo-go calls OnResponse right
	// after Invoke returns, but not when the next invoker panics.
	failed := true
	defer func() { call.End(f.now(), failed) }()
	res := invoker.Invoke(ctx, inv)
	failed = res == nil || res.Error() != nil
	return res
}

// OnResponse returns res unchanged: the call was already ended in Invoke.
func (f *Filter) OnResponse(_ context.Context, res result.Result, _ base.Invoker, _ base.Invocation) result.Result {
	return res
}

// acquire waits for a slot under lim.
func (f *Filter) acquire(ctx context.Context, p *rpcstatus.Provider, m *rpcstatus.Stats, lim *rpcstatus.Limit, u *common.URL, method string) (rpcstatus.Call, error) {
	if c, ok := p.TryBegin(m, f.now(), lim.Max); ok {
		return c, nil
	}
	start := f.now()
	deadline := f.after(lim.Wait)
	for {
		wake := m.Wait()
		c, ok := p.TryBegin(m, f.now(), lim.Max)
		if ok {
			m.Done()
			return c, nil
		}
		select {
		case <-wake:
			m.Done()
		case <-deadline:
			m.Done()
			return rpcstatus.Call{}, fmt.Errorf("%w: waited %v for a free slot on %s, method %s: %d calls in flight, limit %d (actives)",
				ErrActiveLimit, time.Duration(f.now()-start), u.Location, method, m.Active(), lim.Max)
		case <-ctx.Done():
			m.Done()
			return rpcstatus.Call{}, fmt.Errorf("%w on %s, method %s: %w", ErrActiveLimit, u.Location, method, ctx.Err())
		}
	}
}

// readLimit reads the actives limit and the timeout of method from u.
func readLimit(u *common.URL, method string) *rpcstatus.Limit {
	lim := &rpcstatus.Limit{Max: urlparam.Actives(u, method)}
	lim.Wait, _ = urlparam.MethodTimeout(u, method)
	return lim
}
