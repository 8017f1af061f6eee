// Package member is the membership machinery every balancer of this module
// shares: it turns the invoker list that dubbo-go passes to Select into an
// immutable snapshot (a Set of providers with their statistics, metadata and
// warm weights, plus the balancer's own table built from it), keeps one per
// (service, method), detects a real change of membership cheaply, rebuilds
// off the hot path and publishes the new snapshot atomically: the Go form of
// brpc's DoublyBufferedData. Each snapshot applies outlier ejection (package
// outlier): an ejected provider has weight 0 and is marked in Set.Ejected,
// and a snapshot is rebuilt when the outlier board's alarm moves.
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

const (
	// subsetRebuild is how many consecutive Selects on a strict subset of
	// the snapshot make it the new membership. Retries of the failover
	// cluster pass a subset for one call; providers that really left pass
	// it on every call.
	subsetRebuild = 16

	// fullCheckEvery is how often (1 call in fullCheckEvery) Pick
	// compares the whole list of at most SampleAbove providers when its
	// ends match the snapshot.
	fullCheckEvery = 16

	// SampleAbove is the longest list that Pick compares in full (on 1
	// call in fullCheckEvery); above it Pick compares a window of
	// sampleWindow providers at random, and the whole list only when
	// dubbo-go's router chain says its invoker list changed (see
	// routerGeneration). A balancer that wants every list compared in
	// full while that is cheap sets skeleton.Spec.ReadsAllUpTo to it.
	SampleAbove = 1024
	// sampleWindow is the length of that window: 1 KB of interface words.
	sampleWindow = 64
)

// Set is an immutable snapshot of the providers offered to a balancer for
// one (service, method). Index i means the same provider in every slice.
type Set struct {
	// Invokers are the providers, in the order dubbo-go passed them: the
	// list itself that the first Select of this membership was given, not
	// a copy (dubbo-go never changes a list it handed out; see matches).
	Invokers []base.Invoker
	// Total is the sum of their warm weights (Weight).
	Total float64
	// Uniform is true when all their warm weights are equal.
	Uniform bool
	// Method is the method name the Set serves.
	Method string
	// Ejected marks the providers that outlier detection ejected (package
	// outlier); nil when none is. Balancers that pick by weight need not
	// read it: an ejected provider's weight is 0. Those that ignore
	// weights (consistent hashing) skip the providers it marks.
	Ejected []bool
	// Outliers is true when an outlier rule may eject providers of the Set.
	Outliers bool
	// Panic is true when outlier detection ignores its ejections: fewer
	// providers than its panic threshold would be left (outlier.Decision).
	Panic bool

	// providers, meta and zones do not depend on the method (Provider,
	// Meta, Zone): the members', shared with the other methods. zones is
	// nil when no provider names one.
	providers []*rpcstatus.Provider
	meta      []*warmup.Meta
	zones     []string
	// memo holds Memo's values, shared with the other methods (nil for a
	// zone's Set).
	memo *memo
	// own is Meta when some provider has a method-level weight; nil when
	// every provider's is the service level's (meta).
	own []*warmup.Meta

	maxWeight float64 // the largest warm weight
	// stats are the providers' statistics for the method and weights
	// their warm weights.
	stats   []*rpcstatus.Stats
	weights []float64
	// warm are the warm weights the Set took weights from, and their
	// alias table (WarmAlias).
	warm *warmWeights

	index index
	given *base.Invoker // first element of the list the Set was built from
	// refreshAt is when warm weights must be recomputed (Unix ns), or 0
	// when every provider is warm.
	refreshAt int64
	// board is the outlier board of the Set's (service, method) and alarm
	// its alarm when the Set was built: the Set is stale when they differ.
	board *rpcstatus.Board
	alarm uint64
}

// Board returns the outlier board of the Set's (service, method): what
// the lbactive filter says of its providers' failures.
func (s *Set) Board() *rpcstatus.Board { return s.board }

// IsEjected reports whether provider i is ejected.
func (s *Set) IsEjected(i int) bool { return s.Ejected != nil && s.Ejected[i] }

// stale reports whether outlier detection has news since the Set was built.
func (s *Set) stale() bool { return s.board.Raised() != s.alarm }

// Stat returns the statistics of provider i for the Set's method.
func (s *Set) Stat(i int) *rpcstatus.Stats { return s.stats[i] }

// Stats returns the providers' statistics for the Set's method, in order.
// They must not be changed.
func (s *Set) Stats() []*rpcstatus.Stats { return s.stats }

// Weight returns provider i's warm weight now, 0 when it is ejected. When
// every provider that is not ejected has weight 0 (all drained) they all
// count as 1, so they share traffic evenly.
func (s *Set) Weight(i int) float64 { return s.weights[i] }

// Weights returns the warm weights of the providers (Weight), in order.
// They must not be changed.
func (s *Set) Weights() []float64 { return s.weights }

// Provider returns the statistics of provider i.
func (s *Set) Provider(i int) *rpcstatus.Provider { return s.providers[i] }

// Meta returns what provider i's URL says about weight and age, parsed
// once when it joined and shared by the snapshots that keep it.
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
	if &list[0] == s.given {
		// The very slice the Set was built from: dubbo-go never changes a
		// list it handed out, and holding it keeps its address from reuse.
		return true
	}
	return same(list, s.Invokers)
}

// same reports whether a and b, of one length, hold the same providers in
// order. Identical interface words (type and pointer) are the same
// provider; comparing the memory at once is several times faster than one
// interface comparison after another.
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

// matchesQuick is matches for Pick, in O(1) whatever the length: a list
// of the Set's length whose ends match is compared in full on 1 call in
// fullCheckEvery up to SampleAbove providers; above, on a window of
// sampleWindow providers at random, and in full when the router chain
// generation of inv (routerGeneration; 0 for none) is not the one the View
// was last compared in full under.
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

// routerGeneration returns the generation of the invoker list that
// dubbo-go's router chain (cluster/router/chain, v3.3) sets on inv before
// the list reaches Select: it counts the chain's SetInvokers, so every
// change of the directory's membership moves it. 0 when inv carries none
// (no router chain, or none set up yet).
func routerGeneration(inv base.Invocation) uint64 {
	if inv == nil {
		return 0
	}
	g, _ := inv.GetAttributeWithDefaultValue(constant.RouterChainCacheGeneration, uint64(0)).(uint64)
	return g
}

// words returns the memory of list.
func words(list []base.Invoker) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(list))), len(list)*int(unsafe.Sizeof(list[0])))
}

// contains reports whether every provider of list is in the Set. A list
// in the Set's order (a retry's subset, a provider that left) is found in
// one pass of comparisons; another order takes an index lookup per provider.
func (s *Set) contains(list []base.Invoker) bool {
	j, ordered := 0, true
	for _, inv := range list {
		for j < len(s.Invokers) && s.Invokers[j] != inv {
			j++
		}
		if j == len(s.Invokers) {
			ordered = false
			break
		}
		j++
	}
	if ordered {
		return true
	}
	for _, inv := range list {
		if _, ok := s.Index(inv); !ok {
			return false
		}
	}
	return true
}

// PickAmong returns a provider of list, a subset of the Set, drawn with
// the random word r in proportion to its warm weight (uniformly if no
// provider of list has weight). It is the default pick of the failover
// cluster's reselection lists.
func (s *Set) PickAmong(list []base.Invoker, r uint64) base.Invoker {
	return list[algo.Weighted(len(list), func(k int) float64 { i, _ := s.Index(list[k]); return s.Weight(i) }, r)]
}

// interimDraws bounds the draws of Interim, interimZoneDraws those of
// InterimIn, which keeps only the providers of one zone.
const (
	interimDraws     = 8
	interimZoneDraws = 16
)

// Interim picks a provider of list, a membership whose snapshot is still
// being built, knowing only old, the snapshot it replaces (nil at first):
// at random in proportion to the warm weight each provider had in old, by
// rejection from uniform draws of list. A provider old does not hold (a
// newcomer, still to warm up) is skipped, as is an ejected or drained
// one, unless interimDraws draws found no other; without old the draw is
// uniform. It costs O(1): a few draws and index lookups, whatever the size.
func Interim(old *Set, list []base.Invoker, next func() uint64) base.Invoker {
	n := len(list)
	c := list[algo.IntN(next(), n)]
	if old == nil || !(old.maxWeight > 0) {
		return c
	}
	for range interimDraws {
		if old.keeps(c, next, "", false) {
			return c
		}
		c = list[algo.IntN(next(), n)]
	}
	return c
}

// InterimIn is Interim within one zone, for zone-aware routing while a
// snapshot is built: it keeps only a provider that old places in zone
// (Set.Zone), and when interimZoneDraws draws kept none (the zone holds
// few of list's providers, or none any more) it is Interim over the whole
// list. old must not be nil.
func InterimIn(old *Set, list []base.Invoker, next func() uint64, zone string) base.Invoker {
	n := len(list)
	for range interimZoneDraws {
		if c := list[algo.IntN(next(), n)]; old.keeps(c, next, zone, true) {
			return c
		}
	}
	return Interim(old, list, next)
}

// keeps reports whether the rejection step of Interim keeps c, drawn
// uniformly from a new list: s holds it (in zone, when zoned), and a draw
// in proportion to its warm weight in s keeps it.
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
	// Table is the balancer's own state for the Set.
	Table *T
	// Zoning is the zone-aware routing of the Set; nil when the consumer
	// names no zone.
	Zoning *Zoning[T]

	watch *filterWatch
	// checked is the router chain generation (routerGeneration) under
	// which a list was last found to match the View in full; 0 for none.
	checked atomic.Uint64
}

// BuildFunc builds a balancer's table for set. prev is the view it
// replaces, nil at first; carry state over from it for providers that stay
// (set.Index finds them; prev.Set.Index gives their old position).
type BuildFunc[T any] func(set *Set, prev *View[T]) *T

// DefaultInlineUpTo is the largest list whose snapshot is built on the
// call that sees it (see Registry.SetInlineUpTo): a few microseconds for
// every balancer at that size, once the providers that stayed are reused.
const DefaultInlineUpTo = 64

// Match says how a snapshot relates to the list a call was given.
type Match int8

const (
	// Exact: the snapshot holds exactly the list, in order, so that an
	// index into the View is an index into the list.
	Exact Match = iota
	// Subset: the list is a failover retry's strict subset of the
	// snapshot; pick among the list (Set.PickAmong).
	Subset
	// Changed: the list is a new membership whose snapshot is being built
	// off the call's path; the View is the snapshot it replaces (nil at
	// first). Pick from the list itself (Interim).
	Changed
)

// Registry keeps one snapshot per (service, method) for one balancer.
type Registry[T any] struct {
	opts  warmup.Options
	wall  func() time.Time // the wall clock of uptimes
	build BuildFunc[T]
	// routes finds the service of a provider URL without building its
	// service key on every call; it forgets URLs that are gone.
	routes   urlmap.Store[common.URL, route[T]]
	mu       sync.Mutex
	services map[string]*service[T]
	// rebuilds counts the snapshots built for a change of membership (the
	// first included) and for a warmup refresh.
	rebuilds, refreshes atomic.Int64
	// inline is the largest list built on the calling goroutine.
	inline atomic.Int64
	// pending counts the builds running in the background.
	pending sync.WaitGroup
	// hot caches the states found last, by the URL of a list's first
	// provider and the method: a hit costs a load and two compares where
	// routes (a sync.Map and a weak pointer) cost 20 ns (see state).
	hot [hotSlots]atomic.Pointer[hotEntry[T]]

	// epoch is the coarse clock of the states' last use: a call stamps its
	// state with it (urlmap.Touch), and expire, off the hot path, moves it
	// on once per idle time (wall ns) and releases the states that no call
	// stamped during the epoch that ends. epochAt is when it began (wall
	// ns), idle the idle time (ns), methodLimit the methods per service.
	epoch, epochAt, idle atomic.Int64
	methodLimit          atomic.Int64
}

// DefaultIdle is how long the state of a (service, method) without a call
// is kept by default (see Registry.SetIdle).
const DefaultIdle = 5 * time.Minute

// DefaultMethodLimit is the number of methods of a service with a state of
// their own by default (see Registry.SetMethodLimit).
const DefaultMethodLimit = urlmap.DefaultNameLimit

// hotSlots is the size of Registry.hot: the (service, method) pairs of a
// busy consumer, with room for collisions.
const (
	hotBits  = 8
	hotSlots = 1 << hotBits
)

// hotEntry says that the lists whose first provider has the URL url find
// st for method. It holds url, so that the address cannot be reused while
// the entry is in Registry.hot.
type hotEntry[T any] struct {
	url    *common.URL
	method string
	st     *state[T]
}

// hotSlot returns the slot of Registry.hot for u and method: a
// multiplicative hash of u's address, the method's length and last byte.
func hotSlot(u *common.URL, method string) uint {
	h := uint64(uintptr(unsafe.Pointer(u))) ^ uint64(len(method))<<48
	if len(method) > 0 {
		h ^= uint64(method[len(method)-1]) << 56
	}
	return uint((h * 0x9E3779B97F4A7C15) >> (64 - hotBits))
}

// route is what routes keeps for a provider URL: its service, weakly, so
// that the entry, which its URL's cleanup holds, does not keep the service
// (whose members hold the URL) from going when it is released.
type route[T any] struct {
	service atomic.Pointer[weak.Pointer[service[T]]]
}

// service is what the methods of one service share: their states, and the
// members built last by any of them, which the next method to build for
// the same list takes instead of making its own. A service whose states
// were all released is closed (methods.Closed) and dropped.
type service[T any] struct {
	key     string
	methods urlmap.Names[state[T]] // stamped with Registry.epoch
	members atomic.Pointer[members]
}

type state[T any] struct {
	view    atomic.Pointer[View[T]]
	mu      sync.Mutex // held while building, by the builder's goroutine or its caller
	misses  atomic.Int32
	watch   filterWatch
	outlier outlier.Detector
	// zoneLogged is the zone configuration problem logged last (st.mu).
	zoneLogged string
	// hot is the entry of Registry.hot for the URL of the first provider of
	// the list built last (written by the builder, under mu).
	hot atomic.Pointer[hotEntry[T]]
}

// NewRegistry returns a Registry that builds tables with build, reading
// uptimes on wall (default time.Now).
func NewRegistry[T any](opts warmup.Options, wall func() time.Time, build BuildFunc[T]) *Registry[T] {
	if wall == nil {
		wall = time.Now
	}
	r := &Registry[T]{opts: opts.WithDefaults(), wall: wall, build: build, services: map[string]*service[T]{}}
	r.inline.Store(DefaultInlineUpTo)
	r.idle.Store(int64(DefaultIdle))
	r.methodLimit.Store(DefaultMethodLimit)
	r.epochAt.Store(wall().UnixNano())
	return r
}

// SetIdle sets how long the state of a (service, method) without a call is
// kept: its snapshot, table, outlier records and its hold on the
// providers' statistics. A state is released at the first build, new
// service or inspection (Range) once it went a whole epoch (d, by the
// Registry's wall clock) without a call: between d and 2d after its last
// call. Default DefaultIdle.
func (r *Registry[T]) SetIdle(d time.Duration) { r.idle.Store(max(int64(d), 1)) }

// SetMethodLimit sets the number of methods of a service with a state of
// their own, for services made after the call; the calls of further method
// names share the state of urlmap.Overflow, built with the service-level
// parameters, and one WARN per service says so. Default
// DefaultMethodLimit.
func (r *Registry[T]) SetMethodLimit(n int) { r.methodLimit.Store(int64(max(n, 1))) }

// expire moves the epoch on and releases the states not used during the
// epoch that ends, when the idle time has passed since it began (wall
// ns); else it costs one atomic load. It runs off the hot path (builds,
// new services, Range), so O(states) once per idle time.
func (r *Registry[T]) expire(now int64) {
	if now-r.epochAt.Load() < r.idle.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if now-r.epochAt.Load() < r.idle.Load() {
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

// States returns the number of (service, method) states the Registry
// keeps, each overflow state included: for inspection and tests.
func (r *Registry[T]) States() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, svc := range r.services {
		svc.methods.Range(func(string, *state[T]) bool { n++; return true })
	}
	return n
}

// SetInlineUpTo sets the largest list (in providers) whose snapshot is built
// on the call that sees it; a longer list is built on a goroutine of its own
// while calls pick with Interim. 0 builds every snapshot in the background,
// math.MaxInt every one inline (deterministic: simulators, seeded tests).
// Default DefaultInlineUpTo.
func (r *Registry[T]) SetInlineUpTo(n int) { r.inline.Store(int64(n)) }

// Wait waits until no snapshot is being built in the background.
func (r *Registry[T]) Wait() { r.pending.Wait() }

// Lookup returns the snapshot for list, a non-empty invoker list of one
// service, and method, building it on the calling goroutine if none
// matches (waiting for a build under way): for inspection and tests;
// Select uses Find. exact is true when the snapshot holds exactly list,
// in order, so that an index into the View is an index into list. When
// it is false, list is a strict subset of the View (a failover retry):
// pick from it with PickAmong.
//
// Lookup compares list with the snapshot in full: O(len(list)), a fast
// memory compare (about 13 ns for 100 providers, 130 ns for 1000). A list
// whose first invoker is destroyed has no snapshot (see Find): nil, false.
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
// service, and method, and how it matches list, without waiting for a
// build: when list is a new membership (Changed), it starts the build of
// its snapshot unless one is under way, and returns the snapshot being
// replaced (nil at first). It compares list in full, as Lookup does.
//
// A list whose first invoker is destroyed (a call holding the list from
// before a change of membership; rpcstatus.Destroyed) has no snapshot:
// nil, Changed, and nothing is built. The service is found by the first
// provider's URL, and a destroyed invoker's is one placeholder without a
// service, whose snapshot nothing would ever replace.
func (r *Registry[T]) Find(list []base.Invoker, method string) (*View[T], Match) {
	v, _, m := r.find(list, method, false, nil)
	return v, m
}

// Pick draws a slot of list, a non-empty invoker list of one service, for
// method, in O(1) for balancers that read the state of the providers they
// draw rather than of all of them. It finds the snapshot as Find does,
// except that a list with the snapshot's length and its first and last
// providers is taken as matching without comparing the rest, but on 1 call
// in fullCheckEvery (up to SampleAbove providers); above, it compares a
// random window of sampleWindow providers, and the whole list once per
// generation of dubbo-go's router chain (routerGeneration, which every
// change of the directory's membership moves). It draws the slot with
// pick(v, inv) and confirms that list holds the snapshot's provider there,
// else it compares in full (Find) and draws again. Unless m is Exact, i is
// meaningless: pick from list instead (see Match).
//
// The provider drawn thus always comes from list and was judged on its own
// state. A change of membership in slots the pick did not return is seen
// at the first call of the chain's new generation under dubbo-go, and
// otherwise (no router chain, or routers that hand calls of one
// generation different lists) fullCheckEvery Selects later on average up
// to SampleAbove providers, N/sampleWindow above: until then the draw
// weighs those slots with the state of the providers that held them;
// dubbo-go itself learns of a change a registry push later.
func (r *Registry[T]) Pick(list []base.Invoker, method string, pick PickFunc[T], inv base.Invocation) (v *View[T], i int, m Match) {
	v, _, m = r.find(list, method, true, inv)
	if m == Exact {
		if i = pick(v, inv); list[i] == v.Invokers[i] {
			return v, i, Exact
		}
		v, _, m = r.find(list, method, false, nil) // a slot the quick look skipped changed
	}
	if m != Exact {
		return v, -1, m
	}
	return v, pick(v, inv), Exact
}

// PickFunc draws a slot of v for the invocation inv.
type PickFunc[T any] func(v *View[T], inv base.Invocation) int

// find is Find, comparing a list of the snapshot's length in O(1) when
// quick (matchesQuick: the ends, then a sample or, on news from the
// router chain of inv, the whole list; see Pick); it never waits.
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

// state returns the state of the service of the provider URL u and
// method: from Registry.hot when it has the pair, else through routes, and
// then it puts st's entry in Registry.hot if that entry is u's (the first
// provider of the list last built), so that no steady call allocates.
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

// lookup is state through routes, stamped with the epoch. A method name
// beyond the service's limit gets the service's overflow state, and the
// first such name one WARN.
func (r *Registry[T]) lookup(u *common.URL, method string) *state[T] {
	for {
		svc := r.service(u)
		st, first := svc.methods.Get(method, r.epoch.Load())
		if st == nil {
			continue // the service was just released: find it anew
		}
		if first {
			lblog.Warnf("service %s: calls name more than %d methods; the calls of further methods share one load balancing state (%q), built with the service-level parameters",
				svc.key, svc.methods.Limit, urlmap.Overflow)
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
			svc.methods.Limit = int(r.methodLimit.Load())
			r.services[key] = svc
		}
		r.mu.Unlock()
		w := weak.Make(svc)
		rt.service.Store(&w)
	}
	return svc
}

// members returns the members of list, a list of one service: those that
// a method of the service built last if they hold exactly list, else new
// ones (see newMembers) that the service's other methods then take.
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

// rebuild builds the snapshot of st for list: for a change of membership,
// or to refresh stale, a snapshot that matches list. Unless wait, it
// never waits: it returns nil when another build of st is under way, and
// when list is longer than the inline limit it builds on a goroutine of
// its own and returns nil. Otherwise it returns a snapshot that holds
// exactly list (stale itself if it was rebuilt meanwhile for another list).
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

// update builds and publishes the snapshot of st for list, with st.mu
// held. A warmup refresh of stale (a snapshot that matches list) keeps
// stale when the snapshot was meanwhile rebuilt for another list: the
// snapshot now published is not this caller's.
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
	st.zoneProblems(list[0].GetURL().ServiceKey(), method, problems)
	v.Zoning = r.zoning(v, prev, cfg, set.Panic)
	if u, e := list[0].GetURL(), st.hot.Load(); e == nil || e.url != u {
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
				// Keep what was parsed: a skewed timestamp stays anchored
				// where it was first seen.
				setOwn(i, prev.own[j])
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
	if s.own == nil && s.Ejected == nil {
		// The weights of every method that reads the members' metadata
		// and ejects no provider: computed once for them all.
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

// warmWeights are the warm weights of a Set (Set.Weight and the fields
// that go with them), shared by the Sets of the methods that read the same
// metadata and eject no provider (members.warm). Immutable but for alias.
type warmWeights struct {
	weights   []float64
	total     float64
	uniform   bool
	maxWeight float64
	refreshAt int64
	alias     aliasCache
}

// use makes w the warm weights of s.
func (s *Set) use(w *warmWeights) {
	s.weights, s.Total, s.Uniform, s.maxWeight, s.refreshAt, s.warm = w.weights, w.total, w.uniform, w.maxWeight, w.refreshAt, w
}

// newWarmWeights returns the warm weights of the providers of s (their
// Meta) at now, 0 for those that ejected marks (nil: none).
func (r *Registry[T]) newWarmWeights(s *Set, ejected []bool, now time.Time) *warmWeights {
	n := s.Len()
	flat := make([]float64, n)
	w := &warmWeights{weights: flat}
	warming := false
	usable := n
	for i := range n {
		m := s.Meta(i)
		if at := m.WarmAt(); !at.IsZero() && now.Before(at) {
			warming = true
		}
		if ejected != nil && ejected[i] {
			usable--
			continue
		}
		flat[i] = r.opts.Weight(*m, now)
		w.total += flat[i]
	}
	if w.total <= 0 {
		for i := range flat {
			if ejected == nil || !ejected[i] {
				flat[i] = 1
			}
		}
		w.total = float64(usable)
	}
	w.uniform, w.maxWeight = uniform(flat)
	if warming {
		w.refreshAt = now.Add(r.opts.RefreshStep).UnixNano()
	}
	return w
}

// uniform reports whether weights are all equal, and the largest.
func uniform(weights []float64) (equal bool, top float64) {
	equal = true
	for _, w := range weights {
		top = max(top, w)
		if w != weights[0] {
			equal = false
		}
	}
	return equal, top
}

// members is the part of a snapshot that does not depend on the method:
// the providers in the order of the list, their statistics, zones and
// service-level metadata (the Set.Meta of every method for which no
// provider has a method-level weight), and the index.
// The methods of a service that see the same list share one
// (Registry.members). Immutable once made, but for warm.
type members struct {
	invokers  []base.Invoker // the list itself (see Set.Invokers)
	providers []*rpcstatus.Provider
	meta      []*warmup.Meta
	zones     []string // nil when no provider names one
	memo      memo     // Memo's values
	index     index
	// warm are the warm weights from meta of the methods that eject no
	// provider, computed by the first to need them and replaced when a
	// warmup refresh is due (newSet).
	warm atomic.Pointer[warmWeights]
}

// newMembers returns the members of list, taking the statistics, zone and
// metadata of a provider that prev (nil at first) holds from it: only
// newcomers' URLs are read, at now.
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
