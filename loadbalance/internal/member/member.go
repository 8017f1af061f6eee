// Package member turns the invoker list dubbo-go passes to Select into an
// immutable snapshot per (service, method): a Set of providers with their
// statistics, metadata, warm weights and outlier decisions, and the
// balancer's table built from it (a View). A change of membership is
// detected cheaply and rebuilt off the call's path; the new snapshot is
// published atomically. Notes: DESIGN.md.
package member

import (
	"bytes"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlmap"
	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/outlier"
	"github.com/dubbogo-lb/lb/loadbalance/internal/zone"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// SampleAbove is the longest list Pick compares in full, on 1 call in
// fullCheckEvery; above, it compares a random window of sampleWindow
// providers, and in full once per router chain generation.
const (
	SampleAbove    = 1024
	sampleWindow   = 64
	fullCheckEvery = 16
	subsetRebuild  = 16 // Selects in a row on a strict subset that make it the membership
)

// Set is an immutable snapshot of the providers offered to a balancer for
// one (service, method). Index i means the same provider in every slice.
type Set struct {
	// Invokers are the providers in dubbo-go's order: the list the first
	// Select of this membership was given, not a copy.
	Invokers []base.Invoker
	Total    float64 // the sum of the warm weights
	Uniform  bool    // the warm weights are all equal
	Method   string
	// Ejected marks the providers outlier detection ejected (weight 0);
	// nil for none. Balancers that ignore weights skip them.
	Ejected  []bool
	Outliers bool // an outlier rule may eject providers
	Panic    bool // outlier detection ignores its ejections (outlier.Decision)

	// The members' (zones nil: none named; memo nil for a zone's Set).
	providers []*rpcstatus.Provider
	meta      []*warmup.Meta
	zones     []string
	memo      *memo
	own       []*warmup.Meta // Meta where some provider has a method-level weight

	maxWeight float64
	stats     []*rpcstatus.Stats
	weights   []float64
	warm      *warmWeights // where weights come from, with their alias table

	index     index
	given     *base.Invoker // the first element of the list the Set was built from
	refreshAt int64         // when warm weights are due (Unix ns); 0: all warm
	board     *rpcstatus.Board
	alarm     uint64 // the board's alarm at the build (stale)
}

// Board returns the Set's outlier board.
func (s *Set) Board() *rpcstatus.Board { return s.board }

// IsEjected reports whether provider i is ejected.
func (s *Set) IsEjected(i int) bool { return s.Ejected != nil && s.Ejected[i] }

// stale reports whether outlier detection has news since the Set was built.
func (s *Set) stale() bool { return s.board.Raised() != s.alarm }

// Stat returns the statistics of provider i for the Set's method.
func (s *Set) Stat(i int) *rpcstatus.Stats { return s.stats[i] }

// Stats returns the providers' statistics, in order; read only.
func (s *Set) Stats() []*rpcstatus.Stats { return s.stats }

// Weight returns provider i's warm weight, 0 when it is ejected; when
// every provider left is drained, each counts as 1.
func (s *Set) Weight(i int) float64 { return s.weights[i] }

// Weights returns the warm weights, in order; read only.
func (s *Set) Weights() []float64 { return s.weights }

// Provider returns the statistics of provider i.
func (s *Set) Provider(i int) *rpcstatus.Provider { return s.providers[i] }

// Meta returns what provider i's URL says of weight and age.
func (s *Set) Meta(i int) *warmup.Meta {
	if s.own != nil {
		return s.own[i]
	}
	return s.meta[i]
}

// Zone returns the zone of provider i (urlparam.ZoneKey), "" for none.
func (s *Set) Zone(i int) string {
	if s.zones == nil {
		return ""
	}
	return s.zones[i]
}

// Zoned reports whether some provider names a zone.
func (s *Set) Zoned() bool { return s.zones != nil }

// Len returns the number of providers.
func (s *Set) Len() int { return len(s.Invokers) }

// Index returns the position of inv in the Set.
func (s *Set) Index(inv base.Invoker) (int, bool) {
	return s.index.find(s.Invokers, inv)
}

// matches reports whether list holds exactly the Set's providers in order.
func (s *Set) matches(list []base.Invoker) bool {
	n := len(list)
	if n != len(s.Invokers) {
		return false
	}
	if &list[0] == s.given { // dubbo-go never changes a list it handed out
		return true
	}
	return same(list, s.Invokers)
}

// same reports whether a and b, of one length, hold the same providers in
// order: the memory first, identical interface words being the same.
func same(a, b []base.Invoker) bool {
	if bytes.Equal(words(a), words(b)) {
		return true
	}
	for i, inv := range a {
		if inv != b[i] {
			return false
		}
	}
	return true
}

// matchesQuick is matches for Pick, in O(1): the ends, then the whole list
// on 1 call in fullCheckEvery up to SampleAbove providers; above, a random
// window, or the whole list on a new router chain generation.
func (v *View[T]) matchesQuick(list []base.Invoker, inv base.Invocation) bool {
	s := v.Set
	n := len(list)
	if n != len(s.Invokers) || list[0] != s.Invokers[0] || list[n-1] != s.Invokers[n-1] {
		return false
	}
	r := rand.Uint32()
	if n <= SampleAbove {
		return r%fullCheckEvery != 0 || s.matches(list)
	}
	if gen := routerGeneration(inv); gen != 0 && gen != v.checked.Load() {
		if !s.matches(list) {
			return false
		}
		v.checked.Store(gen)
		return true
	}
	at := int(r % uint32(n-sampleWindow+1))
	return same(list[at:at+sampleWindow], s.Invokers[at:at+sampleWindow])
}

// routerGeneration returns the invoker list generation dubbo-go's router
// chain sets on inv, which every change of the directory moves; 0: none.
func routerGeneration(inv base.Invocation) uint64 {
	if inv == nil {
		return 0
	}
	g, _ := inv.GetAttributeWithDefaultValue(constant.RouterChainCacheGeneration, uint64(0)).(uint64)
	return g
}

func words(list []base.Invoker) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(list))), len(list)*int(unsafe.Sizeof(list[0])))
}

// contains reports whether every provider of list is in the Set.
func (s *Set) contains(list []base.Invoker) bool {
	found := 0
	s.index.follow(s.Invokers, list, func(int, int) { found++ })
	return found == len(list)
}

// PickAmong returns a provider of list, a subset of the Set, drawn with
// the random word r by warm weight (uniformly if none has weight).
func (s *Set) PickAmong(list []base.Invoker, r uint64) base.Invoker {
	return list[algo.Weighted(len(list), func(k int) float64 { i, _ := s.Index(list[k]); return s.Weight(i) }, r)]
}

// The most draws of Interim and of InterimIn.
const (
	interimDraws     = 8
	interimZoneDraws = 16
)

// Interim picks a provider of list, a membership whose snapshot is being
// built, by the warm weights the providers had in old, the snapshot it
// replaces (nil: uniformly): by rejection from uniform draws, skipping
// providers old does not hold or gives no weight unless interimDraws draws
// found no other. O(1).
func Interim(old *Set, list []base.Invoker, next func() uint64) base.Invoker {
	c := list[algo.IntN(next(), len(list))]
	for k := 0; k < interimDraws && old != nil && old.maxWeight > 0 && !old.keeps(c, next, "", false); k++ {
		c = list[algo.IntN(next(), len(list))]
	}
	return c
}

// InterimIn is Interim among the providers old (not nil) places in zone;
// after interimZoneDraws draws without one, Interim over all of list.
func InterimIn(old *Set, list []base.Invoker, next func() uint64, zone string) base.Invoker {
	n := len(list)
	for range interimZoneDraws {
		if c := list[algo.IntN(next(), n)]; old.keeps(c, next, zone, true) {
			return c
		}
	}
	return Interim(old, list, next)
}

// keeps reports whether Interim's rejection step keeps c: s holds it (in
// zone, when zoned) and a draw by its warm weight keeps it.
func (s *Set) keeps(c base.Invoker, next func() uint64, zone string, zoned bool) bool {
	j, ok := s.Index(c)
	if !ok || zoned && s.Zone(j) != zone {
		return false
	}
	w := s.Weight(j)
	return w >= s.maxWeight || algo.Float64(next())*s.maxWeight < w
}

// View pairs a Set with the table a balancer built from it.
type View[T any] struct {
	*Set
	Table   *T         // the balancer's own state for the Set
	Zoning  *Zoning[T] // nil when the consumer names no zone
	watch   *filterWatch
	checked atomic.Uint64 // the router generation of the last full compare
}

// BuildFunc builds a balancer's table for set. prev is the view it
// replaces (nil at first), to carry state over from (Carry).
type BuildFunc[T any] func(set *Set, prev *View[T]) *T

// DefaultInlineUpTo is the default of Registry.SetInlineUpTo.
const DefaultInlineUpTo = 64

// Match says how a snapshot relates to the list a call was given.
type Match int8

// Changed: a new membership, being built; the View is the snapshot it
// replaces (nil at first): pick from the list (Interim).
const (
	Exact  Match = iota // the snapshot holds the list, in order
	Subset              // a strict subset (a retry's): pick among it
	Changed
)

// Registry keeps one snapshot per (service, method) for one balancer.
type Registry[T any] struct {
	opts                warmup.Options
	wall                func() time.Time // the wall clock of uptimes
	build               BuildFunc[T]
	routes              urlmap.Store[common.URL, route[T]] // the service of a provider URL
	mu                  sync.Mutex
	services            map[string]*service[T]
	rebuilds, refreshes atomic.Int64 // builds for a membership, for warmup
	inline              atomic.Int64 // the largest list built on the call
	pending             sync.WaitGroup
	hot                 [hotSlots]atomic.Pointer[hotEntry[T]] // the states found last (state)
	// epoch is the coarse clock of the states' last use (urlmap.Touch),
	// moved on by expire once per idle time (ns) since epochAt (wall ns).
	epoch, epochAt atomic.Int64
	idle           int64
}

// DefaultIdle is how long the state of a (service, method) without a call
// is kept: released between DefaultIdle and twice that after its last call.
const DefaultIdle = 5 * time.Minute

// DefaultMethodLimit is the number of methods of a service with a state of
// their own; further names share the state of urlmap.Overflow.
const DefaultMethodLimit = urlmap.DefaultNameLimit

const (
	hotBits  = 8
	hotSlots = 1 << hotBits
)

// hotEntry says that the lists whose first provider has the URL url find
// st for method; it holds url, so that its address is not reused.
type hotEntry[T any] struct {
	url    *common.URL
	method string
	st     *state[T]
}

// hotSlot hashes u's address, the method's length and last byte.
func hotSlot(u *common.URL, method string) uint {
	h := uint64(uintptr(unsafe.Pointer(u))) ^ uint64(len(method))<<48
	if len(method) > 0 {
		h ^= uint64(method[len(method)-1]) << 56
	}
	return uint((h * 0x9E3779B97F4A7C15) >> (64 - hotBits))
}

// route is what routes keeps for a provider URL: its service, weakly (the
// service's members hold the URL).
type route[T any] struct {
	service atomic.Pointer[weak.Pointer[service[T]]]
}

// service is what the methods of one service share: their states and the
// members built last. It is dropped once its states are all released.
type service[T any] struct {
	key     string
	methods urlmap.Names[state[T]] // stamped with Registry.epoch
	members atomic.Pointer[members]
}

type state[T any] struct {
	view       atomic.Pointer[View[T]]
	mu         sync.Mutex // held while building, by the builder's goroutine or its caller
	misses     atomic.Int32
	watch      filterWatch
	outlier    outlier.Detector
	zoneLogged string                      // the zone problems logged last (mu)
	hot        atomic.Pointer[hotEntry[T]] // for the list built last (mu)
}

// NewRegistry returns a Registry that builds tables with build, reading
// uptimes on wall (nil: time.Now).
func NewRegistry[T any](opts warmup.Options, wall func() time.Time, build BuildFunc[T]) *Registry[T] {
	if wall == nil {
		wall = time.Now
	}
	r := &Registry[T]{opts: opts.WithDefaults(), wall: wall, build: build, services: map[string]*service[T]{}}
	r.inline.Store(DefaultInlineUpTo)
	r.idle = int64(DefaultIdle)
	r.epochAt.Store(wall().UnixNano())
	return r
}

// expire, once per idle time (wall ns), moves the epoch on and releases
// the states no call stamped in the epoch that ends. Off the hot path.
func (r *Registry[T]) expire(now int64) {
	if now-r.epochAt.Load() < r.idle {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if now-r.epochAt.Load() < r.idle {
		return
	}
	e := r.epoch.Load()
	r.epoch.Store(e + 1)
	r.epochAt.Store(now)
	for key, svc := range r.services {
		if _, left := svc.methods.Sweep(e, nil, true); left == 0 {
			delete(r.services, key)
		}
	}
	for i := range r.hot {
		if h := r.hot[i].Load(); h != nil && !urlmap.Touch(h.st, 0) {
			r.hot[i].CompareAndSwap(h, nil)
		}
	}
}

// States returns the number of (service, method) states kept.
func (r *Registry[T]) States() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, svc := range r.services {
		svc.methods.Range(func(string, *state[T]) bool { n++; return true })
	}
	return n
}

// Rebuilds returns how many snapshots the Registry built for a change of
// membership (the first included) and for a warmup refresh.
func (r *Registry[T]) Rebuilds() (membership, warmup int64) {
	return r.rebuilds.Load(), r.refreshes.Load()
}

// Range calls f with the snapshot of every (service, method) the Registry
// keeps, after releasing the idle ones. For inspection: it allocates and
// takes the Registry's lock, which Select never takes.
func (r *Registry[T]) Range(f func(v *View[T])) {
	r.expire(r.wall().UnixNano())
	r.mu.Lock()
	services := make([]*service[T], 0, len(r.services))
	for _, svc := range r.services {
		services = append(services, svc)
	}
	r.mu.Unlock()
	for _, svc := range services {
		svc.methods.Range(func(_ string, st *state[T]) bool {
			if v := st.view.Load(); v != nil {
				f(v)
			}
			return true
		})
	}
}

// SetInlineUpTo sets the largest list whose snapshot is built on the call
// that sees it; a longer one is built on a goroutine of its own. 0: every
// build in the background; math.MaxInt: none (deterministic runs).
func (r *Registry[T]) SetInlineUpTo(n int) { r.inline.Store(int64(n)) }

// Wait waits until no snapshot is being built in the background.
func (r *Registry[T]) Wait() { r.pending.Wait() }

// Lookup is Find that builds on the calling goroutine, waiting for a build
// under way, for inspection and tests. exact is false when list is a
// strict subset of the View.
func (r *Registry[T]) Lookup(list []base.Invoker, method string) (v *View[T], exact bool) {
	v, st, m := r.find(list, method, false, nil)
	if st == nil {
		return nil, false
	}
	if m == Changed {
		v = r.rebuild(st, list, method, nil, true)
	}
	return v, m != Subset
}

// Find returns the snapshot for list, a non-empty invoker list of one
// service, and method, comparing list in full, and how it matches. It
// never waits: for a new membership (Changed) it starts the build unless
// one is under way. A list whose first invoker is destroyed
// (rpcstatus.Destroyed) has none: nil, Changed.
func (r *Registry[T]) Find(list []base.Invoker, method string) (*View[T], Match) {
	v, _, m := r.find(list, method, false, nil)
	return v, m
}

// Pick is Find with an O(1) check of the list (matchesQuick), for
// balancers whose pick reads only the providers it draws: it draws slot i
// with pick and confirms that list holds the snapshot's provider there,
// else compares in full and draws again. i is meaningful only when m is
// Exact. A change in slots not drawn is seen later (DESIGN.md).
func (r *Registry[T]) Pick(list []base.Invoker, method string, pick PickFunc[T], inv base.Invocation) (v *View[T], i int, m Match) {
	if v, _, m = r.find(list, method, true, inv); m == Exact {
		if i = pick(v, inv); list[i] == v.Invokers[i] {
			return v, i, Exact
		}
		if v, _, m = r.find(list, method, false, nil); m == Exact { // a slot skipped changed
			return v, pick(v, inv), Exact
		}
	}
	return v, -1, m
}

// PickFunc draws a slot of v for the invocation inv.
type PickFunc[T any] func(v *View[T], inv base.Invocation) int

// find is Find, comparing the list in O(1) when quick (matchesQuick).
func (r *Registry[T]) find(list []base.Invoker, method string, quick bool, inv base.Invocation) (*View[T], *state[T], Match) {
	u := list[0].GetURL()
	if rpcstatus.Destroyed(u) {
		return nil, nil, Changed
	}
	st := r.state(u, method)
	v := st.view.Load()
	if v != nil && (!quick && v.matches(list) || quick && v.matchesQuick(list, inv)) {
		if st.misses.Load() != 0 {
			st.misses.Store(0)
		}
		if v.stale() || v.refreshAt != 0 && r.wall().UnixNano() >= v.refreshAt {
			if nv := r.rebuild(st, list, method, v, false); nv != nil {
				return nv, st, Exact
			}
		}
		return v, st, Exact
	}
	if v != nil && len(list) < v.Len() && v.contains(list) && st.misses.Add(1) < subsetRebuild {
		return v, st, Subset
	}
	if nv := r.rebuild(st, list, method, nil, false); nv != nil {
		return nv, st, Exact
	}
	return v, st, Changed
}

// state returns the state of u's service and method: from Registry.hot,
// else through routes, caching the entry the last build made for u.
func (r *Registry[T]) state(u *common.URL, method string) *state[T] {
	slot := &r.hot[hotSlot(u, method)]
	cached := slot.Load()
	if cached != nil && cached.url == u && cached.method == method && urlmap.Touch(cached.st, r.epoch.Load()) {
		return cached.st
	}
	st := r.lookup(u, method)
	if e := st.hot.Load(); e != nil && e != cached && e.url == u {
		slot.Store(e)
	}
	return st
}

// lookup is state through routes, stamped with the epoch; a name beyond
// the limit gets the overflow state.
func (r *Registry[T]) lookup(u *common.URL, method string) *state[T] {
	for {
		svc := r.service(u)
		st, first := svc.methods.Get(method, r.epoch.Load())
		if st == nil {
			continue // the service was just released: find it anew
		}
		if first {
			lblog.Warnf("service %s: calls name more than %d methods; the calls of further methods share one load balancing state (%q), built with the service-level parameters",
				svc.key, DefaultMethodLimit, urlmap.Overflow)
		}
		return st
	}
}

// service returns the service of the provider URL u through routes.
func (r *Registry[T]) service(u *common.URL) *service[T] {
	rt := r.routes.Get(u)
	var svc *service[T]
	if w := rt.service.Load(); w != nil {
		svc = w.Value()
	}
	if svc == nil || svc.methods.Closed() {
		key := u.ServiceKey() // once per provider URL
		r.expire(r.wall().UnixNano())
		r.mu.Lock()
		svc = r.services[key]
		if svc == nil {
			svc = &service[T]{key: key}
			r.services[key] = svc
		}
		r.mu.Unlock()
		w := weak.Make(svc)
		rt.service.Store(&w)
	}
	return svc
}

// members returns the members of list: the service's last if they hold
// exactly list, else new ones, which the service's other methods take.
func (r *Registry[T]) members(list []base.Invoker, now time.Time) *members {
	svc := r.service(list[0].GetURL())
	last := svc.members.Load()
	if last != nil && len(last.invokers) == len(list) && same(list, last.invokers) {
		return last
	}
	m := newMembers(list, last, now)
	svc.members.Store(m)
	return m
}

// rebuild builds the snapshot of st for list, or refreshes stale (which
// matches list). Unless wait, it returns nil when a build is under way or
// runs in the background (lists above the inline limit); else a snapshot
// holding list (or stale, if rebuilt meanwhile for another list).
func (r *Registry[T]) rebuild(st *state[T], list []base.Invoker, method string, stale *View[T], wait bool) *View[T] {
	if urlmap.NameOf(st) == urlmap.Overflow {
		method = urlmap.Overflow // one state, one Set.Method, for every name beyond the limit
	}
	if wait {
		st.mu.Lock()
	} else if !st.mu.TryLock() {
		return nil
	}
	r.expire(r.wall().UnixNano())
	if wait || int64(len(list)) <= r.inline.Load() {
		defer st.mu.Unlock()
		return r.update(st, list, method, stale)
	}
	r.pending.Add(1)
	go func() {
		defer r.pending.Done()
		defer st.mu.Unlock() // a Mutex may be unlocked by another goroutine
		r.update(st, list, method, stale)
	}()
	return nil
}

// update builds and publishes the snapshot of st for list (st.mu held); a
// refresh of stale keeps it if another list's was published meanwhile.
func (r *Registry[T]) update(st *state[T], list []base.Invoker, method string, stale *View[T]) *View[T] {
	prev := st.view.Load()
	now := r.wall()
	if prev != nil && prev.matches(list) && !prev.stale() && (prev.refreshAt == 0 || now.UnixNano() < prev.refreshAt) {
		return prev // another caller rebuilt it meanwhile
	}
	if stale != nil && prev != stale {
		return stale
	}
	set := r.newSet(list, method, prev, now, &st.outlier)
	v := &View[T]{Set: set, Table: r.build(set, prev), watch: &st.watch}
	u := list[0].GetURL()
	cfg, problems := zone.ParseRouting(func(key string) string { return urlparam.ServiceParam(u, key) }, os.Getenv(zone.Env))
	if p := strings.Join(problems, "; "); p != st.zoneLogged {
		st.zoneLogged = p
		if p != "" {
			lblog.Warnf("zone-aware routing, service %s, method %s: %s", u.ServiceKey(), method, p)
		}
	}
	v.Zoning = r.zoning(v, prev, cfg, set.Panic)
	if e := st.hot.Load(); e == nil || e.url != u {
		st.hot.Store(&hotEntry[T]{url: u, method: method, st: st})
	}
	st.view.Store(v)
	st.misses.Store(0)
	if stale != nil {
		r.refreshes.Add(1)
	} else {
		r.rebuilds.Add(1)
	}
	return v
}

func (r *Registry[T]) newSet(list []base.Invoker, method string, prev *View[T], now time.Time, det *outlier.Detector) *Set {
	n := len(list)
	ms := r.members(list, now)
	s := &Set{
		Invokers:  ms.invokers,
		Method:    method,
		providers: ms.providers,
		meta:      ms.meta,
		zones:     ms.zones,
		stats:     make([]*rpcstatus.Stats, n),
		index:     ms.index,
		given:     &list[0],
		memo:      &ms.memo,
	}
	setOwn := func(i int, m *warmup.Meta) {
		if s.own == nil {
			s.own = slices.Clone(ms.meta)
		}
		s.own[i] = m
	}
	weightKeys := urlparam.KeysOf(method, constant.WeightKey)
	stats := s.stats
	if prev != nil {
		prev.index.follow(prev.Invokers, list, func(i, j int) {
			stats[i] = prev.stats[j]
			if prev.own != nil && prev.own[j] != ms.meta[i] && weightKeys.In(list[i].GetURL()) {
				setOwn(i, prev.own[j]) // a skewed timestamp stays anchored where first seen
			}
		})
	}
	for i, inv := range list {
		if stats[i] != nil {
			continue // prev holds it
		}
		stats[i] = ms.providers[i].Method(method)
		if u := inv.GetURL(); weightKeys.In(u) {
			p := warmup.Parse(u, method, now)
			if p.Problem != "" {
				lblog.Warnf("provider %s, method %s: %s", u.Location, method, p.Problem)
			}
			setOwn(i, &p)
		}
	}
	d := det.Decide(method, s.Invokers, stats)
	s.Ejected, s.Outliers, s.Panic, s.board, s.alarm = d.Ejected, d.Enabled, d.Panic, det.Board(), d.Alarm
	var w *warmWeights
	if s.own == nil && s.Ejected == nil { // shared by the methods alike
		if w = ms.warm.Load(); w == nil || w.refreshAt != 0 && now.UnixNano() >= w.refreshAt {
			w = r.newWarmWeights(s, nil, now)
			ms.warm.Store(w)
		}
	} else {
		w = r.newWarmWeights(s, s.Ejected, now)
	}
	s.use(w)
	return s
}

// warmWeights are the warm weights of a Set, shared by the methods that
// read the same metadata and eject no provider. Immutable but for alias.
type warmWeights struct {
	weights   []float64
	total     float64
	uniform   bool
	maxWeight float64
	refreshAt int64
	alias     atomic.Pointer[algo.Alias] // made by the first WarmAlias
}

// WarmAlias returns the alias table of s's warm weights (nil when they are
// equal), built once for the Sets that share them.
func (s *Set) WarmAlias() *algo.Alias {
	if s.Uniform {
		return nil
	}
	if a := s.warm.alias.Load(); a != nil {
		return a
	}
	s.warm.alias.CompareAndSwap(nil, algo.NewAlias(s.warm.weights))
	return s.warm.alias.Load()
}

// use makes w the warm weights of s.
func (s *Set) use(w *warmWeights) {
	s.weights, s.Total, s.Uniform, s.maxWeight, s.refreshAt, s.warm = w.weights, w.total, w.uniform, w.maxWeight, w.refreshAt, w
}

// newWarmWeights returns the warm weights of the providers of s (their
// Meta) at now, 0 for those that ejected marks (nil: none).
func (r *Registry[T]) newWarmWeights(s *Set, ejected []bool, now time.Time) *warmWeights {
	w := &warmWeights{weights: make([]float64, s.Len())}
	for i := range w.weights {
		m := s.Meta(i)
		if at := m.WarmAt(); !at.IsZero() && now.Before(at) {
			w.refreshAt = now.Add(r.opts.RefreshStep).UnixNano()
		}
		if ejected == nil || !ejected[i] {
			w.weights[i] = r.opts.Weight(*m, now)
			w.total += w.weights[i]
		}
	}
	w.settle(ejected)
	return w
}

// settle completes w once weights and total are set: when no provider
// that ejected (nil: none) spares has weight, each of them counts as 1.
func (w *warmWeights) settle(ejected []bool) {
	if w.total <= 0 {
		w.total = 0
		for i := range w.weights {
			if ejected == nil || !ejected[i] {
				w.weights[i] = 1
				w.total++
			}
		}
	}
	w.uniform = true
	for _, x := range w.weights {
		w.maxWeight = max(w.maxWeight, x)
		w.uniform = w.uniform && x == w.weights[0]
	}
}

// members is what a snapshot holds whatever the method, shared by the
// methods that see the same list. Immutable but for warm.
type members struct {
	invokers  []base.Invoker // the list itself (see Set.Invokers)
	providers []*rpcstatus.Provider
	meta      []*warmup.Meta
	zones     []string // nil when no provider names one
	memo      memo     // Memo's values
	index     index
	warm      atomic.Pointer[warmWeights] // from meta, for methods that eject none
}

// newMembers returns the members of list, carrying over from prev (nil at
// first) what it holds: only newcomers' URLs are read.
func newMembers(list []base.Invoker, prev *members, now time.Time) *members {
	n := len(list)
	m := &members{invokers: list, index: newIndex(list),
		providers: make([]*rpcstatus.Provider, n), meta: make([]*warmup.Meta, n)}
	zone := func(i int, z string) {
		if z != "" && m.zones == nil {
			m.zones = make([]string, n)
		}
		if z != "" {
			m.zones[i] = z
		}
	}
	if prev != nil {
		prev.index.follow(prev.invokers, list, func(i, j int) {
			m.providers[i], m.meta[i] = prev.providers[j], prev.meta[j]
			if prev.zones != nil {
				zone(i, prev.zones[j])
			}
		})
	}
	for i, inv := range list {
		if m.providers[i] != nil {
			continue // prev holds it
		}
		u := inv.GetURL()
		meta := warmup.Parse(u, "", now)
		if meta.Problem != "" {
			lblog.Warnf("provider %s: %s", u.Location, meta.Problem)
		}
		m.providers[i], m.meta[i] = rpcstatus.Of(u), &meta
		zone(i, strings.TrimSpace(u.GetParam(urlparam.ZoneKey, "")))
	}
	return m
}
