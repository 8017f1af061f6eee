package member

// Carry calls f(i, j) for every provider i of s that was slot j of prev,
// the snapshot s replaces (nil at first: f is not called), so that a
// table carries its state over for the providers that stay.
func Carry[T any](s *Set, prev *View[T], f func(i, j int)) {
	if prev == nil {
		return
	}
	for i, inv := range s.Invokers {
		if j, ok := prev.Index(inv); ok {
			f(i, j)
		}
	}
}
