// Package skeleton owns Select for every balancer of the module: the
// prologue (an empty list, a single provider), the snapshot lookup and
// rebuild (package member), the failover retry's subset, the watch for a
// missing lbactive filter and the logging. A balancer supplies only its
// algorithm, as a Spec: how to build its table from a snapshot, its pick,
// optionally its pick among a retry's subset, and whether it needs the
// lbactive filter. Outlier ejection reaches every balancer through the
// snapshots (package member asks package outlier); what every balancer
// needs next (metrics) goes here, once.
package skeleton

import (
	"sync"
	"sync/atomic"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/zone"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// Spec is what a balancer supplies to the skeleton.
type Spec[T any] struct {
	// Name is the name the balancer is registered under, for logs.
	Name string
	// Warmup configures the warm weights of the snapshots.
	Warmup warmup.Options
	// Env is the balancer's clocks and random source.
	Env lbenv.Env
	// Build makes the balancer's table for a snapshot (required).
	Build member.BuildFunc[T]
	// Pick returns a slot of the snapshot for an invocation (required).
	Pick member.PickFunc[T]
	// Among picks from list, a subset of the snapshot v: a failover
	// retry's, or the two candidates of Interim. Default: at random in
	// proportion to warm weight.
	Among func(v *member.View[T], list []base.Invoker, inv base.Invocation) base.Invoker
	// Interim picks from list, a new membership whose snapshot is being
	// built off the call's path, knowing old, the snapshot it replaces
	// (nil at first). It must return a provider of list, in O(1) or a
	// pass over list at most. Default: with Among and an old snapshot,
	// Among applied to two providers of list drawn as member.Interim
	// draws them (see Balancer.Interim); else member.Interim, weighted
	// random by old's warm weights, newcomers skipped.
	Interim func(old *member.View[T], list []base.Invoker, inv base.Invocation) base.Invoker
	// ReadsAllUpTo is the largest number of providers among which a pick
	// reads the state of every one (a full scan, a ring), so that the
	// whole list must be compared with the snapshot on every Select;
	// math.MaxInt for always. Default 0: never; the pick reads the
	// providers it draws and the snapshot is checked in O(1) (see
	// member.Registry.Pick).
	ReadsAllUpTo int
	// Method returns the method whose snapshot serves inv. Default:
	// inv.MethodName().
	Method func(inv base.Invocation) string
	// Uncounted is what goes wrong when the lbactive filter does not count
	// the calls, for balancers that need it; "" for those that do not.
	Uncounted string
	// Key and PickKey, for a balancer whose pick follows a key of the
	// call (ringhash), replace Pick where zone-aware routing spills: Key
	// returns inv's key under the snapshot v, and PickKey picks a slot of
	// v for that key. The key is computed once per Select: the zone is
	// chosen from it (so a key keeps its zone) and the zone's pick reuses
	// it. Without them the zone is chosen with a word of Rand.
	Key     func(v *member.View[T], inv base.Invocation) uint64
	PickKey func(v *member.View[T], key uint64, inv base.Invocation) int
	// Describe fills in what the balancer's table says of the providers
	// of v, ps[i] for slot i, when they are described (see
	// Balancer.Describe; off the hot path): the effective weight, which
	// is the warm weight by default, and a cost. now is
	// rpcstatus.Nanotime's clock.
	Describe func(v *member.View[T], now int64, ps []describe.Provider)
}

// Balancer implements dubbo-go's loadbalance.LoadBalance for a Spec. It is
// safe for concurrent use; one Balancer serves every service and method.
type Balancer[T any] struct {
	spec    Spec[T]
	rand    algo.Rand
	views   *member.Registry[T]
	missing atomic.Bool
	pick    member.PickFunc[T] // pickIn, made once
	pairs   sync.Pool          // of *[2]base.Invoker, the candidates of Interim
	// interimPicks counts the picks of Select made by Interim: only while
	// a snapshot is built, so the counter is rarely written.
	interimPicks atomic.Int64
}

// New returns the Balancer of spec.
func New[T any](spec Spec[T]) *Balancer[T] {
	b := &Balancer[T]{spec: spec, rand: algo.Source(spec.Env.Rand)}
	b.views = member.NewRegistry(spec.Warmup, spec.Env.Wall, spec.Build)
	b.pick = b.pickIn
	b.pairs.New = func() any { return new([2]base.Invoker) }
	return b
}

// pickIn returns the slot of v that the balancer picks for inv: within
// the zone that zone-aware routing chooses when v has a plan, else among
// all of v's providers.
func (b *Balancer[T]) pickIn(v *member.View[T], inv base.Invocation) int {
	zn := v.Zoning
	if zn == nil || zn.Plan.Mode == zone.Off {
		return b.spec.Pick(v, inv)
	}
	z := zn.Plan.Local
	if zn.Plan.Mode == zone.Spill {
		if b.spec.Key != nil {
			key := b.spec.Key(v, inv)
			z = zn.Plan.Choose(algo.Mix(key))
			return zn.Slots[z][b.spec.PickKey(zn.Views[z], key, inv)]
		}
		z = zn.Plan.Choose(b.rand.Uint64())
	}
	return zn.Slots[z][b.spec.Pick(zn.Views[z], inv)]
}

// Select returns the provider of invokers that the balancer's algorithm
// picks for inv: nil for an empty list, the only provider of a list of one.
// It allocates nothing, takes no lock and never waits for a build: a call
// that sees a new membership starts the build of its snapshot (unless one
// is under way) and picks with Spec.Interim; a list of at most
// member.DefaultInlineUpTo providers is built on the call (see
// SetInlineUpTo).
func (b *Balancer[T]) Select(invokers []base.Invoker, inv base.Invocation) base.Invoker {
	switch len(invokers) {
	case 0:
		return nil
	case 1:
		return invokers[0]
	}
	var method string
	if b.spec.Method != nil {
		method = b.spec.Method(inv)
	} else {
		method = inv.MethodName()
	}
	var v *member.View[T]
	var i int
	var m member.Match
	if len(invokers) <= b.spec.ReadsAllUpTo {
		if v, m = b.views.Find(invokers, method); m == member.Exact {
			i = b.pick(v, inv)
		}
	} else {
		v, i, m = b.views.Pick(invokers, method, b.pick, inv)
	}
	if v == nil {
		b.interimPicks.Add(1)
		picked := b.Interim(v, invokers, inv)
		countPick(v, picked, method)
		return picked
	}
	if (b.spec.Uncounted != "" || v.Outliers) && v.CheckFilter() {
		b.missing.Store(true)
		lblog.Warnf("%s", member.MissingFilterMessage(b.spec.Name, v.Set, b.uncounted(v.Set)))
	}
	if m == member.Exact {
		v.Stat(i).Picked()
		return invokers[i]
	}
	var picked base.Invoker
	switch {
	case m == member.Changed:
		b.interimPicks.Add(1)
		picked = b.Interim(v, invokers, inv)
	case b.spec.Among != nil:
		picked = b.spec.Among(v, invokers, inv)
	default:
		picked = v.PickAmong(invokers, b.rand.Uint64())
	}
	countPick(v, picked, method)
	return picked
}

// countPick counts a pick of picked for method on its statistics: through
// the snapshot v when it holds picked, else (a pick while a new
// membership's snapshot is built, of a provider v does not hold, or with no
// snapshot yet) through rpcstatus, a lookup off the steady path.
func countPick[T any](v *member.View[T], picked base.Invoker, method string) {
	if picked == nil {
		return
	}
	if v != nil {
		if j, ok := v.Index(picked); ok {
			v.Stat(j).Picked()
			return
		}
	}
	rpcstatus.Of(picked.GetURL()).Method(method).Picked()
}

// Interim is the pick from list while its snapshot is being built, old
// being the snapshot it replaces (nil at first): Spec.Interim when the
// balancer has one. Else, for a balancer with a rule for subsets
// (Spec.Among), that rule applied to two candidates drawn from list as
// member.Interim draws (by old's warm weights, newcomers skipped), when
// they differ and old knows both, whose state the rule reads: the power
// of two choices by the balancer's own measure (fewest in flight, lowest
// cost, ...), O(1) whatever the size. Else the first candidate: weighted
// random by old's warm weights. Where old routes by zone, the candidates
// are drawn in the zone its plan chooses (member.InterimIn). It never
// waits and does not allocate.
func (b *Balancer[T]) Interim(old *member.View[T], list []base.Invoker, inv base.Invocation) base.Invoker {
	if b.spec.Interim != nil {
		return b.spec.Interim(old, list, inv)
	}
	if old == nil {
		return member.Interim(nil, list, b.rand.Func())
	}
	next := b.rand.Func()
	in, zoned := b.interimZone(old)
	a := interimDraw(old.Set, list, next, in, zoned)
	if b.spec.Among == nil {
		return a
	}
	c := interimDraw(old.Set, list, next, in, zoned)
	_, knownA := old.Index(a)
	_, knownC := old.Index(c)
	switch {
	case a == c || !knownC:
		return a
	case !knownA:
		return c
	}
	pair := b.pairs.Get().(*[2]base.Invoker)
	pair[0], pair[1] = a, c
	picked := b.spec.Among(old, pair[:], inv)
	*pair = [2]base.Invoker{}
	b.pairs.Put(pair)
	return picked
}

// interimZone returns the zone in which Interim draws for a call, chosen
// on old's plan as for a pick; zoned is false where old does not route by
// zone.
func (b *Balancer[T]) interimZone(old *member.View[T]) (name string, zoned bool) {
	zn := old.Zoning
	if zn == nil || zn.Plan.Mode == zone.Off {
		return "", false
	}
	return zn.Names[zn.Plan.Choose(b.rand.Uint64())], true
}

// interimDraw is one candidate of Interim: in the zone named in when zoned.
func interimDraw(s *member.Set, list []base.Invoker, next func() uint64, in string, zoned bool) base.Invoker {
	if zoned {
		return member.InterimIn(s, list, next, in)
	}
	return member.Interim(s, list, next)
}

// SetInlineUpTo sets the largest list whose snapshot Select builds on the
// call that sees it (member.Registry.SetInlineUpTo): math.MaxInt makes
// every build synchronous and runs deterministic (simulators, seeded
// tests), 0 sends every build off the call's path.
func (b *Balancer[T]) SetInlineUpTo(n int) { b.views.SetInlineUpTo(n) }

// WaitBuilds waits until no snapshot is being built off a call's path, so
// that the next Select sees what the last ones started.
func (b *Balancer[T]) WaitBuilds() { b.views.Wait() }

// uncounted says what goes wrong in s when the calls are not counted.
func (b *Balancer[T]) uncounted(s *member.Set) string {
	const blind = "outlier ejection sees no failure"
	switch {
	case !s.Outliers:
		return b.spec.Uncounted
	case b.spec.Uncounted == "":
		return blind
	}
	return b.spec.Uncounted + ", and " + blind
}

// Rand returns a random word from the balancer's source.
func (b *Balancer[T]) Rand() uint64 { return b.rand.Uint64() }

// View returns the snapshot for invokers (non-empty) and method, building
// it if none matches, and whether it holds exactly invokers; nil when the
// first invoker is destroyed (member.Registry.Find). For inspection
// (tests, simulators); Select does not need it.
func (b *Balancer[T]) View(invokers []base.Invoker, method string) (*member.View[T], bool) {
	return b.views.Lookup(invokers, method)
}

// FilterMissing reports whether the balancer found a (service, method)
// whose calls are not counted, because the lbactive filter is not in the
// consumer's filter chain. Always false for balancers that do not need it
// where outlier ejection is off.
func (b *Balancer[T]) FilterMissing() bool { return b.missing.Load() }
