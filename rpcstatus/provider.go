package rpcstatus

import (
	"sync/atomic"
	"weak"

	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/internal/urlmap"
)

// Provider holds the statistics of one provider: the figures of all its
// calls together and those of each method.
type Provider struct {
	all     Counters
	methods urlmap.Index[Stats]
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

// All returns the figures of every call to the provider, whatever the method.
func (p *Provider) All() *Counters { return &p.all }

// Method returns the figures of one method, creating them on first use.
// Lookups of a known method take no lock and allocate nothing.
func (p *Provider) Method(name string) *Stats { return p.methods.Get(name) }

// Methods calls f for every method seen so far.
func (p *Provider) Methods(f func(name string, s *Stats)) {
	p.methods.Range(func(name string, s *Stats) bool { f(name, s); return true })
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
