package member

// Runs holds a value of T for each provider of a Set, in a run for each of
// the Set's parts (see the design note, "Parts"), so that the table built
// for a change of membership keeps, by pointer, the runs of the parts that
// stay (NewRuns): what a balancer's table allocates for a change is then in
// proportion to what changed. The values of a kept run are shared by the
// tables of both snapshots.
type Runs[T any] struct {
	layout *layout
	runs   [][]T
}

// At returns the value of provider i.
func (r *Runs[T]) At(i int) *T {
	k, o := r.layout.locate(i)
	return &r.runs[k][o]
}

// NewRuns returns the runs of the providers of s. A part of s that prev
// (the runs of the snapshot before; nil at first) holds keeps its run; for
// each provider i of the other parts, fill(i, v) sets its value v, a zero
// T: carry it from the snapshot before with Carry, or make it.
func NewRuns[T any](s *Set, prev *Runs[T], fill func(i int, v *T)) *Runs[T] {
	r := &Runs[T]{layout: s.layout}
	if prev == nil {
		r.runs = makeRuns[T](s.layout, nil, nil, nil, fill)
	} else {
		r.runs = makeRuns(s.layout, prev.layout, prev.runs, func([]T, int) bool { return true }, fill)
	}
	return r
}
