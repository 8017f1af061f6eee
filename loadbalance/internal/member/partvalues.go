package member

import "slices"

// Parts holds a value of T for each part of a Set (see the design note,
// "Parts"): a table's state of a run of providers as a whole, such as a
// sequence over them. The table built for a change of membership keeps, by
// pointer, the value of every part that stays with the same warm weights
// (NewParts), so that what it makes is in proportion to what changed. A
// kept value serves the tables of both snapshots.
type Parts[T any] struct {
	set  *Set
	vals []*T
}

// Len returns the number of parts.
func (p *Parts[T]) Len() int { return len(p.vals) }

// At returns the value of part k and the positions of its first provider
// and of the one after its last.
func (p *Parts[T]) At(k int) (v *T, start, end int) {
	l := p.set.layout
	return p.vals[k], int(l.starts[k]), int(l.starts[k+1])
}

// Locate returns the part that holds provider i and i's offset in it.
func (p *Parts[T]) Locate(i int) (k, offset int) { return p.set.layout.locate(i) }

// Weights returns the warm weights of the providers of part k, in order.
// They must not be changed.
func (p *Parts[T]) Weights(k int) []float64 { return p.set.weights[k] }

// Was tells where provider i of a part made again was in the parts before:
// the value of the part that held it and its offset there, ok false for a
// provider that came.
type Was[T any] func(i int) (v *T, offset int, ok bool)

// NewParts returns the values of the parts of s. A part of s that prev (the
// values of the table s replaces; nil at first) holds, with the same warm
// weights, keeps its value. build(start, weights, was) makes the value of
// each other part: start is the position of its first provider, weights
// are its providers' warm weights (not to be changed), and was tells where
// each of them was.
func NewParts[T any](s *Set, prev *Parts[T], build func(start int, weights []float64, was Was[T]) *T) *Parts[T] {
	p := &Parts[T]{set: s, vals: make([]*T, len(s.layout.parts))}
	var was Was[T] = func(int) (*T, int, bool) { return nil, 0, false }
	if prev != nil {
		old := prev.set
		from := old.index.from(old.Invokers, s.Invokers)
		defer positions.Put(from)
		was = func(i int) (*T, int, bool) {
			if from[i] < 0 {
				return nil, 0, false
			}
			k, o := old.layout.locate(int(from[i]))
			return prev.vals[k], o, true
		}
	}
	j := 0
	for k, part := range s.layout.parts {
		if prev != nil {
			if t, ok := prev.set.layout.find(part, &j); ok && slices.Equal(prev.set.weights[t], s.weights[k]) {
				p.vals[k] = prev.vals[t]
				continue
			}
		}
		p.vals[k] = build(int(s.layout.starts[k]), s.weights[k], was)
	}
	return p
}
