package algo

import "sync"

// Work lends slices of T to builds as work memory, kept for the next build
// (a sync.Pool). Slices longer than maxPooled are not kept. The zero value
// is ready to use.
type Work[T any] struct{ pool sync.Pool }

// maxPooled is the longest slice a Work keeps.
const maxPooled = 1 << 20

// Get returns a slice of n zero values; give it back with Put.
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

// Put gives s back for a later Get; keep no reference to it.
func (w *Work[T]) Put(s []T) {
	if cap(s) <= maxPooled {
		w.pool.Put(s[:0])
	}
}
