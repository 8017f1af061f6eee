package describe

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// defaultWindow is the time the shares of a Snapshot cover by default.
const defaultWindow = 10 * time.Second

// Options configure a Registry. The zero value is ready to use.
type Options struct {
	// Window is the time the providers' shares of picks cover: a
	// Snapshot compares the picks with those of the Snapshot taken about
	// Window before. Default 10 s.
	Window time.Duration
	// Now is the monotonic clock, in nanoseconds; default
	// rpcstatus.Nanotime, the clock of the statistics.
	Now func() int64
	// Wall is the wall clock of Snapshot.Time; default time.Now.
	Wall func() time.Time
}

// Registry is a set of named Sources and the recent history of their
// picks, from which it computes the shares. It is safe for concurrent use;
// a Snapshot holds no lock while the Sources describe themselves.
type Registry struct {
	window, step int64 // ns
	now          func() int64
	wall         func() time.Time

	mu      sync.Mutex // guards sources and subsets
	sources []named
	subsets func() []Subset

	hmu     sync.Mutex // guards history
	history map[methodKey]*history
}

type named struct {
	name     string
	src      Source
	panicked *atomic.Bool // logged once
}

type methodKey struct{ balancer, service, method string }

// history is the picks of each provider of a (service, method) at a few
// recent times, oldest first, at least step apart.
type history struct {
	samples []sample
	seen    bool // in the Snapshot being taken
}

type sample struct {
	at    int64
	picks map[string]int64 // by address
}

// Default is the Registry of the balancers that package extension
// registers with dubbo-go.
var Default = New(Options{})

// Register adds src to Default under name (see Registry.Register).
func Register(name string, src Source) { Default.Register(name, src) }

// New returns an empty Registry.
func New(opts Options) *Registry {
	r := &Registry{window: int64(opts.Window), now: opts.Now, wall: opts.Wall, history: map[methodKey]*history{}}
	if r.window <= 0 {
		r.window = int64(defaultWindow)
	}
	r.step = r.window / 10
	if r.now == nil {
		r.now = rpcstatus.Nanotime
	}
	if r.wall == nil {
		r.wall = time.Now
	}
	return r
}

// SetSubsets makes f the source of Snapshot.Subsets (nil: none). Package
// extension sets Default's to the subsets of its Nacos discovery.
func (r *Registry) SetSubsets(f func() []Subset) {
	r.mu.Lock()
	r.subsets = f
	r.mu.Unlock()
}

// Register adds src under name, replacing a Source registered under the
// same name before.
func (r *Registry) Register(name string, src Source) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.sources {
		if r.sources[i].name == name {
			r.sources[i].src = src
			return
		}
	}
	r.sources = append(r.sources, named{name, src, new(atomic.Bool)})
}

// Snapshot describes every registered balancer now. Each provider's share
// covers its picks since the Snapshot taken about the Registry's window
// before (Method.ShareSeconds), or every pick when there was none;
// Snapshots may be taken at any rate, concurrently. Every float of the
// result is finite (NaN reads 0, ±Inf ±math.MaxFloat64), so it marshals
// to JSON; a Source that panics is listed without methods, logged once.
func (r *Registry) Snapshot() Snapshot {
	r.mu.Lock()
	sources := slices.Clone(r.sources)
	subsets := r.subsets
	r.mu.Unlock()
	now := r.now()
	out := Snapshot{Time: r.wall(), Balancers: make([]Balancer, 0, len(sources))}
	if subsets != nil {
		out.Subsets = subsets()
	}
	for _, s := range sources {
		methods, rebuilds := describeSource(s, now)
		slices.SortFunc(methods, func(a, b Method) int {
			return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Method, b.Method))
		})
		out.Balancers = append(out.Balancers, Balancer{Name: s.name, Rebuilds: rebuilds, Methods: methods})
	}
	r.hmu.Lock()
	defer r.hmu.Unlock()
	for _, b := range out.Balancers {
		for i := range b.Methods {
			r.share(methodKey{b.Name, b.Methods[i].Service, b.Methods[i].Method}, &b.Methods[i], now)
			finiteMethod(&b.Methods[i])
		}
	}
	for k, h := range r.history {
		if !h.seen {
			delete(r.history, k) // a (service, method) no longer served
		}
		h.seen = false
	}
	return out
}

// describeSource returns what s says at now; no methods when it panics.
func describeSource(s named, now int64) (methods []Method, rebuilds Rebuilds) {
	defer func() {
		if v := recover(); v != nil {
			methods, rebuilds = []Method{}, Rebuilds{}
			if s.panicked.CompareAndSwap(false, true) {
				lblog.Warnf("describing balancer %q panicked, listed without methods (logged once): %v", s.name, v)
			}
		}
	}()
	methods, rebuilds = s.src.Describe(now), s.src.Rebuilds()
	if methods == nil {
		methods = []Method{} // [] in JSON
	}
	return methods, rebuilds
}

// share fills the shares of m from its picks and the history of key, and
// records the picks when the last sample is a step old.
func (r *Registry) share(key methodKey, m *Method, now int64) {
	h := r.history[key]
	if h == nil {
		h = &history{}
		r.history[key] = h
	}
	h.seen = true
	// The base is the youngest sample at least a window old.
	for len(h.samples) > 1 && now-h.samples[1].at >= r.window {
		h.samples = h.samples[1:]
	}
	// Never younger than now: a concurrent Snapshot may have recorded one.
	var base *sample
	if len(h.samples) > 0 && h.samples[0].at <= now {
		base = &h.samples[0]
		m.ShareSeconds = time.Duration(now - base.at).Seconds()
	}
	// Share holds the recent picks until the total is known.
	var total int64
	for i := range m.Providers {
		n := recent(&m.Providers[i], base)
		m.Providers[i].Share = float64(n)
		total += n
	}
	for i := range m.Providers {
		if total > 0 {
			m.Providers[i].Share /= float64(total)
		} else {
			m.Providers[i].Share = 0
		}
	}
	if n := len(h.samples); n == 0 || now-h.samples[n-1].at >= r.step {
		picks := make(map[string]int64, len(m.Providers))
		for _, p := range m.Providers {
			picks[p.Address] = p.Picks
		}
		h.samples = append(h.samples, sample{at: now, picks: picks})
	}
}

// recent returns the picks of p since base, or all of them without a base
// (or when its counter started again: a provider re-registered).
func recent(p *Provider, base *sample) int64 {
	if base == nil {
		return p.Picks
	}
	if old := base.picks[p.Address]; old <= p.Picks {
		return p.Picks - old
	}
	return p.Picks
}
