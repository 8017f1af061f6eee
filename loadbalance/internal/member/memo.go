package member

import "sync"

// Memo returns the value build makes for key from the providers of s, made
// once and shared by the methods of the service that see the same list (a
// hash ring); the others wait for a build under way. build must depend on
// key and the providers alone. A zone's Set has no memo: build runs.
func Memo[V any](s *Set, key any, build func() V) V {
	if s.memo == nil {
		return build()
	}
	e, _ := s.memo.LoadOrStore(key, new(memoEntry))
	entry := e.(*memoEntry)
	entry.once.Do(func() { entry.v = build() })
	if v, ok := entry.v.(V); ok {
		return v
	}
	return build() // the first build panicked: nothing was kept
}

// memo is what Memo keeps for the members of a Set: a *memoEntry by key.
type memo = sync.Map

type memoEntry struct {
	once sync.Once
	v    any
}
