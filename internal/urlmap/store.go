package urlmap

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"
)

// Store maps identities, pointers to K, to values of type V created on
// first use, without keeping the identities alive: when a K is garbage
// collected its entry is removed, so memory stays bounded however many
// providers come and go. Lookups take no lock and allocate nothing.
//
// The map is keyed by the pointer's address. An address can be reused by a
// new object after the old one is collected and before its cleanup ran, so
// every hit is checked against a weak pointer to the original key.
type Store[K, V any] struct {
	m    sync.Map // uintptr -> *entry[K, V]
	size atomic.Int64
}

type entry[K, V any] struct {
	key  weak.Pointer[K]
	addr uintptr
	v    *V
}

// Load returns the value of key, or nil if it has none yet.
func (s *Store[K, V]) Load(key *K) *V {
	if v, ok := s.m.Load(uintptr(unsafe.Pointer(key))); ok {
		if e := v.(*entry[K, V]); e.key.Value() == key {
			return e.v
		}
	}
	return nil
}

// Get returns the value of key, creating it on first use.
func (s *Store[K, V]) Get(key *K) *V {
	if v := s.Load(key); v != nil {
		return v
	}
	return s.add(key)
}

func (s *Store[K, V]) add(key *K) *V {
	addr := uintptr(unsafe.Pointer(key))
	e := &entry[K, V]{key: weak.Make(key), addr: addr, v: new(V)}
	for {
		v, loaded := s.m.LoadOrStore(addr, e)
		if !loaded {
			s.size.Add(1)
			runtime.AddCleanup(key, remove[K, V], gone[K, V]{weak.Make(s), e})
			return e.v
		}
		old := v.(*entry[K, V])
		if old.key.Value() == key {
			return old.v // another goroutine added it first
		}
		// A dead key's entry at a reused address: replace it. Its own
		// cleanup will find a different entry and leave ours alone.
		if s.m.CompareAndSwap(addr, old, e) {
			s.size.Add(1)
			runtime.AddCleanup(key, remove[K, V], gone[K, V]{weak.Make(s), e})
			return e.v
		}
	}
}

// gone is what the cleanup of a key needs: the store, weakly, so that a
// store kept in a value that its keys' values reach (a detector's records
// of the statistics its snapshot holds) can itself be collected.
type gone[K, V any] struct {
	s weak.Pointer[Store[K, V]]
	e *entry[K, V]
}

// remove runs after g.e's key was collected.
func remove[K, V any](g gone[K, V]) {
	if s := g.s.Value(); s != nil {
		s.size.Add(-1)
		s.m.CompareAndDelete(g.e.addr, g.e)
	}
}

// Len returns the number of keys with a value. Entries of collected
// keys leave shortly after a garbage collection, when their cleanups run.
func (s *Store[K, V]) Len() int { return int(s.size.Load()) }

// Range calls f for every live key and its value until f returns false.
// For inspection and tests; it allocates.
func (s *Store[K, V]) Range(f func(key *K, v *V) bool) {
	s.m.Range(func(_, v any) bool {
		e := v.(*entry[K, V])
		if k := e.key.Value(); k != nil {
			return f(k, e.v)
		}
		return true
	})
}
