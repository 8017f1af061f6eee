package ringhash

import (
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/consistenthashing" // dubbo-go's, for contrast
	"dubbo.apache.org/dubbo-go/v3/common"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

var _ loadbalance.LoadBalance = (*Balancer)(nil)

// providerAt is lbtest.Provider for any "ip:port": a provider URL merged
// with a consumer URL, as dubbo-go's registry directory builds it.
func providerAt(addr string, params map[string]string) *base.BaseInvoker {
	q := url.Values{}
	q.Set("interface", lbtest.Service)
	q.Set("release", "dubbo-golang-3.3.2")
	for k, v := range params {
		q.Set(k, v)
	}
	p, err := common.NewURL("tri://" + addr + "/" + lbtest.Service + "?" + q.Encode())
	if err != nil {
		panic(err)
	}
	c, err := common.NewURL("consumer://127.0.0.1/" + lbtest.Service + "?interface=" + lbtest.Service)
	if err != nil {
		panic(err)
	}
	return base.NewBaseInvoker(p.MergeURL(c))
}

// providerFromInstance is a provider as a registry directory builds it from a
// registry instance's ip and port (dubbo-go's Nacos listener and our
// nacosdiscovery use common.NewURLWithOptions with WithIp and WithPort),
// merged with a consumer URL.
func providerFromInstance(addr string, params map[string]string) *base.BaseInvoker {
	colon := strings.LastIndexByte(addr, ':')
	opts := []common.Option{
		common.WithProtocol("tri"), common.WithIp(addr[:colon]), common.WithPort(addr[colon+1:]),
		common.WithPath(lbtest.Service), common.WithParamsValue("interface", lbtest.Service),
		common.WithParamsValue("release", "dubbo-golang-3.3.2"),
	}
	for k, v := range params {
		opts = append(opts, common.WithParamsValue(k, v))
	}
	p := common.NewURLWithOptions(opts...)
	c, err := common.NewURL("consumer://127.0.0.1/" + lbtest.Service + "?interface=" + lbtest.Service)
	if err != nil {
		panic(err)
	}
	return base.NewBaseInvoker(p.MergeURL(c))
}

// ports returns providers 127.0.0.1:first, first+1, ... with params.
func ports(first, n int, params map[string]string) []base.Invoker {
	out := make([]base.Invoker, n)
	for i := range out {
		out[i] = providerAt("127.0.0.1:"+strconv.Itoa(first+i), params)
	}
	return out
}

// ringOf is the ring Dubbo builds for list with nodes virtual nodes.
func ringOf(list []base.Invoker, nodes int) *hashRing {
	m := make([]string, len(list))
	for i, inv := range list {
		m[i] = inv.GetURL().Location
	}
	return buildRing(m, nodes)
}

func indexOf(list []base.Invoker, inv base.Invoker) int {
	for i, x := range list {
		if x == inv {
			return i
		}
	}
	return -1
}

func key(i int) string { return "user-" + strconv.Itoa(i) }

// captureWarnings collects what the balancer logs until the test ends.
func captureWarnings(t *testing.T) func() []string { return lbtest.CaptureLogs(t) }

// javaArg turns a vectors.txt argument "Type=value" into the Go value a Go
// consumer would pass for that Java value.
func javaArg(t *testing.T, field string) any {
	typ, val, _ := strings.Cut(field, "=")
	num := func(bits int) int64 {
		n, err := strconv.ParseInt(val, 10, bits)
		require.NoError(t, err, field)
		return n
	}
	switch typ {
	case "String", "Character": // Go has no char type: a one-letter string
		return val
	case "null":
		return nil
	case "Integer":
		return int32(num(32))
	case "Long":
		return num(64)
	case "Short":
		return int16(num(16))
	case "Byte":
		return int8(num(8))
	case "Boolean":
		return val == "true"
	case "Double":
		f, err := strconv.ParseFloat(val, 64)
		require.NoError(t, err, field)
		return f
	case "Float":
		f, err := strconv.ParseFloat(val, 32)
		require.NoError(t, err, field)
		return float32(f)
	}
	t.Fatalf("unknown Java type in %q", field)
	return nil
}

// The vectors recorded from Dubbo 3.2.15's ConsistentHashLoadBalance, replayed
// through Select with real invocations and provider URLs carrying
// hash.nodes / hash.arguments: a Go consumer routes each call to the
// provider a Java consumer routes it to.
func TestSelectAgreesWithDubboJava(t *testing.T) {
	rows, v6 := 0, map[bool]int{}
	for _, c := range loadVectors(t) {
		t.Run(c.name, func(t *testing.T) {
			params := map[string]string{"hash.arguments": c.arguments}
			if c.nodes != 0 {
				params["hash.nodes"] = strconv.Itoa(c.nodes)
			}
			list := make([]base.Invoker, len(c.providers))
			for i, a := range c.providers {
				if c.instance {
					list[i] = providerFromInstance(a, params)
				} else {
					list[i] = providerAt(a, params)
				}
			}
			b := New(Options{})
			for _, row := range c.rows {
				fields := strings.Split(row.raw, "\t")
				args := make([]any, 0, len(fields)-1)
				for _, f := range fields[1:] {
					v := javaArg(t, f)
					// Our Java string form of the Go value is Java's.
					_, javaForm, _ := strings.Cut(f, "=")
					require.Equal(t, javaForm, string(AppendJava(nil, v)), f)
					args = append(args, v)
				}
				want := slices.Index(c.providers, row.want)
				require.GreaterOrEqual(t, want, 0, "%q: Dubbo chose a provider not in the list", row.raw)
				got := b.Select(list, lbtest.Call("sayHello", args...))
				assert.Equal(t, list[want], got, "%q: got %s", row.raw, got.GetURL().Location)
				rows++
				if strings.Count(row.want, ":") > 1 {
					v6[c.instance]++
				}
			}
		})
	}
	assert.GreaterOrEqual(t, rows, 360)
	assert.GreaterOrEqual(t, v6[false], 40, "IPv6 vectors from URL text")
	assert.GreaterOrEqual(t, v6[true], 40, "IPv6 vectors from registry instances")
}

// Dubbo Java hashes an IPv6 provider as its URL holds the host: bracketed
// when parsed from text, bare when built from a registry instance.
func TestJavaAddressOfIPv6Providers(t *testing.T) {
	for _, c := range []struct {
		inv  *base.BaseInvoker
		want string
	}{
		{providerAt("[fd00::1]:20880", nil), "[fd00::1]:20880"},
		{providerAt("[2001:db8::10]:20001", nil), "[2001:db8::10]:20001"},
		{providerFromInstance("fd00::1:20880", nil), "fd00::1:20880"},
		{providerAt("10.0.0.1:20880", nil), "10.0.0.1:20880"},
		{providerFromInstance("10.0.0.1:20880", nil), "10.0.0.1:20880"},
		{providerAt("provider.example:20880", nil), "provider.example:20880"},
	} {
		assert.Equal(t, c.want, javaAddress(c.inv.GetURL()))
	}
	// A Location that disagrees with Ip and Port is not trusted.
	u := providerAt("[fd00::1]:20880", nil).GetURL()
	u.Port = "20881"
	assert.Equal(t, "fd00::1:20881", javaAddress(u))
}

// The methods of a service share the ring of a membership: built once,
// by the first method that sees it, unless a method asks for other
// virtual nodes; a change seen by one method is found by the next.
func TestMethodsShareTheRing(t *testing.T) {
	list := ports(20880, 10, map[string]string{"methods.few.hash.nodes": "40"})
	b := New(Options{})
	ringOfMethod := func(l []base.Invoker, m string) *hashRing {
		v, _ := b.sk.View(l, m)
		return v.Table.ring
	}
	first := ringOfMethod(list, "a")
	assert.Same(t, first, ringOfMethod(list, "b"))
	few := ringOfMethod(list, "few")
	assert.NotSame(t, first, few)
	assert.Equal(t, 40, few.nodes)

	changed := slices.Clone(list)
	changed[3] = providerAt("127.0.0.1:30000", nil)
	next := ringOfMethod(changed, "b")
	assert.NotSame(t, first, next)
	assert.Same(t, next, ringOfMethod(changed, "a"))
	want := ringOf(changed, defaultNodes)
	for i := range 100 {
		assert.Equal(t, changed[want.Lookup(hashString(key(i)))], b.Select(changed, lbtest.Call("a", key(i))))
	}
}

// A membership change in another order reads the address of the newcomer
// alone and keeps every other provider's: each slot holds its own
// provider's address, and the keys go where a ring built from nothing
// sends them.
func TestShuffledChangeKeepsEachProvidersAddress(t *testing.T) {
	list := ports(20880, 10, nil)
	b := New(Options{})
	b.Select(list, lbtest.Call("a", key(0)))
	changed := append(slices.Clone(list[1:]), providerAt("127.0.0.1:30000", nil))
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(changed), func(i, j int) { changed[i], changed[j] = changed[j], changed[i] })
	v, _ := b.sk.View(changed, "a")
	for i, p := range v.Invokers {
		assert.Equal(t, javaAddress(p.GetURL()), v.Table.addrs[i])
	}
	want := ringOf(changed, defaultNodes)
	for i := range 100 {
		assert.Equal(t, changed[want.Lookup(hashString(key(i)))], b.Select(changed, lbtest.Call("a", key(i))))
	}
}

// Method-level hash parameters win over the service-level ones, in
// dubbo-go's spelling (methods.<method>.hash.*) and in Java's
// (<method>.hash.*, read when the URL's methods list names the method).
func TestMethodLevelParametersWin(t *testing.T) {
	spellings := map[string]map[string]string{
		"dubbo-go": {
			"hash.arguments":                "0",
			"methods.byUser.hash.arguments": "1",
			"methods.byUser.hash.nodes":     "40",
		},
		"java": {
			"methods":               "byUser,other",
			"hash.arguments":        "0",
			"byUser.hash.arguments": "1",
			"byUser.hash.nodes":     "40",
		},
	}
	for name, params := range spellings {
		t.Run(name, func(t *testing.T) {
			list := ports(20880, 10, params)
			b := New(Options{})
			v, _ := b.sk.View(list, "byUser")
			assert.Equal(t, 40, v.Table.ring.nodes)
			v, _ = b.sk.View(list, "other")
			assert.Equal(t, defaultNodes, v.Table.ring.nodes)

			r40, r160 := ringOf(list, 40), ringOf(list, 160)
			for i := range 200 {
				got := b.Select(list, lbtest.Call("byUser", "tenant", key(i)))
				assert.Equal(t, list[r40.Lookup(hashString(key(i)))], got)
				got = b.Select(list, lbtest.Call("other", key(i), "ignored"))
				assert.Equal(t, list[r160.Lookup(hashString(key(i)))], got)
			}
		})
	}
}

// dubbo-go rebuilds its ring only when the number of providers changes (it
// fingerprints the list by JSON, and invokers marshal to "{}"): after C is
// replaced by D, C's keys still go to C. Ours never picks C.
func TestReplacedProviderGetsNoKeys(t *testing.T) {
	all := ports(20880, 4, nil)
	a, bb, c, d := all[0], all[1], all[2], all[3]
	abc, abd := []base.Invoker{a, bb, c}, []base.Invoker{a, bb, d}
	const keys = 3000

	lb := New(Options{})
	before := make([]base.Invoker, keys)
	for i := range keys {
		before[i] = lb.Select(abc, lbtest.Call("Say", key(i)))
	}
	for i := range keys {
		got := lb.Select(abd, lbtest.Call("Say", key(i)))
		require.NotSame(t, c, got, "key %d went to the removed provider", i)
		if before[i] != c && got != before[i] {
			assert.Same(t, d, got, "key %d left a remaining provider for another old one", i)
		}
	}

	// The same sequence through dubbo-go's balancer.
	dg := dgext.GetLoadbalance("consistenthashing")
	toC := 0
	for i := range keys {
		dg.Select(abc, lbtest.Call("SayDG", key(i)))
	}
	for i := range keys {
		if dg.Select(abd, lbtest.Call("SayDG", key(i))) == c {
			toC++
		}
	}
	t.Logf("dubbo-go sent %.1f%% of keys to the replaced provider", 100*float64(toC)/keys)
	assert.Greater(t, toC, keys/5, "dubbo-go's stale ring (the bug this test documents)")
}

func TestAddingAProviderMovesAQuarter(t *testing.T) {
	four := ports(20880, 4, nil)
	three := four[:3]
	const keys = 10000
	lb := New(Options{})
	before := make([]base.Invoker, keys)
	for i := range keys {
		before[i] = lb.Select(three, lbtest.Call("Say", key(i)))
	}
	moved := 0
	for i := range keys {
		got := lb.Select(four, lbtest.Call("Say", key(i)))
		if got != before[i] {
			moved++
			require.Same(t, four[3], got, "a key moved between old providers")
		}
		// The same key maps to the same provider every time.
		require.Same(t, got, lb.Select(four, lbtest.Call("Say", key(i))))
	}
	frac := float64(moved) / keys
	t.Logf("adding a 4th provider moved %.1f%% of keys", 100*frac)
	assert.InDelta(t, 0.25, frac, 0.05)

	// Removing it again restores every key.
	for i := range keys {
		require.Same(t, before[i], lb.Select(three, lbtest.Call("Say", key(i))))
	}
}

func TestLoadSpreadOverTenProviders(t *testing.T) {
	list := ports(20880, 10, nil)
	const keys = 100000
	c := make([]float64, len(list))
	lb := New(Options{})
	for i := range keys {
		c[indexOf(list, lb.Select(list, lbtest.Call("Say", key(i))))]++
	}
	mean := float64(keys) / float64(len(list))
	var ss float64
	for _, x := range c {
		ss += (x - mean) * (x - mean)
	}
	cv := math.Sqrt(ss/float64(len(list))) / mean
	t.Logf("160 nodes x 10 providers: CV %.1f%%, counts %v", 100*cv, c)
	assert.LessOrEqual(t, cv, 0.12)
}

// dubbo-go panics on every call when hash.arguments is not a list of
// integers; ours logs once and uses a documented fallback.
func TestBadHashArguments(t *testing.T) {
	r := ringOf(ports(20880, 3, nil), defaultNodes)
	owner := func(k string) int { return r.Lookup(hashString(k)) }
	for _, c := range []struct {
		name, spec string
		args       func(i int) []any
		key        func(i int) string // the key the documented fallback uses
		warn       string             // substring of the single warning
	}{
		{"negative", "-1", func(i int) []any { return []any{key(i)} }, func(int) string { return "" }, "negative index -1"},
		{"beyond the call", "5", func(i int) []any { return []any{key(i)} }, func(int) string { return "" }, "a call has 1 argument(s)"},
		{"garbage", "a,b", func(i int) []any { return []any{key(i), "x"} }, key, `skipped "a", "b"`},
		{"garbage mixed", "x, 1", func(i int) []any { return []any{"x", key(i)} }, key, `skipped "x"`},
		{"missing second", "0,1", func(i int) []any { return []any{key(i)} }, key, "a call has 1 argument(s)"},
		{"no arguments", "0", func(int) []any { return nil }, func(int) string { return "" }, "a call has 0 argument(s)"},
		{"no index", " , ", func(i int) []any { return []any{key(i)} }, key, "lists no argument index; the key is made of arguments 0"},
		{"valid", "1,0", func(i int) []any { return []any{"b", "a" + key(i)} }, func(i int) string { return "a" + key(i) + "b" }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			warnings := captureWarnings(t)
			list := ports(20880, 3, map[string]string{"hash.arguments": c.spec})
			lb := New(Options{})
			for i := range 300 {
				got := lb.Select(list, lbtest.Call("Say", c.args(i)...))
				require.Same(t, list[owner(c.key(i))], got, "call %d", i)
			}
			// A membership change with the same configuration logs nothing new.
			more := append(append([]base.Invoker(nil), list...), providerAt("127.0.0.1:20899", map[string]string{"hash.arguments": c.spec}))
			lb.Select(more, lbtest.Call("Say", c.args(0)...))
			w := warnings()
			if c.warn == "" {
				assert.Empty(t, w)
				return
			}
			require.Len(t, w, 1, "%q", w)
			assert.Contains(t, w[0], c.warn)
			assert.Contains(t, w[0], lbtest.Service)
		})
	}

	// dubbo-go on the same garbage (it reads only the method-level value).
	list := ports(20880, 3, map[string]string{"methods.SayBadDG.hash.arguments": "a,b"})
	dg := dgext.GetLoadbalance("consistenthashing")
	assert.Panics(t, func() { dg.Select(list, lbtest.Call("SayBadDG", "k")) })
}

// TestWarningsShareTheFormat: what ringhash logs of a (service, method),
// a bad parameter or a call short of arguments, starts as every balancer's
// report does (skeleton.Report).
func TestWarningsShareTheFormat(t *testing.T) {
	warnings := captureWarnings(t)
	list := ports(20880, 3, map[string]string{"hash.nodes": "abc", "hash.arguments": "x,0,5"})
	New(Options{}).Select(list, lbtest.Call("Say", "k"))
	w := warnings()
	require.Len(t, w, 3, "%q", w)
	prefix := Name + ", service " + list[0].GetURL().ServiceKey() + ", method Say: "
	for _, line := range w {
		assert.Contains(t, line, prefix)
	}
}

func TestBadHashNodes(t *testing.T) {
	for _, c := range []struct {
		spec  string
		nodes int
		warn  bool
	}{
		{"", 160, false},
		{"161", 160, false}, // Dubbo's nodes/4 digests, no problem
		{"40", 40, false},
		{"abc", 160, true},
		{"-5", 160, true},
		{"0", 160, true},
		{"2", 4, true},
		{"100000", maxNodes, true},
		{"99999999999999999999", maxNodes, true},
	} {
		warnings := captureWarnings(t)
		list := ports(20880, 3, map[string]string{"hash.nodes": c.spec})
		lb := New(Options{})
		for i := range 50 {
			lb.Select(list, lbtest.Call("Say", key(i)))
		}
		v, _ := lb.sk.View(list, "Say")
		assert.Equal(t, c.nodes, v.Table.ring.nodes, "hash.nodes %q", c.spec)
		if c.warn {
			assert.Len(t, warnings(), 1, "hash.nodes %q", c.spec)
		} else {
			assert.Empty(t, warnings(), "hash.nodes %q", c.spec)
		}
	}
}

func TestEmptyAndSingle(t *testing.T) {
	lb := New(Options{})
	inv := lbtest.Call("Say", "k")
	assert.Nil(t, lb.Select(nil, inv))
	assert.Nil(t, lb.Select([]base.Invoker{}, inv))
	one := providerAt("127.0.0.1:20880", nil)
	one.SetAvailable(false)
	assert.Same(t, one, lb.Select([]base.Invoker{one}, inv)) // the cluster reports it
}

func TestUnavailableProviderSkippedClockwise(t *testing.T) {
	list := ports(20880, 5, nil)
	r := ringOf(list, defaultNodes)
	lb := New(Options{})
	const down = 2
	list[down].(*base.BaseInvoker).SetAvailable(false)
	skipped := 0
	for i := range 2000 {
		kp := hashString(key(i))
		got := lb.Select(list, lbtest.Call("Say", key(i)))
		if o := r.Lookup(kp); o != down {
			require.Same(t, list[o], got, "a key of an available provider moved")
			continue
		}
		skipped++
		want, _ := r.lookupFunc(kp, func(m int) bool { return m != down })
		require.Same(t, list[want], got, "not the next provider clockwise")
	}
	assert.Positive(t, skipped)

	// Back up: its keys return to it.
	list[down].(*base.BaseInvoker).SetAvailable(true)
	for i := range 2000 {
		require.Same(t, list[r.Lookup(hashString(key(i)))], lb.Select(list, lbtest.Call("Say", key(i))))
	}
}

func TestAllUnavailableReturnsTheKeysOwner(t *testing.T) {
	list := ports(20880, 5, nil)
	for _, inv := range list {
		inv.(*base.BaseInvoker).SetAvailable(false)
	}
	r := ringOf(list, defaultNodes)
	for _, lb := range []*Balancer{New(Options{}), New(Options{BalanceFactor: 1.25})} {
		for i := range 500 {
			got := lb.Select(list, lbtest.Call("Say", key(i)))
			require.Same(t, list[r.Lookup(hashString(key(i)))], got)
		}
	}
}

// A failover retry passes the list without the providers already tried:
// the key goes to the first of them clockwise, not to a random one.
func TestRetrySubsetKeepsClockwiseOrder(t *testing.T) {
	list := ports(20880, 6, nil)
	r := ringOf(list, defaultNodes)
	lb := New(Options{})
	for i := range 500 {
		kp := hashString(key(i))
		o := r.Lookup(kp)
		require.Same(t, list[o], lb.Select(list, lbtest.Call("Say", key(i))))

		without := func(skip int) []base.Invoker {
			var out []base.Invoker
			for j, inv := range list {
				if j != skip {
					out = append(out, inv)
				}
			}
			return out
		}
		want, _ := r.lookupFunc(kp, func(m int) bool { return m != o })
		require.Same(t, list[want], lb.Select(without(o), lbtest.Call("Say", key(i))))
		// Dropping another provider keeps the key on its owner.
		require.Same(t, list[o], lb.Select(without((o+1)%len(list)), lbtest.Call("Say", key(i))))
		// Unavailable members of the subset are skipped too.
		list[want].(*base.BaseInvoker).SetAvailable(false)
		next, _ := r.lookupFunc(kp, func(m int) bool { return m != o && m != want })
		require.Same(t, list[next], lb.Select(without(o), lbtest.Call("Say", key(i))))
		list[want].(*base.BaseInvoker).SetAvailable(true)
	}
}

// The ring depends only on the addresses and hash.nodes: a warmup refresh
// or a provider re-registered at the same address keeps it.
func TestRingRebuiltOnlyOnMembershipChange(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := lbtest.NewClock(start.Add(10 * time.Second))
	lb := New(Options{Env: lbenv.Env{Wall: clock.Now}})
	list := []base.Invoker{
		lbtest.Started(20000, start, 600*time.Second),
		lbtest.Started(20001, start, 600*time.Second),
		lbtest.Started(20002, start.Add(-time.Hour), 600*time.Second),
	}
	view := func(l []base.Invoker) (*hashRing, any) {
		lb.Select(l, lbtest.Call("Say", "k"))
		v, exact := lb.sk.View(l, "Say")
		require.True(t, exact)
		return v.Table.ring, v
	}
	ring1, v1 := view(list)

	clock.Advance(time.Second) // warm weights change: a new snapshot
	ring2, v2 := view(list)
	assert.NotSame(t, v1, v2, "the warmup refresh did not happen")
	assert.Same(t, ring1, ring2, "ring rebuilt on a warmup refresh")

	again := []base.Invoker{lbtest.Started(20000, start, 600*time.Second), list[1], list[2]}
	ring3, _ := view(again)
	assert.Same(t, ring1, ring3, "ring rebuilt for a provider re-registered at the same address")

	moved := []base.Invoker{lbtest.Started(20003, start, 600*time.Second), list[1], list[2]}
	ring4, _ := view(moved)
	assert.NotSame(t, ring1, ring4, "ring kept although an address changed")
}

// Bounded load: with in-flight counts fed through rpcstatus (as the
// lbactive filter does), no provider ever carries more than
// ceil(factor × average) calls, even when half the calls share one key.
func TestBoundedLoad(t *testing.T) {
	const n, factor, steps = 10, 1.25, 3000
	list := ports(20880, n, nil)
	lb := New(Options{BalanceFactor: factor})
	plain := New(Options{})

	// Under no load the choice is plain Dubbo.
	for i := range 1000 {
		require.Same(t, plain.Select(list, lbtest.Call("Say", key(i))), lb.Select(list, lbtest.Call("Say", key(i))))
	}

	hotOwner := plain.Select(list, lbtest.Call("Say", "hot"))
	var calls []rpcstatus.Call
	active := func(inv base.Invoker) int64 { return rpcstatus.Of(inv.GetURL()).Method("Say").Active() }
	for step := range steps {
		k := "hot"
		if step%2 == 1 {
			k = key(step)
		}
		got := lb.Select(list, lbtest.Call("Say", k))
		p := rpcstatus.Of(got.GetURL())
		calls = append(calls, p.Begin(p.Method("Say"), rpcstatus.Nanotime()))
		bound := int64(math.Ceil(factor * float64(step+1) / n))
		for _, inv := range list {
			require.LessOrEqual(t, active(inv), bound, "step %d", step)
		}
	}
	t.Logf("hot key owner carries %d of %d in-flight calls (bound %d)", active(hotOwner), steps,
		int64(math.Ceil(factor*steps/n)))
	assert.Equal(t, int64(math.Ceil(factor*steps/n)), active(hotOwner), "the hot key's provider is filled to its bound")

	for _, c := range calls {
		c.End(rpcstatus.Nanotime(), false)
	}
	assert.Same(t, hotOwner, lb.Select(list, lbtest.Call("Say", "hot")), "the hot key returns once load drops")
}

func TestBalanceFactorOptions(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0, 0}, {-1, 0}, {math.NaN(), 0}, {0.5, 1}, {1, 1}, {1.25, 1.25}, {math.Inf(1), math.Inf(1)},
	} {
		assert.Equal(t, c.want, New(Options{BalanceFactor: c.in}).factor, "%v", c.in)
	}
}

// Selectors, with and without bounded load, race with a goroutine that
// keeps changing the providers and their availability.
func TestConcurrentSelectWhileMembershipChanges(t *testing.T) {
	pool := ports(20880, 16, nil)
	lbs := []*Balancer{New(Options{}), New(Options{BalanceFactor: 1.25})}
	rngs := make([]*rand.Rand, 4)
	for g := range rngs {
		rngs[g] = rand.New(rand.NewPCG(uint64(g), 7))
	}
	lbtest.ChurnPaced(t, pool, func(g, i int, l []base.Invoker) base.Invoker {
		if g == 0 && i%5 == 0 { // providers come and go from availability too
			pool[i%len(pool)].(*base.BaseInvoker).SetAvailable(i%3 != 0)
		}
		var args []any
		switch rngs[g].IntN(3) {
		case 0:
			args = []any{key(rngs[g].IntN(1000))}
		case 1:
			args = []any{rngs[g].IntN(1000), 2.5}
		}
		got := lbs[g%2].Select(l, lbtest.Call("Say", args...))
		if got != nil {
			p := rpcstatus.Of(got.GetURL())
			p.Begin(p.Method("Say"), 0).End(0, false)
		}
		return got
	})
}

// Select allocates nothing, whatever path it takes.
func TestSelectDoesNotAllocate(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		name   string
		params map[string]string
		opts   Options
		args   []any
		down   bool // the key's provider is unavailable
		subset bool // a failover retry without the key's provider
	}{
		{name: "string", args: []any{"user-123"}},
		{name: "int", args: []any{12345}},
		{name: "float", args: []any{1.5e21}},
		{name: "no args", args: nil},
		{name: "long string", args: []any{long}},
		{name: "two args", params: map[string]string{"hash.arguments": "0,1"}, args: []any{"tenant", int64(7)}},
		{name: "two long args", params: map[string]string{"hash.arguments": "0,1"}, args: []any{long, long}},
		{name: "owner down", args: []any{"user-123"}, down: true},
		{name: "bounded", opts: Options{BalanceFactor: 1.25}, args: []any{"user-123"}},
		{name: "retry subset", args: []any{"user-123"}, subset: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			list := ports(20880, 10, c.params)
			lb := New(c.opts)
			inv := lbtest.Call("Say", c.args...)
			owner := lb.Select(list, inv)
			if c.down {
				owner.(*base.BaseInvoker).SetAvailable(false)
			}
			var sub []base.Invoker
			for _, x := range list {
				if x != owner {
					sub = append(sub, x)
				}
			}
			copies := [2][]base.Invoker{append([]base.Invoker(nil), list...), append([]base.Invoker(nil), list...)}
			i := 0
			allocs := testing.AllocsPerRun(1000, func() {
				i++
				if c.subset && i&1 == 0 {
					lb.Select(sub, inv)
					return
				}
				lb.Select(copies[i&1], inv)
			})
			// Under -race sync.Pool drops a quarter of what it is given, so
			// the pooled key buffer of two long arguments is made again on
			// about one call in four (0.75 allocations a call): AllocsPerRun's
			// whole-number average is still 0, and 1 or more for a buffer
			// made on every call.
			assert.Zero(t, allocs)
		})
	}
}

// object has the shape of hessian.Object, the element type of the argument
// slice of dubbo-go's generic calls.
type object interface{}

// A generic call is hashed as Dubbo hashes it: the real method's
// parameters and arguments, so it routes like the ordinary call.
func TestGenericCallRoutesLikeTheRealMethod(t *testing.T) {
	list := ports(20880, 10, map[string]string{"methods.byUser.hash.arguments": "1"})
	lb := New(Options{})
	types := []string{"java.lang.String", "java.lang.String"}
	for i := range 300 {
		want := lb.Select(list, lbtest.Call("byUser", "tenant", key(i)))
		assert.Same(t, want, lb.Select(list, lbtest.Call("$invoke", "byUser", types, []object{"tenant", key(i)})))
		assert.Same(t, want, lb.Select(list, lbtest.Call("$invokeAsync", "byUser", types, []any{"tenant", key(i)})))
	}
	// Not shaped like a generic call: hashed as it is (key = argument 0).
	r := ringOf(list, defaultNodes)
	got := lb.Select(list, lbtest.Call("$invoke", "byUser", types, "not a slice"))
	assert.Same(t, list[r.Lookup(hashString("byUser"))], got)
	inv := lbtest.Call("$invoke", "byUser", types, []object{"tenant", "u"})
	assert.Zero(t, testing.AllocsPerRun(100, func() { lb.Select(list, inv) }))
}

// While the ring of a new membership is being built, a key whose provider
// stays keeps it; the key of the provider that left goes to the next one
// clockwise that stays, and no key goes to the newcomer or leaves the list.
func TestInterimKeepsTheKeysOfProvidersThatStay(t *testing.T) {
	b := New(Options{})
	list := ports(20880, 10, nil)
	old, _ := b.sk.View(list, "Say")
	r := ringOf(list, defaultNodes)
	changed := slices.Clone(list)
	changed[4] = providerAt("127.0.0.1:30000", nil) // list[4] leaves
	moved := 0
	for i := range 2000 {
		got := b.interim(old, changed, lbtest.Call("Say", key(i)))
		kp := hashString(key(i))
		if o := r.Lookup(kp); o != 4 {
			require.Same(t, list[o], got, "key %d moved", i)
			continue
		}
		moved++
		want, _ := r.lookupFunc(kp, func(m int) bool { return m != 4 })
		require.Same(t, list[want], got, "not the next provider clockwise")
	}
	assert.Positive(t, moved)
	// Without an old ring: some provider of the list.
	assert.Contains(t, changed, b.interim(nil, changed, lbtest.Call("Say", key(1))))
}

// With zone-aware routing, a key keeps its provider while a new
// membership's ring is built: the interim pick walks the ring of the zone
// the plan gives the key, as a pick does, under a direct plan and a
// spilling one. The control, the walk of the whole old ring regardless of
// zones, moves keys, and fails the check.
func TestInterimKeepsKeysOnTheirZonesProvider(t *testing.T) {
	cfg := map[string]string{"lb.zone.local": "a", "lb.zone.callers": "a:1,b:1"}
	for k, n := range [][]int{{4, 4}, {2, 6}} { // a direct plan, a spilling one
		b := New(Options{})
		list := lbtest.Zoned(25000+100*k, []string{"a", "b"}, n, cfg)
		old, _ := b.sk.View(list, "Say")
		require.NotNil(t, old.Zoning)
		changed := slices.Clone(list)
		gone := list[len(list)-1] // a provider of zone b leaves, another comes
		changed[len(changed)-1] = lbtest.Provider(25090+100*k, map[string]string{"lb.zone": "b", "lb.zone.local": "a", "lb.zone.callers": "a:1,b:1"})
		moved, blindMoved, keys := 0, 0, 0
		for i := range 2000 {
			inv := lbtest.Call("Say", key(i))
			want := b.Select(list, inv) // the key's provider on the old snapshot
			if want == gone {
				continue
			}
			keys++
			if b.interim(old, changed, inv) != want {
				moved++
			}
			if old.Invokers[b.walk(old, false, changed, nil, b.point(old.Table, inv))] != want {
				blindMoved++
			}
		}
		require.Greater(t, keys, 1000)
		assert.Zero(t, moved, "plan %d: keys moved while the ring was built", k)
		assert.Positive(t, blindMoved, "control, plan %d: the zone-blind walk keeps every key", k)
	}
}

// With zone-aware routing spilling, a key keeps one provider: its zone is
// drawn from the key, not at random; about the plan's share of the keys
// stays local.
func TestZoneSpillKeepsAKeyOnOneProvider(t *testing.T) {
	cfg := map[string]string{"lb.zone.local": "a", "lb.zone.callers": "a:1,b:1"}
	list := lbtest.Zoned(23000, []string{"a", "b"}, []int{2, 6}, cfg)
	b := New(Options{})
	const keys = 400
	local := 0
	for k := range keys {
		inv := lbtest.Call("Say", "user-"+strconv.Itoa(k))
		first := b.Select(list, inv)
		for range 10 {
			require.Same(t, first, b.Select(list, inv), "key %d moved", k)
		}
		if first.GetURL().GetParam("lb.zone", "") == "a" {
			local++
		}
	}
	// Plan: a keeps half of its calls (25 % of the capacity for 50 % of
	// the calls); the keys are 400 independent draws of it.
	assert.InDelta(t, 0.5, float64(local)/keys, 4.5*math.Sqrt(0.25/keys), "share of keys kept in zone a")
}
