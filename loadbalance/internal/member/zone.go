package member

import (
	"slices"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/zone"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// Zoning is a snapshot's zone-aware routing (package zone): the plan and,
// per zone, the balancer's table over the zone's providers. nil when the
// consumer names no zone.
type Zoning[T any] struct {
	Plan  zone.Plan // routes a call to a zone, an index of Names
	Local string    // the consumer's zone
	Names []string  // the zones, sorted ("" for providers that name none)
	// Views are the zones' sub-snapshots (nil while the plan is Off), and
	// Views[z].Invokers[j] is the snapshot's Invokers[Slots[z][j]].
	Views  []*View[T]
	Slots  [][]int
	Memory []zone.Memory // by Names; a zone with no provider stays while remembered
}

// FailingRun is the run of failures (rpcstatus.Stats.Streak) from which a
// provider counts for no capacity of its zone: the consecutive-failures
// rule's default, so that one ejection's cap leaves in serves nothing.
const FailingRun = 5

// FailingRefresh is how soon a snapshot planned while a provider is in a
// run of failures is refreshed, to see the run grow or end.
const FailingRefresh = time.Second

// maxRemembered bounds the zones remembered beside those listed, and
// forgetBelow is the share of the remembered weight below which one goes.
const (
	maxRemembered = 64
	forgetBelow   = 0.01
)

// zoning builds the zone-aware routing of v, whose previous snapshot was
// prev, with the consumer's configuration cfg; nil when it names no zone.
// A zone's healthy weight counts no provider ejected or FailingRun failures
// into a run; without configured callers, each zone's callers are its
// remembered provisioned weight (zone.Remember).
func (r *Registry[T]) zoning(v *View[T], prev *View[T], cfg zone.Routing, panic bool) *Zoning[T] {
	if cfg.Local == "" {
		return nil
	}
	s := v.Set
	zn := &Zoning[T]{Local: cfg.Local}
	for i := range s.Invokers {
		if name := s.Zone(i); !slices.Contains(zn.Names, name) {
			zn.Names = append(zn.Names, name)
		}
	}
	halfLife := cfg.Memory
	if halfLife == 0 {
		halfLife = zone.DefaultMemory
	}
	var before *Zoning[T]
	if prev != nil && prev.Zoning != nil && halfLife > 0 && cfg.Callers == nil {
		before = prev.Zoning
		// Zones whose providers have all left, while they are remembered.
		total, listed := 0.0, len(zn.Names)
		for _, m := range before.Memory {
			total += m.Weight
		}
		for k, name := range before.Names {
			if len(zn.Names) < listed+maxRemembered && k < len(before.Memory) && !slices.Contains(zn.Names, name) && before.Memory[k].Weight > forgetBelow*total {
				zn.Names = append(zn.Names, name)
			}
		}
	}
	slices.Sort(zn.Names)
	zones := make([]zone.Zone, len(zn.Names))
	zn.Slots = make([][]int, len(zn.Names))
	local := -1
	for z, name := range zn.Names {
		zones[z].Name = name
		zones[z].Callers = cfg.Callers[name]
		if name == cfg.Local {
			local = z
		}
	}
	inRun := false // a provider in a run of failures, which may end or grow
	for i := range s.Invokers {
		z, _ := slices.BinarySearch(zn.Names, s.Zone(i))
		zones[z].Providers++
		zones[z].Weight += s.Meta(i).Weight
		run := s.Stat(i).Streak()
		if run < FailingRun {
			zones[z].Healthy += s.Weight(i)
		}
		inRun = inRun || run > 0
		zn.Slots[z] = append(zn.Slots[z], i)
	}
	if inRun {
		s.refreshBy(r.wall().Add(FailingRefresh).UnixNano())
	}
	if cfg.Callers == nil {
		r.remember(s, zn, zones, before, halfLife)
	}
	zn.Plan = zone.Compute(zones, local, panic, cfg.Options)
	if zn.Plan.Mode == zone.Off {
		return zn
	}
	zn.Views = make([]*View[T], len(zn.Names))
	for z, slots := range zn.Slots {
		if len(slots) == 0 {
			continue // a zone remembered, with no provider
		}
		sub := s.subset(slots)
		var prevSub *View[T]
		if prev != nil && prev.Zoning != nil && prev.Zoning.Views != nil {
			if k, ok := slices.BinarySearch(prev.Zoning.Names, zn.Names[z]); ok {
				prevSub = prev.Zoning.Views[k]
			}
		}
		zn.Views[z] = &View[T]{Set: sub, Table: r.build(sub, prevSub), watch: v.watch}
	}
	return zn
}

// remember sets each zone's Provisioned weight to its memory, brought up to
// date from before (nil: none); s is refreshed while a memory decays.
func (r *Registry[T]) remember(s *Set, zn *Zoning[T], zones []zone.Zone, before *Zoning[T], halfLife time.Duration) {
	now := r.wall().UnixNano()
	zn.Memory = make([]zone.Memory, len(zones))
	decaying := false
	for z := range zones {
		var m zone.Memory
		if before != nil {
			if k, ok := slices.BinarySearch(before.Names, zn.Names[z]); ok && k < len(before.Memory) {
				m = before.Memory[k]
			}
		}
		m = zone.Remember(m, zones[z].Weight, now, halfLife)
		if m.Weight <= zones[z].Weight*(1+forgetBelow) {
			m.Weight = zones[z].Weight // within 1 %: forgotten
		} else {
			decaying = true
		}
		zn.Memory[z] = m
		zones[z].Provisioned = m.Weight
	}
	if decaying {
		s.refreshBy(now + int64(halfLife/8))
	}
}

// refreshBy has s refreshed at the latest at (wall ns).
func (s *Set) refreshBy(at int64) {
	if s.refreshAt == 0 || at < s.refreshAt {
		s.refreshAt = at
	}
}

// subset returns the Set of the providers of s at slots (of one zone), in
// that order, with their weights in s.
func (s *Set) subset(slots []int) *Set {
	n := len(slots)
	sub := &Set{
		Invokers:  make([]base.Invoker, n),
		Method:    s.Method,
		Outliers:  s.Outliers,
		board:     s.board,
		alarm:     s.alarm,
		providers: make([]*rpcstatus.Provider, n),
		meta:      make([]*warmup.Meta, n),
		stats:     make([]*rpcstatus.Stats, n),
	}
	w := &warmWeights{refreshAt: s.refreshAt, weights: make([]float64, n)}
	for j, i := range slots {
		sub.Invokers[j], sub.providers[j], sub.meta[j] = s.Invokers[i], s.Provider(i), s.Meta(i)
		sub.stats[j], w.weights[j] = s.Stat(i), s.Weight(i)
		w.total += w.weights[j]
		if s.IsEjected(i) {
			if sub.Ejected == nil {
				sub.Ejected = make([]bool, n)
			}
			sub.Ejected[j] = true
		}
	}
	if z := s.Zone(slots[0]); z != "" {
		sub.zones = slices.Repeat([]string{z}, n)
	}
	sub.index = newIndex(sub.Invokers)
	w.settle(sub.Ejected)
	sub.use(w)
	return sub
}
