package member

import (
	"fmt"
	"sync/atomic"
)

// MissingFilterPicks is how many picks of one (service, method) that find no
// call ever counted on any of its providers make a balancer conclude that
// the lbactive filter is not configured. With the filter, the first pick's
// call is counted as soon as it starts, so only picks that are never
// followed by a call (a benchmark) could reach it.
const MissingFilterPicks = 1000

// filterWatch settles, for one (service, method), whether its calls are
// counted. It lives with the (service, method), not with a snapshot, so
// that rebuilds do not restart it.
type filterWatch struct {
	done atomic.Bool  // settled either way
	idle atomic.Int64 // picks that found no call counted
}

// CheckFilter looks, until the question is settled, for evidence that the
// lbactive filter counts the calls of the view's (service, method): a call
// in flight or finished on any of its providers. It returns true once, on
// the pick that completes MissingFilterPicks picks without such evidence;
// the balancer should then tell the user (see MissingFilterMessage). Once
// settled it costs one atomic load; before, a scan that normally ends on
// the first pick.
func (v *View[T]) CheckFilter() bool {
	if v.watch.done.Load() {
		return false // small enough to inline: the settled case costs a load
	}
	return v.checkFilter()
}

// checkFilter is CheckFilter until the question is settled.
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

// MissingFilterMessage says, on one line, that balancer found the calls of
// s uncounted, what follows from it (consequence), and the setting that
// fixes it.
func MissingFilterMessage(balancer string, s *Set, consequence string) string {
	return fmt.Sprintf("load balancer %q, service %s, method %s: no call to any provider was counted in %d picks, "+
		"so the %q filter is not in the consumer's filter chain and %s; add %q to dubbo.consumer.filter "+
		"(or to the reference's filter); dubbo-go's own \"active\" filter does not feed this balancer",
		balancer, s.Invokers[0].GetURL().ServiceKey(), s.Method, MissingFilterPicks, "lbactive", consequence, "lbactive")
}
