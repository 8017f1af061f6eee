package nacosdiscovery

import (
	"sync"

	"dubbo.apache.org/dubbo-go/v3/cluster/directory"
	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/registry"
	regdir "dubbo.apache.org/dubbo-go/v3/registry/directory"

	"github.com/dubbogo-lb/lb/internal/urlparam"
)

// NewAppDirectory returns a factory for dubbo-go's extension.SetDirectory
// under its service-discovery registry protocol (application level):
// dubbo-go's own service-discovery registry directory, told of the
// reference's subset only when the reference subsets (lb.subset.size).
// dubbo-go's listener of an application's instances serves every
// reference mapped to it, and tells each reference's directory every
// provider URL at once (NotifyAll); the subset is drawn between the two,
// per reference. The consumers of an application are not registered at
// application level, so the subset is drawn by rendezvous hashing.
func NewAppDirectory(o Options) func(*common.URL, registry.Registry) (directory.Directory, error) {
	o = o.withDefaults()
	return func(url *common.URL, reg registry.Registry) (directory.Directory, error) {
		if cfg, _ := urlparam.ReadSubset(url.SubURL); url.SubURL == nil || cfg.Size <= 0 {
			return regdir.NewServiceDiscoveryRegistryDirectory(url, reg) // dubbo-go's, as is
		}
		return regdir.NewServiceDiscoveryRegistryDirectory(url, &subsetRegistry{Registry: reg, opts: o})
	}
}

// subsetRegistry is a registry whose subscriptions of references that
// subset go through a subsetListener.
type subsetRegistry struct {
	registry.Registry
	opts Options
	subs listeners[*subsetListener]
}

// Subscribe subscribes listener, through a subsetListener when the
// reference url subsets.
func (r *subsetRegistry) Subscribe(url *common.URL, listener registry.NotifyListener) error {
	cfg := readSubset(url)
	if cfg.Size <= 0 {
		return r.Registry.Subscribe(url, listener)
	}
	l := r.subs.getOrAdd(listener, func() *subsetListener {
		l := &subsetListener{NotifyListener: listener, subset: newSubsetting(url, cfg, levelApplication), done: make(chan struct{})}
		l.subset.start()
		go l.subset.watchEjections(r.opts.SubsetCheck, l.done, l.refresh)
		return l
	})
	return r.Registry.Subscribe(url, l)
}

// UnSubscribe ends the subscription of listener.
func (r *subsetRegistry) UnSubscribe(url *common.URL, listener registry.NotifyListener) error {
	l := r.subs.remove(listener)
	if l == nil {
		return r.Registry.UnSubscribe(url, listener)
	}
	l.close()
	return r.Registry.UnSubscribe(url, l)
}

// Destroy ends every subset's watch, then destroys the wrapped registry.
func (r *subsetRegistry) Destroy() {
	for _, l := range r.subs.removeAll() {
		l.close()
	}
	r.Registry.Destroy()
}

// subsetListener passes on to a directory the members of the full lists it
// is told that the reference's subset holds.
type subsetListener struct {
	registry.NotifyListener
	subset *subsetting
	done   chan struct{}
	once   sync.Once

	mu   sync.Mutex // serialises the lists passed on
	last []*registry.ServiceEvent
}

// NotifyAll passes on the events of the members held.
func (l *subsetListener) NotifyAll(events []*registry.ServiceEvent, done func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = events
	l.NotifyListener.NotifyAll(l.held(events), done)
}

// refresh passes on the last list again, drawn anew (the members ejected
// changed).
func (l *subsetListener) refresh() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last != nil {
		l.NotifyListener.NotifyAll(l.held(l.last), func() {})
	}
}

// held returns the events of the members held. Every provider URL listed
// is usable (the discovery lists the enabled, healthy instances only).
func (l *subsetListener) held(events []*registry.ServiceEvent) []*registry.ServiceEvent {
	cands := make([]candidate, 0, len(events))
	for _, e := range events {
		if e != nil && e.Service != nil {
			cands = append(cands, candidate{url: e.Service, usable: true})
		}
	}
	held := l.subset.pick(cands)
	out := make([]*registry.ServiceEvent, 0, len(held))
	for _, e := range events {
		if e != nil && e.Service != nil && held[e.Service.Location] {
			out = append(out, e)
		}
	}
	return out
}

func (l *subsetListener) close() {
	l.once.Do(func() {
		close(l.done)
		l.subset.stop()
	})
}
