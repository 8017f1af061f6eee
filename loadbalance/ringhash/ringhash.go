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

// Name is the name the consistent-hash balancer is registered under with
// dubbo-go. It differs from dubbo-go's own "consistenthashing".
const Name = "ringhash"

// JavaName is Dubbo Java's name of its consistent hash,
// ConsistentHashLoadBalance's "consistenthash", under which package
// extension registers Java: a provider that names it gets Dubbo's ring.
const JavaName = "consistenthash"

// Java returns the balancer registered under JavaName: Dubbo's
// configuration of the ring (160 nodes, hash.arguments "0", no bounded
// load), a Balancer of its own so that what it decides is described under
// its own name. It is the zero Options today, spelled out so that a change
// of ringhash's defaults never changes what Java's name means.
func Java() *Balancer { return New(Options{BalanceFactor: 0}) }

// Options configure a Balancer. The zero value is Dubbo's consistent hash.
type Options struct {
	// BalanceFactor turns on bounded load (Envoy's hash_balance_factor):
	// a key goes to the first provider clockwise from its point whose calls
	// in flight for the method stay within BalanceFactor × the average, so
	// no provider carries more than that share of the in-flight calls.
	// 0 (the default), a negative value or NaN turns it off; values between
	// 0 and 1 act as 1; 1.25 is a common choice. While every provider is
	// under the bound the choice is Dubbo's.
	//
	// In-flight counts come from package rpcstatus, which the lbactive
	// filter feeds: enable it (filter: lbactive) or every count stays 0 and
	// the bound never applies. With the option on, each Select also sums
	// the in-flight counts of all providers, an O(N) pass of atomic loads.
	BalanceFactor float64
	// Env is the balancer's clocks and random source; the zero value is
	// the real ones (see lbenv.Env).
	Env lbenv.Env
}

// Balancer is a consistent-hash balancer whose ring is compatible with
// Apache Dubbo's ConsistentHashLoadBalance: Java and Go consumers send a key
// to the same provider. It is safe for concurrent use; one Balancer serves
// every service and method.
//
// Per (service, method) it keeps a ring built from the provider addresses,
// rebuilt only when the addresses or hash.nodes change, and the parsed
// hash.arguments. Select hashes the key and searches the ring without
// allocating (see [AppendJava] for the key of each argument type). It
// differs from Dubbo where Dubbo fails or misroutes:
//
//   - an unavailable provider, or one that outlier detection ejected, is
//     skipped clockwise, so its keys spread over the others and come back
//     when it does; if every provider is unavailable the key's own provider
//     is returned and the cluster then reports the failure;
//   - on a failover retry (a strict subset of the providers) the first
//     provider of the subset clockwise from the key is chosen, so a key
//     keeps to as few providers as possible;
//   - a bad hash.nodes or hash.arguments is logged once and replaced by a
//     safe value (see [parseArguments] and [normalizeNodes]) instead of
//     failing every call (Dubbo throws, dubbo-go panics); indexes beyond the
//     arguments of a call contribute nothing to the key, as in Dubbo, and
//     are logged once per hash.arguments value. A key with no argument at
//     all is "", which always goes to the same provider.
//
// A generic call ($invoke with the real method, its types and its
// arguments) is hashed as a call of the real method, as Dubbo does; its
// bounded load then reads the in-flight counts of the real method, which
// the lbactive filter does not feed for generic calls (it records them
// under "$invoke"), so generic calls are not bounded.
type Balancer struct {
	skeleton.Front[table] // Select, Describe, Rebuilds

	sk     *skeleton.Balancer[table]
	factor float64 // 0: bounded load off
}

// ringMemo is the member.Memo key of a ring: the methods of a service
// that see the same providers share one ring per number of virtual nodes.
type ringMemo struct{ nodes int }

// table is what a snapshot holds for consistent hashing.
type table struct {
	ring  *hashRing
	addrs []string // provider addresses in Set order: the ring's input
	cfg   config
	where string // "service S, method M", for logs
	key   *keySpec
	// problems are those of the configuration, reported once.
	problems []string
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
		// A key keeps its zone while the zone plan holds: the zone is
		// drawn from the key's point, not at random, and the zone's ring
		// is searched for the same point (one hash per call).
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
		// Up to member.SampleAbove providers Select compares the whole
		// list on every call (16 KB at most), so a key reaches the
		// provider Dubbo's ring gives it at once after any change; above,
		// it checks the list as Registry.Pick does (the ends, the slot
		// the ring returned, a window, and the whole list once per
		// dubbo-go router chain generation), not 160 KB per call.
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

// build makes the table of set, reusing prev's ring when the addresses and
// hash.nodes are unchanged (a warmup refresh or a provider re-registered at
// the same address), else the ring another method of the service built
// for the same providers and nodes (member.Memo), else rebuilding prev's ring for
// the newcomers only; and prev's key spec when hash.arguments is
// unchanged. The parameters' problems are reported when they differ from
// prev's (skeleton.Report): once per configuration, not per snapshot.
func (b *Balancer) build(set *member.Set, prev *member.View[table]) *table {
	var old *table
	if prev != nil {
		old = prev.Table
	}
	var dissent []string
	cfg, problems := parseConfig(skeleton.Params(set, &dissent))
	problems = append(problems, dissent...)
	if p := cappedProblem(&cfg, len(set.Invokers)); p != "" {
		problems = append(problems, p)
	}
	var before []string
	if old != nil {
		before = old.problems
	}
	skeleton.Report(Name, set, problems, before)
	u := set.Invokers[0].GetURL()
	t := &table{cfg: cfg, problems: problems, addrs: make([]string, len(set.Invokers))}
	// from[i] is provider i's slot in prev, -1 for a newcomer, whose
	// address alone is read from its URL.
	from := make([]int, len(set.Invokers))
	for i := range from {
		from[i] = -1
	}
	member.Carry(set, prev, func(i, j int) { from[i], t.addrs[i] = j, old.addrs[j] })
	for i, inv := range set.Invokers {
		if from[i] < 0 {
			t.addrs[i] = javaAddress(inv.GetURL())
		}
	}
	if old != nil {
		t.where = old.where
		if slices.Equal(old.addrs, t.addrs) {
			t.addrs = old.addrs
		}
	} else {
		t.where = "service " + u.ServiceKey() + ", method " + set.Method
	}

	if old != nil && old.cfg.argsRaw == cfg.argsRaw {
		t.key = old.key
	} else {
		t.key = newKeySpec(&cfg, t.where)
	}

	if old != nil && old.cfg.nodesRaw == cfg.nodesRaw && slices.Equal(old.addrs, t.addrs) {
		t.ring = old.ring
		return t
	}
	var ring *hashRing
	if old != nil {
		ring = old.ring
	}
	t.ring = member.Memo(set, ringMemo{cfg.nodes}, func() *hashRing { return ring.Rebuild(t.addrs, from, cfg.nodes) })
	return t
}

// javaAddress is the address Dubbo Java hashes for the provider URL u:
// URL.getAddress(), host + ":" + port, with the host as the URL holds it.
// For IPv6 that depends on how the URL was made, in Java as in dubbo-go:
//
//   - parsed from text ("dubbo://[fd00::1]:20880/...": a direct URL, a
//     registry that stores URL strings), Java's host keeps the brackets and
//     the address is "[fd00::1]:20880". dubbo-go strips them from u.Ip but
//     keeps them in u.Location, so the bracketed Location is used.
//   - built from a registry instance's ip and port (Dubbo Java's
//     NacosRegistry.buildURL, application-level discovery), Java's address
//     is "fd00::1:20880", unbracketed; dubbo-go builds these URLs the same
//     way (Location = Ip + ":" + Port), so u.Address() is used.
//
// IPv4 addresses and host names are u.Address(), unchanged. Both IPv6 forms
// are pinned by vectors from the real Dubbo jar (testdata/vectors.txt).
func javaAddress(u *common.URL) string {
	if strings.IndexByte(u.Ip, ':') < 0 || !strings.HasPrefix(u.Location, "[") {
		return u.Address()
	}
	if host, port, err := net.SplitHostPort(u.Location); err == nil && host == u.Ip && port == u.Port {
		return u.Location
	}
	return u.Address()
}

// pick returns the slot of v that owns the invocation's key on the ring
// (see [Balancer] for unavailable providers and bounded load).
func (b *Balancer) pick(v *member.View[table], inv base.Invocation) int {
	return b.pickPoint(v, b.point(v.Table, inv))
}

// pickPoint returns the slot of v that a key at ring point kp goes to.
func (b *Balancer) pickPoint(v *member.View[table], kp uint32) int {
	t := v.Table
	if b.factor == 0 {
		// The common case: the key's own provider, when it is available.
		if i := t.ring.Lookup(kp); i >= 0 && !v.IsEjected(i) && v.Invokers[i].IsAvailable() {
			return i
		}
	}
	return b.walk(v, true, v.Invokers, nil, kp)
}

// among returns the provider of list, a failover retry's subset of v, first
// clockwise from the invocation's key.
func (b *Balancer) among(v *member.View[table], list []base.Invoker, inv base.Invocation) base.Invoker {
	i := b.walk(v, false, list, nil, b.point(v.Table, inv))
	if i < 0 {
		return list[0] // unreachable: the ring holds every provider of the Set
	}
	return v.Invokers[i]
}

// interim routes a key while the ring of list, a new membership, is being
// built: to the provider old's ring gives it among those still in list
// (the pick of a retry's subset), so that the keys of providers that stay
// do not move; a newcomer gets no key until its ring is published. Where
// old routes by zone, the ring is that of the zone old's plan gives the
// key, as a pick does, so that keys stay in their zone and on their
// provider. With no old ring, or none of its providers left, a provider of
// list at random. It scans list per candidate: O(N), about 10 µs at
// N = 10 000.
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

// point returns the ring point of inv's key: its hash.attachment's value
// when t names one (a random point when the call lacks it), else the key
// of its arguments.
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
// keeping to a retry subset (exact false), bounding load. It returns a slot
// of v, 0 if the ring were ever short of one. slots, when v is a zone's
// view, maps its slots to those of the snapshot, where list is looked for
// first (nil: v is the snapshot).
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
		// Nothing available: the first candidate regardless, so the
		// cluster reports the failure of a provider the key belongs to.
		idx, ok = ring.lookupFunc(kp, inList)
	}
	if !ok || idx < 0 || idx >= v.Len() {
		if exact {
			return 0 // unreachable: the ring holds every provider of the Set
		}
		return -1
	}
	return idx
}

// holds reports whether list holds p, slot i of a snapshot: list is the
// snapshot's list with a provider or a few left or come (a retry's subset,
// a new membership), so p is looked for at i and beside it before the
// whole list is scanned.
func holds(list []base.Invoker, i int, p base.Invoker) bool {
	for _, k := range [...]int{i, i - 1, i + 1} {
		if k >= 0 && k < len(list) && list[k] == p {
			return true
		}
	}
	return slices.Contains(list, p)
}
