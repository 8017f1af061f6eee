package rpcstatus

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/internal/urlmap"
)

// Provider holds the statistics of one provider: the figures of all its
// calls together and those of each method.
//
// Method names come from callers and providers, so a Provider keeps at
// most MethodLimit methods' figures: the calls of further names share
// those of urlmap.Overflow. The figures of a method stay while anything
// holds them (a balancer's snapshot, the lbactive filter's state of the
// method): whoever asks for them meanwhile gets the same Stats. Besides,
// the Provider holds them itself until Release finds them idle; then they
// go when their last holder lets go of them.
type Provider struct {
	all     Counters
	methods urlmap.Names[methodRef]
	mu      sync.Mutex // serialises the making of a method's Stats
	load    Load
	// url is the URL whose statistics these are, set by Of; weak, as the
	// store holds its URLs.
	url atomic.Pointer[weak.Pointer[common.URL]]
}

// IsOf reports whether p are the statistics of the provider whose URL is
// u: Lookup(u) == p, without the lookup.
func (p *Provider) IsOf(u *common.URL) bool {
	w := p.url.Load()
	return w != nil && w.Value() == u
}

// MethodLimit is the number of distinct method names a Provider keeps
// figures of; the calls of further names share one Stats
// (urlmap.Overflow).
const MethodLimit = urlmap.DefaultNameLimit

// methodRef is the Provider's hold on the Stats of one method: strong
// until Release drops it, weak always, so that the Stats stay shared while
// someone else holds them.
type methodRef struct {
	strong atomic.Pointer[Stats]
	weak   weak.Pointer[Stats] // set once, under Provider.mu
}

// All returns the figures of every call to the provider, whatever the method.
func (p *Provider) All() *Counters { return &p.all }

// Method returns the figures of one method, creating them on first use.
// Lookups of a known method take no lock and allocate nothing. Beyond
// MethodLimit names, a new name gets the figures of urlmap.Overflow.
func (p *Provider) Method(name string) *Stats {
	for {
		r, _ := p.methods.Get(name, 0)
		if s := r.strong.Load(); s != nil {
			return s
		}
		if s := p.hold(name, r); s != nil {
			return s
		}
	}
}

// hold returns the Stats of r, the entry of name, making them on first
// use and holding them again after a Release; nil when they were
// collected (r is then forgotten: Get the name again).
func (p *Provider) hold(name string, r *methodRef) *Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := r.strong.Load(); s != nil {
		return s
	}
	var zero weak.Pointer[Stats]
	if r.weak == zero {
		s := new(Stats)
		r.weak = weak.Make(s)
		r.strong.Store(s)
		runtime.AddCleanup(s, forget, forgotten{p: weak.Make(p), name: urlmap.NameOf(r), ref: weak.Make(r)})
		return s
	}
	if s := r.weak.Value(); s != nil {
		r.strong.Store(s)
		return s
	}
	p.methods.Forget(urlmap.NameOf(r), r)
	return nil
}

// forgotten is what the cleanup of a method's Stats needs, all of it
// weakly: the runtime keeps a cleanup's argument alive as long as the
// object it watches, so an argument that reached the Stats would keep them
// forever. The Provider holds the Stats until Release and must not be kept
// by them once its URL is gone; the entry holds them (methodRef.strong)
// until Release too, and a Provider collected before any Release would
// leave them, and the outlier records kept for them, alive for good.
type forgotten struct {
	p    weak.Pointer[Provider]
	name string
	ref  weak.Pointer[methodRef] // the entry (a Names value: its object's start)
}

// forget runs once the Stats of f.ref were collected.
func forget(f forgotten) {
	p, r := f.p.Value(), f.ref.Value()
	if p != nil && r != nil {
		p.methods.Forget(f.name, r)
	}
}

// Release lets go of the Provider's own hold on the figures of every
// method without a call in flight and none begun at or after keepFrom
// (ns, the clock given to Begin): they go once nothing else holds them,
// and a later Method makes them anew. The lbactive filter calls it for
// the methods it releases. It takes the Provider's lock; off the hot path.
func (p *Provider) Release(keepFrom int64) {
	p.methods.Range(func(_ string, r *methodRef) bool {
		if s := r.strong.Load(); s != nil && s.Active() == 0 && s.used.Load() < stampOf(keepFrom) {
			r.strong.CompareAndSwap(s, nil)
		}
		return true
	})
}

// MethodCount returns the number of methods whose figures the Provider
// still has (held by it or by anyone else), urlmap.Overflow excluded.
func (p *Provider) MethodCount() int { return p.methods.Len() }

// Methods calls f for every method whose figures are still held.
func (p *Provider) Methods(f func(name string, s *Stats)) {
	p.methods.Range(func(name string, r *methodRef) bool {
		if s := r.strong.Load(); s != nil {
			f(name, s)
		} else if s := p.weakStats(r); s != nil {
			f(name, s)
		}
		return true
	})
}

// weakStats reads r's weak pointer under the lock that sets it.
func (p *Provider) weakStats(r *methodRef) *Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return r.weak.Value()
}

// Call is the record of one call in flight: the provider, the method and
// the start time, so that End updates exactly what Begin did.
type Call struct {
	provider *Provider
	method   *Stats
	start    int64
}

// Begin records the start of a call to method at now (ns) on the provider
// and its method and returns the record to End it with.
func (p *Provider) Begin(method *Stats, now int64) Call {
	p.all.Begin(now)
	method.Begin(now)
	return Call{provider: p, method: method, start: now}
}

// TryBegin is Begin under a limit of calls in flight for the method; ok is
// false, and nothing is recorded, when the method is at its limit.
func (p *Provider) TryBegin(method *Stats, now, limit int64) (c Call, ok bool) {
	if !method.TryBegin(now, limit) {
		return Call{}, false
	}
	p.all.Begin(now)
	return Call{provider: p, method: method, start: now}, true
}

// End records the end of the call at now (ns).
func (c Call) End(now int64, failed bool) {
	c.method.End(c.start, now, failed)
	c.provider.all.End(c.start, now, failed)
}

// Start returns the start time given to Begin.
func (c Call) Start() int64 { return c.start }
