package member

import (
	"sync/atomic"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
)

// WarmAlias returns the alias table of s's warm weights, for a balancer
// that draws providers in proportion to them (algo.Alias.Draw); nil when
// they are all equal, as a uniform draw needs none. The Sets of the
// methods that share their warm weights share one table. Above one part of
// providers (layout) the table has a tier per part, and the parts that
// stay with the same weights keep theirs from the table before.
func (s *Set) WarmAlias() *algo.Alias {
	if s.Uniform {
		return nil
	}
	w := s.warm
	if a := w.alias.table.Load(); a != nil {
		return a
	}
	w.alias.table.CompareAndSwap(nil, w.newAlias())
	w.before.Store(nil)
	return w.alias.table.Load()
}

// aliasCache holds the alias table of shared warm weights, built by the
// first WarmAlias that needs it.
type aliasCache struct{ table atomic.Pointer[algo.Alias] }

// newAlias returns the alias table of w: of one tier for one part, else
// of a tier per part (algo.NewTiered) that takes the run of a part from
// the table of w.before when that part was there with the same weights.
func (w *warmWeights) newAlias() *algo.Alias {
	switch l := w.layout; len(l.parts) {
	case 0:
		return algo.NewAlias(nil)
	case 1:
		return algo.NewAlias(w.runs[0])
	}
	l := w.layout
	b := w.before.Load()
	var old *algo.Alias
	if b != nil {
		old = b.alias.table.Load()
	}
	j := 0 // the parts of b before j are behind the walk
	return algo.NewTiered(w.runs, func(k int) *algo.Alias {
		if old == nil {
			return nil
		}
		if t, ok := b.layout.find(l.parts[k], &j); ok && &b.runs[t][0] == &w.runs[k][0] {
			return old.Run(t) // made for the very same weights
		}
		return nil
	})
}
