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
	if s.alias == nil {
		return algo.NewAlias(s.Weights)
	}
	if a := s.alias.table.Load(); a != nil {
		return a
	}
	s.alias.table.CompareAndSwap(nil, algo.NewAlias(s.Weights))
	return s.alias.table.Load()
}

// aliasCache holds the alias table of shared warm weights, built by the
// first WarmAlias that needs it.
type aliasCache struct{ table atomic.Pointer[algo.Alias] }
