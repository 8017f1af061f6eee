package member

import "github.com/dubbogo-lb/lb/loadbalance/internal/algo"

// WarmAlias returns the alias table of s's warm weights, for a balancer
// that draws providers in proportion to them (algo.Alias.Draw); nil when
// they are all equal, as a uniform draw needs none.
func (s *Set) WarmAlias() *algo.Alias {
	if s.Uniform {
		return nil
	}
	return algo.NewAlias(s.Weights)
}
