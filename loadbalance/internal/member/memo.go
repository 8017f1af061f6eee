package member

import "sync"

// Memo returns the value build makes for key from the providers of s,
// made once for them and shared by the snapshots of every method of the
// service that see the same list (Registry keeps one members per list), so
// that a table that does not depend on the method (a hash ring) is built
// by the first method's build and found by the others', which wait for it
// when it is under way. build must depend on key and the providers of s
// alone. Keys compare with ==. A zone's Set has no memo: build runs every
// time. Off the call's path (in a Build).
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
