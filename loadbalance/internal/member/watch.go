package member

import (
	"fmt"
	"sync/atomic"
)

// MissingFilterPicks is how many picks of one (service, method) that find
// no call counted on any provider make a balancer conclude that the
// lbactive filter is missing (with it, the first pick's call counts).
const MissingFilterPicks = 1000

// filterWatch settles whether the calls of one (service, method) are
// counted; it outlives the snapshots.
type filterWatch struct {
	done atomic.Bool  // settled either way
	idle atomic.Int64 // picks that found no call counted
}

// CheckFilter looks, until settled, for a call counted on any provider of
// the view's (service, method); it returns true once, on the pick that
// completes MissingFilterPicks picks without one (MissingFilterMessage).
// Settled, it costs one load.
func (v *View[T]) CheckFilter() bool {
	if v.watch.done.Load() { // inlined
		return false
	}
	return v.checkFilter()
}

func (v *View[T]) checkFilter() bool {
	w := v.watch
	for _, s := range v.stats {
		if s.Active() != 0 || s.Total() != 0 {
			w.done.Store(true)
			return false
		}
	}
	if w.idle.Add(1) != MissingFilterPicks {
		return false
	}
	w.done.Store(true)
	return true
}

// MissingFilterMessage says that balancer found the calls of s uncounted,
// the consequence, and the fix.
func MissingFilterMessage(balancer string, s *Set, consequence string) string {
	return fmt.Sprintf("load balancer %q, service %s, method %s: no call to any provider was counted in %d picks, "+
		"so the %q filter is not in the consumer's filter chain and %s; add %q to dubbo.consumer.filter "+
		"(or to the reference's filter); dubbo-go's own \"active\" filter does not feed this balancer",
		balancer, s.Invokers[0].GetURL().ServiceKey(), s.Method, MissingFilterPicks, "lbactive", consequence, "lbactive")
}
