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
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlmap"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/outlier"
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
	// compares the whole list when its ends match the snapshot.
	fullCheckEvery = 16
)

// Set is an immutable snapshot of the providers offered to a balancer for
// one (service, method). Index i means the same provider in every slice.
type Set struct {
	// Invokers are the providers, in the order dubbo-go passed them.
	Invokers []base.Invoker
	// Providers are their statistics.
	Providers []*rpcstatus.Provider
	// Stats are their statistics for this method.
	Stats []*rpcstatus.Stats
	// Meta is what their URLs say about weight and age.
	Meta []warmup.Meta
	// Weights are their warm weights now, 0 for an ejected provider. When
	// every provider that is not ejected has weight 0 (all drained) they
	// all count as 1, so they share traffic evenly.
	Weights []float64
	// Total is the sum of Weights.
	Total float64
	// Uniform is true when all Weights are equal.
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

	index map[base.Invoker]int
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

// Len returns the number of providers.
func (s *Set) Len() int { return len(s.Invokers) }

// Index returns the position of inv in the Set.
func (s *Set) Index(inv base.Invoker) (int, bool) {
	i, ok := s.index[inv]
	return i, ok
}

// matches reports whether list holds exactly the Set's providers in order.
// When quick, it does so on 1 call in fullCheckEvery and otherwise only
// compares the first and last providers (see Pick).
func (s *Set) matches(list []base.Invoker, quick bool) bool {
	n := len(list)
	if n != len(s.Invokers) {
		return false
	}
	if &list[0] == s.given {
		// The very slice the Set was built from: dubbo-go never changes a
		// list it handed out, and holding it keeps its address from reuse.
		return true
	}
	if quick && rand.Uint32()%fullCheckEvery != 0 {
		return list[0] == s.Invokers[0] && list[n-1] == s.Invokers[n-1]
	}
	// Identical interface words (type and pointer) are the same provider;
	// comparing the memory at once is several times faster than one
	// interface comparison after another.
	if bytes.Equal(words(list), words(s.Invokers)) {
		return true
	}
	for i, inv := range list {
		if inv != s.Invokers[i] {
			return false
		}
	}
	return true
}

// words returns the memory of list.
func words(list []base.Invoker) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(list))), len(list)*int(unsafe.Sizeof(list[0])))
}

// contains reports whether every provider of list is in the Set.
func (s *Set) contains(list []base.Invoker) bool {
	for _, inv := range list {
		if _, ok := s.index[inv]; !ok {
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
	return list[algo.Weighted(len(list), func(k int) float64 { return s.Weights[s.index[list[k]]] }, r)]
}

// View pairs a Set with the table a balancer built from it.
type View[T any] struct {
	*Set
	// Table is the balancer's own state for the Set.
	Table *T

	watch *filterWatch
}

// BuildFunc builds a balancer's table for set. prev is the view it
// replaces, nil at first; carry state over from it for providers that stay
// (set.Index finds them; prev.Set.Index gives their old position).
type BuildFunc[T any] func(set *Set, prev *View[T]) *T

// Registry keeps one snapshot per (service, method) for one balancer.
type Registry[T any] struct {
	opts  warmup.Options
	build BuildFunc[T]
	// routes finds the service of a provider URL without building its
	// service key on every call; it forgets URLs that are gone.
	routes   urlmap.Store[common.URL, route[T]]
	mu       sync.Mutex
	services map[string]*urlmap.Index[state[T]]
	// rebuilds counts the snapshots built for a change of membership (the
	// first included) and for a warmup refresh.
	rebuilds, refreshes atomic.Int64
}

type route[T any] struct {
	methods atomic.Pointer[urlmap.Index[state[T]]]
}

type state[T any] struct {
	view    atomic.Pointer[View[T]]
	mu      sync.Mutex // held while building
	misses  atomic.Int32
	watch   filterWatch
	outlier outlier.Detector
}

// NewRegistry returns a Registry that builds tables with build.
func NewRegistry[T any](opts warmup.Options, build BuildFunc[T]) *Registry[T] {
	return &Registry[T]{opts: opts.WithDefaults(), build: build, services: map[string]*urlmap.Index[state[T]]{}}
}

// Lookup returns the snapshot for list, a non-empty invoker list of one
// service, and method. exact is true when the snapshot holds exactly list,
// in order, so that an index into the View is an index into list. When it
// is false, list is a strict subset of the View (a failover retry): pick
// from it with PickAmong.
//
// Lookup compares list with the snapshot in full: O(len(list)), a fast
// memory compare (about 13 ns for 100 providers, 130 ns for 1000).
func (r *Registry[T]) Lookup(list []base.Invoker, method string) (v *View[T], exact bool) {
	return r.lookup(list, method, false)
}

// Pick draws a slot of list, a non-empty invoker list of one service, for
// method, in O(1) for balancers that read the state of the providers they
// draw rather than of all of them. It finds the snapshot as Lookup does,
// except that a list with the snapshot's length and its first and last
// providers is taken as matching without comparing the rest, but on 1 call
// in fullCheckEvery; it draws the slot with pick(v, inv) and confirms that list
// holds the snapshot's provider there, else it compares in full (Lookup)
// and draws again. When exact is false, list is a failover retry's subset
// of v and i is meaningless: pick among list instead (see Lookup).
//
// The provider drawn thus always comes from list and was judged on its own
// state. A change of membership in slots the pick did not return is seen
// fullCheckEvery Selects later on average: until then the draw weighs
// those slots with the state of the providers that held them; dubbo-go
// itself learns of a change a registry push later.
func (r *Registry[T]) Pick(list []base.Invoker, method string, pick PickFunc[T], inv base.Invocation) (v *View[T], i int, exact bool) {
	v, exact = r.lookup(list, method, true)
	if exact {
		if i = pick(v, inv); list[i] == v.Invokers[i] {
			return v, i, true
		}
		v, exact = r.Lookup(list, method) // a slot the quick look skipped changed
	}
	if !exact {
		return v, -1, false
	}
	return v, pick(v, inv), true
}

// PickFunc draws a slot of v for the invocation inv.
type PickFunc[T any] func(v *View[T], inv base.Invocation) int

func (r *Registry[T]) lookup(list []base.Invoker, method string, quick bool) (v *View[T], exact bool) {
	st := r.state(list[0].GetURL(), method)
	v = st.view.Load()
	if v != nil && v.matches(list, quick) {
		if st.misses.Load() != 0 {
			st.misses.Store(0)
		}
		if v.stale() || v.refreshAt != 0 && r.opts.Now().UnixNano() >= v.refreshAt {
			return r.update(st, list, method, v), true
		}
		return v, true
	}
	if v != nil && len(list) < v.Len() && v.contains(list) && st.misses.Add(1) < subsetRebuild {
		return v, false
	}
	return r.update(st, list, method, nil), true
}

func (r *Registry[T]) state(u *common.URL, method string) *state[T] {
	rt := r.routes.Get(u)
	methods := rt.methods.Load()
	if methods == nil {
		key := u.ServiceKey() // once per provider URL
		r.mu.Lock()
		methods = r.services[key]
		if methods == nil {
			methods = new(urlmap.Index[state[T]])
			r.services[key] = methods
		}
		r.mu.Unlock()
		rt.methods.Store(methods)
	}
	return methods.Get(method)
}

// update rebuilds the snapshot of st for list. A warmup refresh of stale,
// a snapshot that matches list, does not wait for a build already under
// way: stale is still good for this pick. (The snapshot being built may be
// for another list, so stale, not st.view, is what this caller gets.)
func (r *Registry[T]) update(st *state[T], list []base.Invoker, method string, stale *View[T]) *View[T] {
	if stale != nil {
		if !st.mu.TryLock() {
			return stale
		}
	} else {
		st.mu.Lock()
	}
	defer st.mu.Unlock()
	prev := st.view.Load()
	now := r.opts.Now()
	if prev != nil && prev.matches(list, false) && !prev.stale() && (prev.refreshAt == 0 || now.UnixNano() < prev.refreshAt) {
		return prev // another caller rebuilt it meanwhile
	}
	set := r.newSet(list, method, prev, now, &st.outlier)
	v := &View[T]{Set: set, Table: r.build(set, prev), watch: &st.watch}
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
	s := &Set{
		Invokers:  append([]base.Invoker(nil), list...),
		Providers: make([]*rpcstatus.Provider, n),
		Stats:     make([]*rpcstatus.Stats, n),
		Meta:      make([]warmup.Meta, n),
		Weights:   make([]float64, n),
		Method:    method,
		index:     make(map[base.Invoker]int, n),
		given:     &list[0],
	}
	warming := false
	for i, inv := range list {
		s.index[inv] = i
		if j, ok := prevIndex(prev, inv); ok {
			// Keep what was parsed: a skewed timestamp stays anchored
			// where it was first seen.
			s.Providers[i], s.Stats[i], s.Meta[i] = prev.Providers[j], prev.Stats[j], prev.Meta[j]
		} else {
			u := inv.GetURL()
			s.Providers[i] = rpcstatus.Of(u)
			s.Stats[i] = s.Providers[i].Method(method)
			s.Meta[i] = warmup.Parse(u, method, now)
			if p := s.Meta[i].Problem; p != "" {
				lblog.Warnf("provider %s: %s", u.Location, p)
			}
		}
		if at := s.Meta[i].WarmAt(); !at.IsZero() && now.Before(at) {
			warming = true
		}
	}
	d := det.Decide(method, s.Invokers, s.Stats)
	s.Ejected, s.Outliers, s.Panic, s.board, s.alarm = d.Ejected, d.Enabled, d.Panic, det.Board(), d.Alarm
	usable := n
	for i := range list {
		if s.IsEjected(i) {
			usable--
			continue
		}
		s.Weights[i] = r.opts.Weight(s.Meta[i], now)
		s.Total += s.Weights[i]
	}
	if s.Total <= 0 {
		for i := range s.Weights {
			if !s.IsEjected(i) {
				s.Weights[i] = 1
			}
		}
		s.Total = float64(usable)
	}
	s.Uniform = true
	for _, w := range s.Weights {
		if w != s.Weights[0] {
			s.Uniform = false
			break
		}
	}
	if warming {
		s.refreshAt = now.Add(r.opts.RefreshStep).UnixNano()
	}
	return s
}

func prevIndex[T any](prev *View[T], inv base.Invoker) (int, bool) {
	if prev == nil {
		return 0, false
	}
	return prev.Index(inv)
}
