package member

// Carry calls f(i, j) for every provider i of s that was slot j of prev,
// the snapshot s replaces (nil at first: f is not called), so that a
// table carries its state over for the providers that stay.
func Carry[T any](s *Set, prev *View[T], f func(i, j int)) {
	if prev == nil {
		return
	}
	prev.index.follow(prev.Invokers, s.Invokers, f)
}
