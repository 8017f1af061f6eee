package leastactive

import (
	"math"
	"math/rand/v2"
	"sync/atomic"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/dubbogo/gost/log/logger"

	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/random"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name is the name the balancer is registered under with dubbo-go.
const Name = "fewestactive"

// MissingFilterPicks is how many picks of one (service, method) that find
// no call ever counted on any of its providers make the balancer conclude
// that the lbactive filter is not configured.
const MissingFilterPicks = member.MissingFilterPicks

// Options configure a Balancer. The zero value is ready to use.
type Options struct {
	// Warmup configures the warmup of new providers.
	Warmup warmup.Options
	// Choices selects the power-of-d-choices mode: when it is 2 or more
	// and smaller than the number of providers, each pick draws Choices
	// providers in proportion to their warm weight and takes the one with
	// the fewest calls in flight. The default, 0, and any value below 2
	// scan every provider, which finds the true minimum.
	Choices int
	// Logf receives the message saying that the lbactive filter is
	// missing; default the error level of dubbo-go's logger.
	Logf func(format string, args ...any)
}

// Balancer is the least-active balancer. It is safe for concurrent use; one
// Balancer serves every service and method.
type Balancer struct {
	views   *member.Registry[table]
	choices int
	logf    func(format string, args ...any)
	missing atomic.Bool
}

// table is the balancer's state for one snapshot of providers.
type table struct {
	// alias draws candidates in proportion to warm weight in the
	// power-of-d-choices mode; nil when the weights are equal or the mode
	// is off.
	alias *random.Alias
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	b := &Balancer{choices: opts.Choices, logf: opts.Logf}
	if b.choices < 2 {
		b.choices = 0
	}
	if b.logf == nil {
		b.logf = logger.Errorf
	}
	b.views = member.NewRegistry(opts.Warmup, func(s *member.Set, _ *member.View[table]) *table {
		t := &table{}
		if b.choices != 0 && !s.Uniform && s.Len() > b.choices {
			t.alias = random.NewAlias(s.Weights)
		}
		return t
	})
	return b
}

// Select returns the provider of invokers with the fewest calls in flight
// for the invocation's method, ties broken in proportion to warm weight:
// nil for an empty list, the only provider of a list of one.
func (b *Balancer) Select(invokers []base.Invoker, inv base.Invocation) base.Invoker {
	switch len(invokers) {
	case 0:
		return nil
	case 1:
		return invokers[0]
	}
	method := inv.MethodName()
	if b.choices != 0 && b.choices < len(invokers) {
		return b.sample(invokers, method)
	}
	v, exact := b.views.Lookup(invokers, method) // the scan reads every slot
	b.checkFilter(v)
	if !exact {
		return among(v.Set, invokers, rand.Uint64())
	}
	return invokers[Scan(v.Stats, v.Weights, v.Uniform, rand.Uint64())]
}

// sample picks the provider with the fewest calls in flight among
// b.choices candidates drawn in proportion to warm weight.
func (b *Balancer) sample(invokers []base.Invoker, method string) base.Invoker {
	v, i, exact := b.views.Pick(invokers, method, b.choose)
	b.checkFilter(v)
	if !exact {
		return among(v.Set, invokers, rand.Uint64())
	}
	return invokers[i]
}

// choose returns the slot of v with the fewest calls in flight among
// b.choices candidates.
func (b *Balancer) choose(v *member.View[table]) int {
	return Choose(v.Stats, v.Table.alias, b.choices, rand.Uint64)
}

// checkFilter tells the user, once, that the calls of v are not counted.
func (b *Balancer) checkFilter(v *member.View[table]) {
	if v.CheckFilter() && b.missing.CompareAndSwap(false, true) {
		b.logf("%s", member.MissingFilterMessage(Name, v.Set, "least-active works as weighted random"))
	}
}

// FilterMissing reports whether the balancer found a (service, method)
// whose calls are not counted, because the lbactive filter is not in the
// consumer's filter chain.
func (b *Balancer) FilterMissing() bool { return b.missing.Load() }

// among applies the least-active rule to list, a subset of s offered by a
// failover retry. It looks each provider up in s, which is slower than
// Scan but spares a list of indexes; retries are rare.
func among(s *member.Set, list []base.Invoker, u uint64) base.Invoker {
	least := int64(math.MaxInt64)
	first, last, count := -1, -1, 0
	total := 0.0
	for j, inv := range list {
		i, _ := s.Index(inv)
		w := s.Weights[i]
		if !usable(w) {
			continue
		}
		switch a := s.Stats[i].Active(); {
		case a < least:
			least, first, last, count, total = a, j, j, 1, w
		case a == least:
			last, count, total = j, count+1, total+w
		}
	}
	switch count {
	case 0: // every provider of the subset is drained
		return s.PickAmong(list)
	case 1:
		return list[first]
	}
	r := float64(u>>11) * 0x1p-53 * total
	found := first
	for j := first; j <= last; j++ {
		i, _ := s.Index(list[j])
		w := s.Weights[i]
		if !usable(w) || s.Stats[i].Active() != least {
			continue
		}
		found = j
		if r -= w; r < 0 {
			break
		}
	}
	return list[found]
}
