package ringhash

import (
	"net"
	"slices"
	"strings"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/loadbalance/internal/zone"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
)

// Name is the name the balancer is registered under with dubbo-go, apart
// from dubbo-go's own "consistenthashing".
const Name = "ringhash"

// JavaName is Dubbo Java's name of its consistent hash, under which package
// extension registers Java.
const JavaName = "consistenthash"

// Java returns the balancer registered under JavaName: Dubbo's
// configuration of the ring (160 nodes, hash.arguments "0", no bounded
// load), whatever ringhash's defaults become, described under its own name.
func Java() *Balancer { return New(Options{BalanceFactor: 0}) }

// Options configure a Balancer. The zero value is Dubbo's consistent hash.
type Options struct {
	// BalanceFactor turns on bounded load (Envoy's hash_balance_factor): a
	// key goes to the first provider clockwise whose calls in flight for
	// the method stay within BalanceFactor × the average. 0 (the
	// default), a negative value or NaN: off; below 1 acts as 1. The
	// counts come from the lbactive filter (package rpcstatus); with the
	// option on, each Select sums them over all providers, O(N).
	BalanceFactor float64
	// Env is the balancer's clocks and random source; the zero value is
	// the real ones (see lbenv.Env).
	Env lbenv.Env
}

// Balancer is a consistent-hash balancer whose ring is Apache Dubbo's
// ConsistentHashLoadBalance's, so that Java and Go consumers send a key to
// the same provider. It is safe for concurrent use; one Balancer serves
// every service and method, with a ring per (service, method) rebuilt only
// when the provider addresses or hash.nodes change. Select does not
// allocate. Where Dubbo fails or misroutes it differs:
//
//   - an unavailable or ejected provider is skipped clockwise, and gets its
//     keys back when it returns; if none is available the key's own
//     provider is returned, for the cluster to report the failure;
//   - a failover retry (a subset of the providers) goes to the first
//     provider of the subset clockwise from the key;
//   - a bad hash.nodes or hash.arguments is logged once and replaced by a
//     safe value; indexes beyond a call's arguments add nothing to the key,
//     as in Dubbo (logged once). A key of no argument is "".
//
// A generic call ($invoke of the real method, types and arguments) is
// hashed as a call of the real method, as in Dubbo; bounded load does not
// apply to it (the lbactive filter counts it under "$invoke").
type Balancer struct {
	skeleton.Front[table] // Select, Describe, Rebuilds

	sk     *skeleton.Balancer[table]
	factor float64 // 0: bounded load off
}

// ringMemo is the member.Memo key of a ring: the methods of a service that
// see the same providers share one ring per number of virtual nodes.
type ringMemo struct{ nodes int }

// table is a snapshot's state.
type table struct {
	ring     *hashRing
	addrs    []string // the providers' Java addresses, the ring's members
	cfg      config
	key      *keySpec
	problems []string // the configuration's, reported once
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	opts.Env = opts.Env.WithDefaults()
	b := &Balancer{}
	if f := opts.BalanceFactor; f > 0 { // false for NaN
		b.factor = max(f, 1)
	}
	b.sk = skeleton.New(skeleton.Spec[table]{
		Name: Name, Env: opts.Env, // the ring ignores weights and warmup, as Dubbo's
		Build: b.build, Pick: b.pick, Among: b.among,
		// The zone is drawn from the key's point, so a key keeps its zone.
		Keyed: &skeleton.Keyed[table]{
			Method: func(inv base.Invocation) string { m, _ := callOf(inv); return m },
			Key: func(v *member.View[table], inv base.Invocation) uint64 {
				return uint64(b.point(v.Table, inv))
			},
			PickKey: func(v *member.View[table], key uint64, _ base.Invocation) int {
				return b.pickPoint(v, uint32(key))
			},
			Interim: b.interim,
		},
		// Up to member.SampleAbove providers the whole list is compared on
		// every call, so a key reaches its Dubbo provider at once after
		// any change; above, the list is checked as Registry.Pick does.
		ReadsAllUpTo: member.SampleAbove,
		Describe:     describeRing,
	})
	b.Front = skeleton.FrontOf(b.sk)
	return b
}

// describeRing gives each provider, as its effective weight, the
// percentage of the hash space it owns on the ring.
func describeRing(v *member.View[table], _ int64, ps []describe.Provider) {
	for i, share := range v.Table.ring.Shares() {
		ps[i].Weight = 100 * share
	}
}

// build makes the table of set, keeping prev's ring while the addresses
// and hash.nodes hold, else taking the ring another method of the service
// made for the same providers (member.Memo), else rebuilding prev's for
// the newcomers; and prev's key spec while hash.arguments holds. Problems
// are reported when they differ from prev's.
func (b *Balancer) build(set *member.Set, prev *member.View[table]) *table {
	var dissent []string
	cfg, problems := parseConfig(skeleton.Params(set, &dissent))
	problems = append(problems, dissent...)
	if p := cappedProblem(&cfg, set.Len()); p != "" {
		problems = append(problems, p)
	}
	old := &table{}
	if prev != nil {
		old = prev.Table
	}
	skeleton.Report(Name, set, problems, old.problems)
	t := &table{cfg: cfg, problems: problems, addrs: make([]string, set.Len()), key: old.key, ring: old.ring}
	from := make([]int, set.Len()) // provider i's slot in prev, -1 for a newcomer
	for i := range from {
		from[i] = -1
	}
	member.Carry(set, prev, func(i, j int) { from[i], t.addrs[i] = j, old.addrs[j] })
	for i, inv := range set.Invokers {
		if from[i] < 0 {
			t.addrs[i] = javaAddress(inv.GetURL())
		}
	}
	if slices.Equal(old.addrs, t.addrs) {
		t.addrs = old.addrs
	}
	if old.key == nil || old.cfg.argsRaw != cfg.argsRaw {
		t.key = newKeySpec(&cfg, "service "+set.Invokers[0].GetURL().ServiceKey()+", method "+set.Method)
	}
	if old.ring == nil || old.cfg.nodesRaw != cfg.nodesRaw || !slices.Equal(old.addrs, t.addrs) {
		t.ring = member.Memo(set, ringMemo{cfg.nodes}, func() *hashRing { return old.ring.Rebuild(t.addrs, from, cfg.nodes) })
	}
	return t
}

// javaAddress is the address Dubbo Java hashes for the provider URL u,
// URL.getAddress(): u.Location for an IPv6 URL parsed from text, which
// keeps the brackets ("[fd00::1]:20880"), else u.Address() ("fd00::1:20880"
// for one built from a registry instance's ip and port). See DESIGN.md.
func javaAddress(u *common.URL) string {
	if strings.IndexByte(u.Ip, ':') < 0 || !strings.HasPrefix(u.Location, "[") {
		return u.Address()
	}
	if host, port, err := net.SplitHostPort(u.Location); err == nil && host == u.Ip && port == u.Port {
		return u.Location
	}
	return u.Address()
}

// pick returns the slot of v the invocation's key goes to.
func (b *Balancer) pick(v *member.View[table], inv base.Invocation) int {
	return b.pickPoint(v, b.point(v.Table, inv))
}

// pickPoint returns the slot of v that a key at ring point kp goes to.
func (b *Balancer) pickPoint(v *member.View[table], kp uint32) int {
	t := v.Table
	if b.factor == 0 {
		if i := t.ring.Lookup(kp); i >= 0 && !v.IsEjected(i) && v.Invokers[i].IsAvailable() {
			return i
		}
	}
	return max(b.walk(v, true, v.Invokers, nil, kp), 0) // the ring holds every provider of v
}

// among returns the provider of list, a failover retry's subset of v, first
// clockwise from the invocation's key.
func (b *Balancer) among(v *member.View[table], list []base.Invoker, inv base.Invocation) base.Invoker {
	i := b.walk(v, false, list, nil, b.point(v.Table, inv))
	if i < 0 {
		return list[0] // list is a subset of v's providers: not reached
	}
	return v.Invokers[i]
}

// interim routes a key while the ring of list, a new membership, is
// built: as a retry's subset of old (of the zone old's plan gives the key,
// where old routes by zone), so that keys of providers that stay do not
// move and a newcomer gets none yet; with no old ring, or none of its
// providers left, to a provider of list at random. O(N).
func (b *Balancer) interim(old *member.View[table], list []base.Invoker, inv base.Invocation) base.Invoker {
	if old != nil {
		v, slots := old, []int(nil)
		kp := b.point(old.Table, inv)
		if zn := old.Zoning; zn != nil && zn.Plan.Mode != zone.Off {
			z := zn.Plan.Choose(algo.Mix(uint64(kp))) // as the skeleton chooses a keyed call's zone
			v, slots = zn.Views[z], zn.Slots[z]
		}
		if i := b.walk(v, false, list, slots, kp); i >= 0 {
			return v.Invokers[i]
		}
	}
	return list[algo.IntN(b.sk.Rand(), len(list))]
}

// point returns the ring point of inv's key: the value of t's
// hash.attachment if it names one (a random point if the call lacks it),
// else the key of the arguments.
func (b *Balancer) point(t *table, inv base.Invocation) uint32 {
	if t.cfg.attachment != "" {
		if v, ok := inv.GetAttachment(t.cfg.attachment); ok && v != "" {
			return hashString(v)
		}
		return uint32(b.sk.Rand())
	}
	_, args := callOf(inv)
	return t.key.point(args)
}

// walk is the pick past the common case: skipping unavailable providers,
// keeping to list unless exact (a retry's subset or a new membership),
// bounding load. It returns a slot of v, or -1 if none is in list. slots
// maps the slots of v, a zone's view, to the snapshot's (nil: v is the
// snapshot), where list is looked for first.
func (b *Balancer) walk(v *member.View[table], exact bool, list []base.Invoker, slots []int, kp uint32) int {
	ring := v.Table.ring
	inList := func(i int) bool {
		if exact {
			return true
		}
		at := i
		if slots != nil {
			at = slots[i]
		}
		return holds(list, at, v.Invokers[i])
	}
	usable := func(i int) bool {
		return inList(i) && !v.IsEjected(i) && v.Invokers[i].IsAvailable()
	}
	var idx int
	var ok bool
	if b.factor > 0 {
		var total int64
		for _, s := range v.Stats() {
			total += s.Active()
		}
		idx, ok = ring.lookupBounded(kp, b.factor, total, func(i int) int64 { return v.Stat(i).Active() }, usable)
	} else {
		idx, ok = ring.lookupFunc(kp, usable)
	}
	if !ok {
		// None available: the first candidate, for the cluster to report.
		idx, _ = ring.lookupFunc(kp, inList)
	}
	return idx
}

// holds reports whether list, a snapshot's list with a few providers gone
// or come, holds p, slot i of the snapshot: at i and beside it first.
func holds(list []base.Invoker, i int, p base.Invoker) bool {
	for _, k := range [...]int{i, i - 1, i + 1} {
		if k >= 0 && k < len(list) && list[k] == p {
			return true
		}
	}
	return slices.Contains(list, p)
}
