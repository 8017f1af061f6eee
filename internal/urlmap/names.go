package urlmap

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// Overflow is the reserved name under which Names keeps the one value that
// every name beyond its limit shares. It is no identifier of Java, Go or
// protobuf, so no IDL method is called so; a caller that sends it gets the
// shared value, as an overflowing name does.
const Overflow = "(overflow)"

// DefaultNameLimit is the number of distinct names a Names keeps by default
// (Names.Limit 0): far more than the methods of any service.
const DefaultNameLimit = 256

// released is the stamp of a value that Sweep took out of its Names.
const released = -1

// Names maps names (methods, services: strings from outside the process)
// to values created on first use, with two bounds on the memory that
// strangers' names can take:
//
//   - at most Limit names (DefaultNameLimit when 0) have a value of their
//     own; the names beyond share the value of Overflow;
//   - every Get stamps its value with the caller's coarse clock reading
//     (any non-decreasing int64 >= 0, the caller's choice of unit), and
//     Sweep takes out the values stamped before a given stamp.
//
// Get of a known name takes no lock and allocates nothing: a lookup in a
// sync.Map (a hash trie, whose reads take no lock) and, at most once per
// stamp, a compare-and-swap of the value's stamp. Adding a name costs
// O(1): nothing is copied. The zero value is ready to use; set Limit
// before the first Get.
type Names[V any] struct {
	// Limit is the number of names with a value of their own; 0 means
	// DefaultNameLimit.
	Limit int

	m  sync.Map   // string -> *named[V]
	mu sync.Mutex // serialises additions and sweeps; readers never take it
	// n counts the names with a value of their own (Overflow excluded);
	// overflowed is set once a name was turned to Overflow (mu).
	n          int
	overflowed bool
	// closed is set by a Sweep that left the Names empty and was asked to
	// close it: Get then returns nil.
	closed atomic.Bool
}

type named[V any] struct {
	v    V            // first: a *V is its entry's address (Touch, Released)
	used atomic.Int64 // the last stamp given to Get; released once swept
	name string
}

// Get returns the value of name, stamped with stamp (values < 0 count as
// 0), creating it on first use. Once Limit names have values, a new name
// gets the value of Overflow, and first is true for the first such name
// since the Names was made: the caller says so once. A value that Sweep
// took out is never returned again: its name gets a new one. Get returns
// nil once a Sweep closed the Names.
func (x *Names[V]) Get(name string, stamp int64) (v *V, first bool) {
	stamp = max(stamp, 0)
	if e, ok := x.m.Load(name); ok {
		n := e.(*named[V])
		if n.touch(stamp) {
			return &n.v, false
		}
	}
	return x.add(name, stamp)
}

// touch moves n's stamp forward to stamp; false if n was released.
func (n *named[V]) touch(stamp int64) bool {
	for {
		u := n.used.Load()
		switch {
		case u == released:
			return false
		case u >= stamp:
			return true
		case n.used.CompareAndSwap(u, stamp):
			return true
		}
	}
}

// add is Get of a name without a live value.
func (x *Names[V]) add(name string, stamp int64) (*V, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed.Load() {
		return nil, false
	}
	if e, ok := x.m.Load(name); ok {
		if n := e.(*named[V]); n.touch(stamp) {
			return &n.v, false
		}
		x.m.Delete(name) // released but not yet deleted: cannot happen under mu
	}
	first := false
	if name != Overflow {
		limit := x.Limit
		if limit <= 0 {
			limit = DefaultNameLimit
		}
		if x.n >= limit {
			first = !x.overflowed
			x.overflowed = true
			name = Overflow
			if e, ok := x.m.Load(name); ok {
				if n := e.(*named[V]); n.touch(stamp) {
					return &n.v, first
				}
			}
		} else {
			x.n++
		}
	}
	n := &named[V]{name: name}
	n.used.Store(stamp)
	x.m.Store(name, n)
	return &n.v, first
}

// Sweep takes out every value stamped before keepFrom for which keep (when
// not nil) returns false: a Get that races with it either stamps the value
// first, which keeps it, or finds it gone and gets a new one. keep runs
// under the Names' lock and must not call Get. When close is true and no
// value is left, the Names is closed: every later Get returns nil, so that
// the Names can be dropped with no value added behind the caller's back.
// It returns the number of values taken out and the number left. O(names):
// call it off the hot path, at most once per idle period.
func (x *Names[V]) Sweep(keepFrom int64, keep func(name string, v *V) bool, close bool) (out, left int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.m.Range(func(k, e any) bool {
		n := e.(*named[V])
		u := n.used.Load()
		if u == released {
			return true
		}
		if u >= keepFrom || keep != nil && keep(n.name, &n.v) || !n.used.CompareAndSwap(u, released) {
			left++
			return true
		}
		x.m.Delete(k)
		if n.name != Overflow {
			x.n--
		}
		out++
		return true
	})
	if close && left == 0 {
		x.closed.Store(true)
	}
	return out, left
}

// Forget takes out v, the value of name, if it is still name's: for a value
// whose life ends otherwise than by Sweep (a collected referent).
func (x *Names[V]) Forget(name string, v *V) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.m.Load(name)
	if n := (*named[V])(unsafe.Pointer(v)); !ok || e.(*named[V]) != n || !n.used.CompareAndSwap(n.used.Load(), released) {
		return
	}
	x.m.Delete(name)
	if name != Overflow {
		x.n--
	}
}

// Closed reports whether a Sweep closed the Names.
func (x *Names[V]) Closed() bool { return x.closed.Load() }

// Touch stamps v, a value Get returned, with stamp as Get does, without a
// lookup: false if Sweep took v out (then Get the name again). For a
// caller that keeps v in a cache of its own.
func Touch[V any](v *V, stamp int64) bool {
	return (*named[V])(unsafe.Pointer(v)).touch(max(stamp, 0))
}

// NameOf returns the name v, a value Get returned, is kept under: Overflow
// for the value shared by the names beyond the limit.
func NameOf[V any](v *V) string { return (*named[V])(unsafe.Pointer(v)).name }

// Len returns the number of names with a value of their own, Overflow
// excluded.
func (x *Names[V]) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.n
}

// Released reports whether v, a value Get returned, was taken out by
// Sweep since.
func Released[V any](v *V) bool {
	// named[V] starts with v, so the value's address is its entry's.
	return (*named[V])(unsafe.Pointer(v)).used.Load() == released
}

// Range calls f for every name and its value until f returns false. For
// inspection and sweeps; it allocates nothing of its own, takes no lock
// and does not stamp.
func (x *Names[V]) Range(f func(name string, v *V) bool) {
	x.m.Range(func(k, e any) bool {
		n := e.(*named[V])
		if n.used.Load() == released {
			return true
		}
		return f(k.(string), &n.v)
	})
}
