package urlmap

import (
	"sync"
	"sync/atomic"
)

// Index maps names to values created on first use. Reads take no lock and
// allocate nothing; adding a name copies the map, which suits small sets of
// names added once, such as the methods of a service.
type Index[V any] struct {
	mu sync.Mutex // serialises additions; readers never take it
	m  atomic.Pointer[map[string]*V]
}

// Get returns the value of name, creating a zero V on first use.
func (x *Index[V]) Get(name string) *V {
	if m := x.m.Load(); m != nil {
		if v, ok := (*m)[name]; ok {
			return v
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	old := x.m.Load()
	size := 1
	if old != nil {
		if v, ok := (*old)[name]; ok {
			return v
		}
		size += len(*old)
	}
	next := make(map[string]*V, size)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	v := new(V)
	next[name] = v
	x.m.Store(&next)
	return v
}

// Range calls f for every name and its value until f returns false.
func (x *Index[V]) Range(f func(name string, v *V) bool) {
	if m := x.m.Load(); m != nil {
		for k, v := range *m {
			if !f(k, v) {
				return
			}
		}
	}
}
