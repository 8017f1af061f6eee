package nacosdiscovery

import (
	"sync"

	"dubbo.apache.org/dubbo-go/v3/registry"
)

// listeners maps the listeners that subscribed through a registry wrapper
// to what serves each. It is safe for concurrent use; the zero value is
// empty.
type listeners[T comparable] struct {
	mu sync.Mutex
	m  map[registry.NotifyListener]T
}

// get returns what serves l, the zero T when nothing does.
func (ls *listeners[T]) get(l registry.NotifyListener) T {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.m[l]
}

// getOrAdd returns what serves l, made by add (under the lock) when
// nothing does yet; a zero T from add is not kept.
func (ls *listeners[T]) getOrAdd(l registry.NotifyListener, add func() T) T {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if v, ok := ls.m[l]; ok {
		return v
	}
	v := add()
	if v != *new(T) {
		if ls.m == nil {
			ls.m = map[registry.NotifyListener]T{}
		}
		ls.m[l] = v
	}
	return v
}

// remove forgets l and returns what served it, the zero T when nothing
// did.
func (ls *listeners[T]) remove(l registry.NotifyListener) T {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	v := ls.m[l]
	delete(ls.m, l)
	return v
}

// removeAll forgets every listener and returns what served them.
func (ls *listeners[T]) removeAll() map[registry.NotifyListener]T {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	m := ls.m
	ls.m = nil
	return m
}
