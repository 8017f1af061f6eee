package member

import (
	"slices"
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
	if w == nil {
		return algo.NewAlias(s.Weights)
	}
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
	l := w.layout
	if len(l.parts) <= 1 {
		return algo.NewAlias(w.weights)
	}
	b := w.before.Load()
	var old *algo.Alias
	if b != nil {
		old = b.alias.table.Load()
	}
	j := 0 // the parts of b before j are behind the walk
	return algo.NewTiered(w.weights, l.starts, func(k int) *algo.Alias {
		if old == nil {
			return nil
		}
		ol := b.layout
		for t := j; t < len(ol.parts); t++ { // the parts that stay keep their order
			if ol.parts[t] != l.parts[k] {
				continue
			}
			j = t + 1
			if !slices.Equal(w.weights[l.starts[k]:l.starts[k+1]], b.weights[ol.starts[t]:ol.starts[t+1]]) {
				return nil
			}
			return old.Run(t)
		}
		return nil
	})
}
