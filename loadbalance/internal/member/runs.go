package member

// Runs holds a value of T for each provider of a Set, in a run for each of
// the Set's parts (see the design note, "Parts"), so that the table built
// for a change of membership keeps, by pointer, the runs of the parts that
// stay (NewRuns): what a balancer's table allocates for a change is then in
// proportion to what changed. The values of a kept run are shared by the
// tables of both snapshots.
type Runs[T any] struct {
	set  *Set
	runs [][]T
}

// At returns the value of provider i.
func (r *Runs[T]) At(i int) *T {
	k, o := r.set.layout.locate(i)
	return &r.runs[k][o]
}

// NewRuns returns the runs of the providers of s. prev are the runs of the
// table s replaces (nil at first): a part of s that prev holds keeps its
// run. Each provider i of the other parts gets its value v, a zero T, from
// fill(i, was, v): was is the provider's value in prev when it stays (to
// carry over what the table keeps of it), nil when it came.
func NewRuns[T any](s *Set, prev *Runs[T], fill func(i int, was, v *T)) *Runs[T] {
	r := &Runs[T]{set: s}
	if prev == nil {
		r.runs = makeRuns[T](s.layout, nil, nil, nil, func(i int, v *T) { fill(i, nil, v) })
		return r
	}
	old := prev.set
	from := old.index.from(old.Invokers, s.Invokers)
	defer positions.Put(from)
	r.runs = makeRuns(s.layout, old.layout, prev.runs, func([]T, int) bool { return true }, func(i int, v *T) {
		var was *T
		if j := from[i]; j >= 0 {
			was = prev.At(int(j))
		}
		fill(i, was, v)
	})
	return r
}
