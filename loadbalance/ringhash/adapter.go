package ringhash

import (
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/builds"
	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/warmup"
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

// URL parameters read from the first provider's URL, method level
// ("methods.<method>.hash.nodes", or Dubbo Java's "<method>.hash.nodes")
// before service level, as Dubbo does; see urlparam.MethodParam.
const (
	// nodesKey is the number of virtual nodes per provider (default 160).
	nodesKey = "hash.nodes"
	// argumentsKey lists the argument indexes that form the key (default "0").
	argumentsKey = "hash.arguments"
	// attachmentKey names an invocation attachment whose value is the key,
	// instead of the arguments (gRPC's request_hash_header, gRFC A76; asked
	// of Dubbo in apache/dubbo#3468). A call without the attachment, or
	// with an empty one, gets a random key, as in A76: it goes to a
	// provider at random rather than all such calls to one. Java consumers
	// do not read it: set it only where every consumer of the key is Go.
	attachmentKey = "hash.attachment"
)

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

	// Warmup configures the shared membership snapshots (their
	// refresh step). The ring itself ignores weights and warmup, as Dubbo's
	// does: a key's provider never depends on them.
	Warmup warmup.Options
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
	hook   // the module's tests and simulator reach sk's builds through it
	sk     *skeleton.Balancer[table]
	factor float64 // 0: bounded load off
	rings  rings
}

// rings keeps the last ring built per (service, virtual nodes), so that
// the methods of a service, whose snapshots are kept and rebuilt apart,
// share one ring when they see the same providers: built by the first
// method that sees a membership, found by the others (off the call path).
type rings struct {
	mu   sync.Mutex
	last map[ringKey]*sharedRing
}

type ringKey struct {
	service string
	nodes   int
}

type sharedRing struct {
	addrs []string // the ring's input, in Set order
	ring  *Ring
}

// get returns the ring of k built from addrs, nil if the last one built
// for k was for other addresses, and those addresses.
func (rs *rings) get(k ringKey, addrs []string) (*Ring, []string) {
	rs.mu.Lock()
	sr := rs.last[k]
	rs.mu.Unlock()
	if sr == nil || !slices.Equal(sr.addrs, addrs) {
		return nil, nil
	}
	return sr.ring, sr.addrs
}

// put records ring, built from addrs, as the last ring of k.
func (rs *rings) put(k ringKey, addrs []string, ring *Ring) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.last == nil {
		rs.last = map[ringKey]*sharedRing{}
	}
	rs.last[k] = &sharedRing{addrs: addrs, ring: ring}
}

// hook lets the module's tests and simulator reach the skeleton's builds
// (package internal/builds) without a method of Balancer.
type hook = builds.Hook

// table is what a snapshot holds for consistent hashing.
type table struct {
	ring     *Ring
	addrs    []string // provider addresses in Set order: the ring's input
	nodesRaw string   // hash.nodes as configured
	// attachment is the attachment whose value is the key (hash.attachment),
	// "" for the arguments.
	attachment string
	where      string // "service method", for logs
	key        *keySpec
}

// keySpec turns invocation arguments into a key point. It lives as long as
// the hash.arguments value it was parsed from, across snapshots.
type keySpec struct {
	raw     string // hash.arguments as configured
	spec    string // raw, or DefaultArguments when blank
	indexes []int
	// single is the only index when there is exactly one, else -1: the
	// common case hashes a string argument in place.
	single int
	// maxIndex is the largest non-negative index, -1 if none.
	maxIndex int
	where    string // "service method", for logs
	// warned is set once a call was seen with fewer arguments than
	// maxIndex+1.
	warned atomic.Bool
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	opts.Env = opts.Env.WithDefaults()
	b := &Balancer{}
	if f := opts.BalanceFactor; f > 0 { // false for NaN
		b.factor = max(f, 1)
	}
	b.sk = skeleton.New(skeleton.Spec[table]{
		Name: Name, Warmup: opts.Warmup, Env: opts.Env,
		Build: b.build, Pick: b.pick, Among: b.among, Interim: b.interim,
		// A key keeps its zone while the zone plan holds: the zone is
		// drawn from the key's point, not at random, and the zone's ring
		// is searched for the same point (one hash per call).
		Key: func(v *member.View[table], inv base.Invocation) uint64 {
			return uint64(b.point(v.Table, inv))
		},
		PickKey: func(v *member.View[table], key uint64, _ base.Invocation) int {
			return b.pickPoint(v, uint32(key))
		},
		// Up to member.SampleAbove providers Select compares the whole
		// list on every call (16 KB at most), so a key reaches the
		// provider Dubbo's ring gives it at once after any change; above,
		// it checks the list as Registry.Pick does (the ends, the slot
		// the ring returned, a window, and the whole list once per
		// dubbo-go router chain generation), not 160 KB per call.
		ReadsAllUpTo: member.SampleAbove,
		Method:       func(inv base.Invocation) string { m, _ := callOf(inv); return m },
		Describe:     describeRing,
	})
	b.hook = builds.NewHook(b.sk)
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
// for the same addresses and nodes (rings), else rebuilding prev's ring for
// the newcomers only; and prev's key spec when hash.arguments is
// unchanged, so that problems are logged once per configuration, not per
// snapshot.
func (b *Balancer) build(set *member.Set, prev *member.View[table]) *table {
	u := set.Invokers[0].GetURL() // Dubbo reads the first provider's URL
	method := set.Method
	nodesRaw := urlparam.MethodParam(u, method, nodesKey)
	argsRaw := urlparam.MethodParam(u, method, argumentsKey)

	var old *table
	if prev != nil {
		old = prev.Table
	}
	t := &table{nodesRaw: nodesRaw, addrs: make([]string, len(set.Invokers))}
	t.attachment = strings.TrimSpace(urlparam.MethodParam(u, method, attachmentKey))
	for i, inv := range set.Invokers {
		t.addrs[i] = javaAddress(inv.GetURL())
	}
	if old != nil {
		t.where = old.where
		if slices.Equal(old.addrs, t.addrs) {
			t.addrs = old.addrs
		}
	} else {
		t.where = u.ServiceKey() + " " + method
	}
	where := t.where

	if old != nil && old.key.raw == argsRaw {
		t.key = old.key
	} else {
		t.key = newKeySpec(argsRaw, where)
	}

	if old != nil && old.nodesRaw == nodesRaw && slices.Equal(old.addrs, t.addrs) {
		t.ring = old.ring
		return t
	}
	nodes, problem := parseNodes(nodesRaw)
	if problem != "" && (old == nil || old.nodesRaw != nodesRaw) {
		lblog.Warnf("%s %s: %s", Name, where, problem)
	}
	shared := ringKey{service: u.ServiceKey(), nodes: nodes}
	if ring, addrs := b.rings.get(shared, t.addrs); ring != nil {
		t.ring, t.addrs = ring, addrs
		warnCapped(t, len(addrs), nodes)
		return t
	}
	members := make([]Member, len(t.addrs))
	for i, a := range t.addrs {
		members[i] = Member{Address: a, Index: i}
	}
	if old != nil && old.nodesRaw == nodesRaw {
		// Hash only the newcomers: a provider that stays keeps its
		// address, and its position on the old ring is its old slot.
		from := make([]int, len(members))
		for i, inv := range set.Invokers {
			if j, ok := prev.Index(inv); ok && old.addrs[j] == t.addrs[i] {
				from[i] = j
			} else {
				from[i] = -1
			}
		}
		t.ring = old.ring.Rebuild(members, from, nodes)
	} else {
		t.ring = Build(members, nodes)
	}
	b.rings.put(shared, t.addrs, t.ring)
	warnCapped(t, len(members), nodes)
	return t
}

// warnCapped logs when t's ring of n providers has fewer virtual nodes
// than the nodes asked for.
func warnCapped(t *table, n, nodes int) {
	if t.ring.Nodes() != normalizeNodes(nodes) {
		lblog.Warnf("%s %s: %d providers × %d virtual nodes exceed %d ring points; using %d nodes, which Java consumers do not match",
			Name, t.where, n, normalizeNodes(nodes), maxPoints, t.ring.Nodes())
	}
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

// parseNodes parses hash.nodes; a problem explains a replaced value.
func parseNodes(raw string) (nodes int, problem string) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return DefaultNodes, ""
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil && !isRange(err):
		return DefaultNodes, nodesKey + " " + strconv.Quote(raw) + " is not an integer; using " + strconv.Itoa(DefaultNodes)
	case n <= 0:
		return DefaultNodes, nodesKey + " " + strconv.Quote(raw) + " is not positive; using " + strconv.Itoa(DefaultNodes)
	case n < minNodes:
		return minNodes, nodesKey + " " + strconv.Quote(raw) + " is below " + strconv.Itoa(minNodes) + " (Dubbo would build an empty ring); using " + strconv.Itoa(minNodes)
	case n > maxNodes || err != nil:
		return maxNodes, nodesKey + " " + strconv.Quote(raw) + " is above " + strconv.Itoa(maxNodes) + "; using " + strconv.Itoa(maxNodes)
	}
	return int(n), ""
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// newKeySpec parses hash.arguments with [parseArguments] and logs what it
// had to skip or what makes every key empty.
func newKeySpec(raw, where string) *keySpec {
	spec := raw
	if strings.TrimSpace(spec) == "" {
		spec = DefaultArguments
	}
	k := &keySpec{raw: raw, spec: spec, indexes: parseArguments(spec), single: -1, maxIndex: -1, where: where}
	for _, i := range k.indexes {
		k.maxIndex = max(k.maxIndex, i)
	}
	if len(k.indexes) == 1 && k.indexes[0] >= 0 {
		k.single = k.indexes[0]
	}
	if p := argumentsProblem(spec, k); p != "" {
		lblog.Warnf("%s %s: %s %q: %s", Name, where, argumentsKey, raw, p)
	}
	return k
}

// argumentsProblem describes what is wrong with spec, or returns "".
func argumentsProblem(spec string, k *keySpec) string {
	var bad, negative []string
	entries := 0
	for field := range strings.SplitSeq(spec, ",") {
		f := strings.TrimSpace(field)
		if f == "" {
			continue
		}
		entries++
		n, err := strconv.ParseInt(f, 10, 32)
		switch {
		case err != nil:
			bad = append(bad, strconv.Quote(f))
		case n < 0:
			negative = append(negative, f)
		}
	}
	var msg []string
	if entries == 0 {
		msg = append(msg, "lists no argument index")
	}
	if len(bad) > 0 {
		msg = append(msg, "skipped "+strings.Join(bad, ", ")+" (not an argument index)")
	}
	if len(negative) > 0 {
		msg = append(msg, "negative index "+strings.Join(negative, ", ")+" selects no argument")
	}
	if len(msg) == 0 {
		return ""
	}
	if k.maxIndex < 0 {
		msg = append(msg, "every key is empty, so all calls go to one provider")
	} else {
		msg = append(msg, "the key is made of arguments "+formatIndexes(k.indexes))
	}
	return strings.Join(msg, "; ")
}

func formatIndexes(idx []int) string {
	var b []byte
	for _, i := range idx {
		if i < 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return string(b)
}

// keyStack is the size of the stack buffer keys are built in; longer keys
// use a pooled buffer.
const keyStack = 128

// maxPooledKey caps the buffers kept in keyPool.
const maxPooledKey = 64 << 10

// emptyKeyPoint is the point of the empty key.
var emptyKeyPoint = hashString("")

var keyPool = sync.Pool{New: func() any { b := make([]byte, 0, 4*keyStack); return &b }}

// point returns the ring point of the key made of args: Dubbo's toKey,
// the concatenation of the Java string forms of the selected arguments
// that exist, hashed.
func (k *keySpec) point(args []any) uint32 {
	if len(args) <= k.maxIndex {
		k.warnMissing(len(args))
	}
	if k.single >= 0 {
		if k.single >= len(args) {
			return emptyKeyPoint
		}
		if s, ok := args[k.single].(string); ok {
			return hashString(s) // the common case: no copy at all
		}
	}
	var stack [keyStack]byte
	if key, ok := k.appendStack(stack[:0], args); ok {
		return hashKey(key)
	}
	pb := keyPool.Get().(*[]byte)
	long := k.appendAny((*pb)[:0], args)
	p := hashKey(long)
	if cap(long) <= maxPooledKey {
		*pb = long[:0]
		keyPool.Put(pb)
	}
	return p
}

// appendStack appends the key of args to dst if it is made of basic values
// (see appendBasic) that fit in dst's capacity; otherwise it returns false,
// never growing dst, so that a stack buffer stays on the stack.
func (k *keySpec) appendStack(dst []byte, args []any) ([]byte, bool) {
	for _, i := range k.indexes {
		if i < 0 || i >= len(args) {
			continue
		}
		need := 32 // enough for any null, bool, integer or float
		if s, ok := args[i].(string); ok {
			need = len(s)
		}
		if cap(dst)-len(dst) < need {
			return dst, false
		}
		var ok bool
		if dst, ok = appendBasic(dst, args[i]); !ok {
			return dst, false
		}
	}
	return dst, true
}

// appendAny appends the key of args to dst, whatever their types.
func (k *keySpec) appendAny(dst []byte, args []any) []byte {
	for _, i := range k.indexes {
		if i >= 0 && i < len(args) {
			dst = AppendJava(dst, args[i])
		}
	}
	return dst
}

// warnMissing logs, once per key spec, a call with fewer arguments than
// hash.arguments selects.
func (k *keySpec) warnMissing(n int) {
	if k.warned.Load() || !k.warned.CompareAndSwap(false, true) {
		return
	}
	lblog.Warnf("%s %s: a call has %d argument(s) but %s %q selects index %d; missing arguments contribute nothing to the key (logged once)",
		Name, k.where, n, argumentsKey, k.spec, k.maxIndex)
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
	return b.walk(v, true, v.Invokers, kp)
}

// among returns the provider of list, a failover retry's subset of v, first
// clockwise from the invocation's key.
func (b *Balancer) among(v *member.View[table], list []base.Invoker, inv base.Invocation) base.Invoker {
	i := b.walk(v, false, list, b.point(v.Table, inv))
	if i < 0 {
		return list[0] // unreachable: the ring holds every provider of the Set
	}
	return v.Invokers[i]
}

// interim routes a key while the ring of list, a new membership, is being
// built: to the provider old's ring gives it among those still in list
// (the pick of a retry's subset), so that the keys of providers that stay
// do not move; a newcomer gets no key until its ring is published. With
// no old ring, or none of its providers left, a provider of list at
// random. It scans list per candidate: O(N), about 10 µs at N = 10 000.
func (b *Balancer) interim(old *member.View[table], list []base.Invoker, inv base.Invocation) base.Invoker {
	if old != nil {
		if i := b.walk(old, false, list, b.point(old.Table, inv)); i >= 0 {
			return old.Invokers[i]
		}
	}
	return list[algo.IntN(b.sk.Rand(), len(list))]
}

// point returns the ring point of inv's key: its hash.attachment's value
// when t names one (a random point when the call lacks it), else the key
// of its arguments.
func (b *Balancer) point(t *table, inv base.Invocation) uint32 {
	if t.attachment != "" {
		if v, ok := inv.GetAttachment(t.attachment); ok && v != "" {
			return hashString(v)
		}
		return uint32(b.sk.Rand())
	}
	_, args := callOf(inv)
	return t.key.point(args)
}

// callOf returns the method and arguments of inv as Dubbo's RpcUtils sees
// them: for a generic call ("$invoke" or "$invokeAsync" with arguments
// [method, types, args]) those of the real method, so that generic and
// ordinary calls of a method route alike, in Go and in Java.
func callOf(inv base.Invocation) (string, []any) {
	method, args := inv.MethodName(), inv.Arguments()
	if (method == genericInvoke || method == genericInvokeAsync) && len(args) >= 3 {
		if m, ok := args[0].(string); ok {
			if real, ok := anySlice(args[2]); ok {
				return m, real
			}
		}
	}
	return method, args
}

// Method names of dubbo-go's and Dubbo's generic calls.
const (
	genericInvoke      = "$invoke"
	genericInvokeAsync = "$invokeAsync"
)

// anySlice returns v as a []any if it is a slice of an empty interface type,
// such as []hessian.Object, which generic calls carry, without copying it.
func anySlice(v any) ([]any, bool) {
	if s, ok := v.([]any); ok {
		return s, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return nil, false
	}
	if e := rv.Type().Elem(); e.Kind() != reflect.Interface || e.NumMethod() != 0 {
		return nil, false
	}
	// A slice of any empty interface type has the layout of []any.
	return unsafe.Slice((*any)(rv.UnsafePointer()), rv.Len()), true
}

// walk is the pick past the common case: skipping unavailable providers,
// keeping to a retry subset (exact false), bounding load. It returns a slot
// of v, 0 if the ring were ever short of one.
func (b *Balancer) walk(v *member.View[table], exact bool, list []base.Invoker, kp uint32) int {
	ring := v.Table.ring
	inList := func(i int) bool { return exact || holds(list, i, v.Invokers[i]) }
	usable := func(i int) bool {
		return inList(i) && !v.IsEjected(i) && v.Invokers[i].IsAvailable()
	}
	var idx int
	var ok bool
	if b.factor > 0 {
		var total int64
		for _, s := range v.Stats {
			total += s.Active()
		}
		idx, ok = ring.lookupBounded(kp, b.factor, total, func(i int) int64 { return v.Stats[i].Active() }, usable)
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
