package member

import (
	"sync/atomic"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
)

// WarmAlias returns the alias table of s's warm weights, for a balancer
// that draws providers in proportion to them (algo.Alias.Draw); nil when
// they are all equal, as a uniform draw needs none. The Sets of the
// methods that share their warm weights share one table.
func (s *Set) WarmAlias() *algo.Alias {
	if s.Uniform {
		return nil
	}
	w := s.warm
	if a := w.alias.table.Load(); a != nil {
		return a
	}
	w.alias.table.CompareAndSwap(nil, algo.NewAlias(w.weights))
	return w.alias.table.Load()
}

// aliasCache holds the alias table of shared warm weights, built by the
// first WarmAlias that needs it.
type aliasCache struct{ table atomic.Pointer[algo.Alias] }
