package algo

import "sync"

// Work lends slices of T to builds as work memory: O(N) memory that a
// build needs only while it runs, kept for the next build rather than left
// to the garbage collector, since a change of membership comes with others
// (a deploy). Builds of different (service, method) pairs run at once, so
// it is a sync.Pool underneath. Slices of more than maxPooled items are
// not kept. The zero value is ready to use.
type Work[T any] struct{ pool sync.Pool }

// maxPooled is the longest slice a Work keeps (8 MB of float64).
const maxPooled = 1 << 20

// Get returns a slice of n zero values. Give it back with Put when done
// with it, and keep no reference to it after that.
func (w *Work[T]) Get(n int) []T {
	if n <= maxPooled {
		if s, ok := w.pool.Get().([]T); ok && cap(s) >= n {
			s = s[:n]
			clear(s)
			return s
		}
	}
	return make([]T, n)
}

// Put gives s back for a later Get.
func (w *Work[T]) Put(s []T) {
	if cap(s) <= maxPooled {
		w.pool.Put(s[:0]) // boxed: one 24-byte allocation a build
	}
}
