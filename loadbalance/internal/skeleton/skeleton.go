// Package skeleton owns Select for every balancer of the module: the
// prologue (an empty list, one provider), the snapshot (package member),
// the failover retry's subset, picks while a snapshot is built, zones, the
// watch for a missing lbactive filter, pick counts and description. A
// balancer supplies its algorithm as a Spec.
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
	Name   string              // the registered name, for logs
	Warmup warmup.Options      // the snapshots' warm weights
	Env    lbenv.Env           // clocks and random source
	Build  member.BuildFunc[T] // the table of a snapshot (required)
	Pick   member.PickFunc[T]  // a slot of the snapshot for a call (required)
	// Among picks from list, a subset of the snapshot v: a failover
	// retry's, or the two candidates of Interim. Default: by warm weight.
	Among func(v *member.View[T], list []base.Invoker, inv base.Invocation) base.Invoker
	// ReadsAllUpTo is the largest list whose every provider a pick reads
	// (a scan), which is then compared with the snapshot in full on every
	// Select. Default 0: picks read what they draw (member.Registry.Pick).
	ReadsAllUpTo int
	Uncounted    string    // what goes wrong without the lbactive filter; "" if nothing
	Keyed        *Keyed[T] // for a pick that follows a key of the call (ringhash)
	// Describe fills in what the table says of the providers of v, ps[i]
	// for slot i (weight, cost), off the hot path; now is
	// rpcstatus.Nanotime's clock.
	Describe func(v *member.View[T], now int64, ps []describe.Provider)
}

// Keyed is the hook of a balancer whose pick follows a key of the call.
type Keyed[T any] struct {
	Method func(inv base.Invocation) string // the method whose snapshot serves inv
	// Key returns inv's key under v and PickKey a slot of v for it. Where
	// zones spill, the zone is chosen from the key, which the zone's pick
	// reuses.
	Key     func(v *member.View[T], inv base.Invocation) uint64
	PickKey func(v *member.View[T], key uint64, inv base.Invocation) int
	// Interim is Balancer.Interim, in O(len(list)) at most.
	Interim func(old *member.View[T], list []base.Invoker, inv base.Invocation) base.Invoker
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

	interimPicks atomic.Int64 // Select's picks by Interim
}

// New returns the Balancer of spec.
func New[T any](spec Spec[T]) *Balancer[T] {
	b := &Balancer[T]{spec: spec, rand: algo.Source(spec.Env.Rand)}
	b.views = member.NewRegistry(spec.Warmup, spec.Env.Wall, spec.Build)
	b.pick = b.pickIn
	b.pairs.New = func() any { return new([2]base.Invoker) }
	return b
}

// pickIn returns the slot of v the balancer picks for inv, within the zone
// that v's plan chooses.
func (b *Balancer[T]) pickIn(v *member.View[T], inv base.Invocation) int {
	zn := v.Zoning
	if zn == nil || zn.Plan.Mode == zone.Off {
		return b.spec.Pick(v, inv)
	}
	z := zn.Plan.Local
	if zn.Plan.Mode == zone.Spill {
		if k := b.spec.Keyed; k != nil {
			key := k.Key(v, inv)
			z = zn.Plan.Choose(algo.Mix(key))
			return zn.Slots[z][k.PickKey(zn.Views[z], key, inv)]
		}
		z = zn.Plan.Choose(b.rand.Uint64())
	}
	return zn.Slots[z][b.spec.Pick(zn.Views[z], inv)]
}

// Select returns the provider of invokers the balancer picks for inv; nil
// for an empty list. It allocates nothing, takes no lock and never waits
// for a build: a call that sees a new membership starts its build and
// picks with Interim (lists up to SetInlineUpTo are built on the call).
func (b *Balancer[T]) Select(invokers []base.Invoker, inv base.Invocation) base.Invoker {
	switch len(invokers) {
	case 0:
		return nil
	case 1:
		return invokers[0]
	}
	var method string
	if b.spec.Keyed != nil {
		method = b.spec.Keyed.Method(inv)
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
	if v != nil { // else m is Changed
		if (b.spec.Uncounted != "" || v.Outliers) && v.CheckFilter() {
			b.missing.Store(true)
			lblog.Warnf("%s", member.MissingFilterMessage(b.spec.Name, v.Set, b.uncounted(v.Set)))
		}
		if m == member.Exact {
			v.Stat(i).Picked()
			return invokers[i]
		}
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

// countPick counts a pick of picked for method: through v when it holds
// picked, else through rpcstatus (off the steady path).
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

// Interim picks from list while its snapshot is built, knowing old, the
// snapshot it replaces (nil at first): Keyed.Interim for a keyed balancer;
// else a candidate drawn as member.Interim draws (in the zone old's plan
// chooses: member.InterimIn), or, with Spec.Among, Among of two such
// candidates when they differ and old knows both. O(1), no allocation.
func (b *Balancer[T]) Interim(old *member.View[T], list []base.Invoker, inv base.Invocation) base.Invoker {
	if b.spec.Keyed != nil {
		return b.spec.Keyed.Interim(old, list, inv)
	}
	next := b.rand.Func()
	if old == nil {
		return member.Interim(nil, list, next)
	}
	draw := func() base.Invoker { return member.Interim(old.Set, list, next) }
	if zn := old.Zoning; zn != nil && zn.Plan.Mode != zone.Off {
		in := zn.Names[zn.Plan.Choose(b.rand.Uint64())]
		draw = func() base.Invoker { return member.InterimIn(old.Set, list, next, in) }
	}
	a := draw()
	if b.spec.Among == nil {
		return a
	}
	c := draw()
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

// SetInlineUpTo sets the largest list whose snapshot Select builds on the
// call (member.Registry.SetInlineUpTo).
func (b *Balancer[T]) SetInlineUpTo(n int) { b.views.SetInlineUpTo(n) }

// WaitBuilds waits until no snapshot is being built in the background.
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

// View is member.Registry.Lookup, for inspection.
func (b *Balancer[T]) View(invokers []base.Invoker, method string) (*member.View[T], bool) {
	return b.views.Lookup(invokers, method)
}

// FilterMissing reports whether Select found the calls of a (service,
// method) uncounted (no lbactive filter) where that matters.
func (b *Balancer[T]) FilterMissing() bool { return b.missing.Load() }
