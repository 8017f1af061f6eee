package lbtest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/builds"
	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/zone"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Subject describes a balancer to Conformance.
type Subject struct {
	// New returns a fresh balancer on env (its Options.Env).
	New func(env lbenv.Env) loadbalance.LoadBalance
	// Keyed is true for a balancer that routes by the invocation's
	// arguments (consistent hashing): the suite then varies them.
	Keyed bool
	// WarmShares is true for a balancer whose shares follow warm weights:
	// the suite then checks the warmup ramp through a provider URL as
	// Nacos delivers it.
	WarmShares bool
	// ExactShares is true for a balancer whose shares are exact over a
	// cycle (round robin): the share check then allows 0.01 %, not Tol.
	ExactShares bool
	// IgnoresWeights is true for a balancer whose choice never depends on
	// weights (consistent hashing, as Dubbo's): the weight rules are then
	// only checked for safety, not for shares.
	IgnoresWeights bool
}

// new returns a fresh balancer with the default options on a seeded
// random source, so that a subtest that picks from one goroutine is a
// function of the seed.
func (s Subject) new() loadbalance.LoadBalance { return s.New(lbenv.Env{Rand: algo.Seeded(1).Uint64}) }

// call returns the i-th invocation the suite makes.
func (s Subject) call(i int) base.Invocation {
	if s.Keyed {
		return Call("Say", "user-"+strconv.Itoa(i))
	}
	return Call("Say")
}

// Conformance runs the checks every balancer must pass, as subtests: an
// empty list, a single provider, a failover retry's subset, membership
// churn racing selections and feedback (run it with -race), a replacement
// that keeps the list's length, every bad input of the module's balancer
// semantics (weights, timestamps, warmup, hash parameters), the log lines
// they cause, and 0 allocations per Select.
func Conformance(t *testing.T, s Subject) {
	t.Run("Empty", func(t *testing.T) {
		lb := s.new()
		if got := lb.Select(nil, s.call(0)); got != nil {
			t.Errorf("Select(nil) = %v, want nil", got)
		}
		if got := lb.Select([]base.Invoker{}, s.call(0)); got != nil {
			t.Errorf("Select(empty) = %v, want nil", got)
		}
	})
	t.Run("Single", func(t *testing.T) {
		lb := s.new()
		for _, p := range []base.Invoker{N(1)[0], Weighted("abc")[0], Provider(20000, map[string]string{"weight": "0", "release": "3.2.15"})} {
			if got := lb.Select([]base.Invoker{p}, s.call(0)); got != p {
				t.Errorf("Select of one provider = %v, want it", got)
			}
		}
	})
	t.Run("RetrySubset", func(t *testing.T) {
		lb := s.new()
		list := N(6)
		for i := range 50 {
			lb.Select(slices.Clone(list), s.call(i))
		}
		sub := []base.Invoker{list[1], list[3], list[4]}
		seen := map[base.Invoker]bool{}
		for i := range 15 { // fewer than a subset that persists (a real change)
			got := lb.Select(slices.Clone(sub), s.call(i))
			if !slices.Contains(sub, got) {
				t.Fatalf("retry pick %v is not in the subset", got)
			}
			seen[got] = true
		}
		if len(seen) < 2 && !s.Keyed {
			t.Errorf("15 retries all went to one provider of 3")
		}
		// The full list afterwards is served from the same snapshot.
		if got := lb.Select(slices.Clone(list), s.call(0)); !slices.Contains(list, got) {
			t.Errorf("pick %v not in the list", got)
		}
	})
	t.Run("Churn", func(t *testing.T) {
		lb := s.New(lbenv.Env{}) // picks race: the default source
		pool := append(Weighted("100", "100", "50", "100", "100", "100", "100", "100"), Ports(20100, 8)...)
		ChurnPaced(t, pool, func(g, i int, l []base.Invoker) base.Invoker {
			got := lb.Select(l, s.call(i))
			if got == nil {
				return nil // ChurnPaced reports it
			}
			p := rpcstatus.Of(got.GetURL())
			now := rpcstatus.Nanotime()
			p.Begin(p.Method("Say"), now).End(now+int64(g+1)*int64(time.Millisecond), i%50 == 0)
			return got
		})
	})
	t.Run("ChurnBackground", func(t *testing.T) {
		// Every snapshot built off the call's path: the calls that see a
		// change pick with the balancer's interim pick meanwhile.
		lb := s.New(lbenv.Env{})
		bg, ok := builds.Of(lb)
		if !ok {
			t.Fatalf("%T has no builds.Hook: it must be built on the skeleton", lb)
		}
		bg.SetInlineUpTo(0)
		defer bg.WaitBuilds()
		ChurnPaced(t, append(N(8), Ports(20100, 8)...), func(_, i int, l []base.Invoker) base.Invoker {
			return lb.Select(l, s.call(i))
		})
		src, ok := lb.(describe.Source)
		if !ok {
			t.Fatalf("%T is not a describe.Source", lb)
		}
		if n := src.Rebuilds().InterimPicks; n == 0 {
			t.Error("no pick was made by the interim rule: the churn did not exercise it")
		}
	})
	t.Run("Replacement", func(t *testing.T) {
		checkReplacement(t, s.new(), s.call)
	})
	t.Run("BadInput", func(t *testing.T) { badInput(t, s) })
	t.Run("Ejection", func(t *testing.T) { ejection(t, s) })
	t.Run("Zones", func(t *testing.T) { zones(t, s) })
	t.Run("HostileZone", func(t *testing.T) { hostileZone(t, s) })
	t.Run("HostileEjection", func(t *testing.T) { hostileEjection(t, s) })
	if s.WarmShares {
		t.Run("SharesFollowWeights", func(t *testing.T) { sharesFollowWeights(t, s) })
		t.Run("WarmupRamp", func(t *testing.T) { warmupRamp(t, s) })
	}
	t.Run("ZeroAllocs", func(t *testing.T) {
		defer lblog.Capture(func(string) {})() // picks without calls: the filter watch speaks
		lb := s.new()
		for _, n := range []int{10, 100} {
			l := N(n)
			copies := [2][]base.Invoker{slices.Clone(l), slices.Clone(l)}
			inv := s.call(7)
			for i := range 100 {
				lb.Select(copies[i&1], inv)
			}
			WaitBuilds(lb) // steady: the snapshot of a list above 64 providers is published
			i := 0
			if a := testing.AllocsPerRun(1000, func() { lb.Select(copies[i&1], inv); i++ }); a != 0 {
				t.Errorf("N=%d: %v allocations per Select, want 0", n, a)
			}
		}
	})
}

// java returns a provider as a Dubbo Java provider registers it, for which
// weight 0 means 0 (a dubbo-go provider writes 0 when no weight was set).
func java(port int, params map[string]string) base.Invoker {
	if params == nil {
		params = map[string]string{}
	}
	params["release"] = "3.2.15"
	return Provider(port, params)
}

// badInput checks the bad inputs of the balancer semantics: each yields a
// safe default, never a panic nor a pick outside the list, and what is
// logged about them is one line with the module's prefix.
func badInput(t *testing.T, s Subject) {
	logs := CaptureLogs(t)
	const picks = 5_000
	counts := func(lb loadbalance.LoadBalance, list []base.Invoker) []int {
		t.Helper()
		c := make([]int, len(list))
		for i := range picks {
			got := lb.Select(slices.Clone(list), s.call(i))
			k := slices.Index(list, got)
			if k < 0 {
				t.Fatalf("Select returned %v, not in the list", got)
			}
			c[k]++
		}
		return c
	}
	everyOneServed := func(what string, c []int) {
		t.Helper()
		for i, n := range c {
			if n == 0 {
				t.Errorf("%s: provider %d got none of %d picks (%v)", what, i, picks, c)
			}
		}
	}

	// Malformed weights are replaced by the default: every provider serves.
	bad := []string{"abc", "-5", "1e99", "NaN", "Inf", "1e7", "", " 100 "}
	everyOneServed("malformed weights", counts(s.new(), Weighted(bad...)))

	// A fractional weight is never rounded to 0.
	c := counts(s.new(), Weighted("0.4", "1", "1"))
	everyOneServed("fractional weights", c)

	// Weight 0 means no traffic while another provider has weight; all 0
	// share evenly.
	drained := []base.Invoker{java(20000, map[string]string{"weight": "0"}), java(20001, nil), java(20002, nil)}
	c = counts(s.new(), drained)
	if !s.IgnoresWeights && c[0] != 0 {
		t.Errorf("a provider of weight 0 got %d of %d picks", c[0], picks)
	}
	all0 := []base.Invoker{java(20000, map[string]string{"weight": "0"}), java(20001, map[string]string{"weight": "0"})}
	everyOneServed("all weights 0", counts(s.new(), all0))

	// A timestamp in the future (clock skew): just started, neither full
	// weight nor none.
	now := time.Now()
	skewed := append(Ports(20000, 3), Started(20003, now.Add(time.Hour), 600*time.Second))
	c = counts(s.new(), skewed)
	everyOneServed("a future timestamp", c)
	if !s.IgnoresWeights && c[3] > picks/4/2 {
		t.Errorf("a provider whose timestamp is in the future got %d of %d picks, not less than half its share", c[3], picks)
	}

	// Unparsable timestamps and warmup periods: warm, or the default period.
	odd := []base.Invoker{
		Provider(20000, map[string]string{"timestamp": "abc", "warmup": "10"}),
		Provider(20001, map[string]string{"timestamp": "-1"}),
		Provider(20002, map[string]string{"timestamp": "9223372036854775807", "warmup": "NaN"}),
		Provider(20003, map[string]string{"timestamp": strconv.FormatInt(now.Add(-time.Hour).Unix(), 10), "warmup": "-5"}),
		Provider(20004, map[string]string{"timestamp": strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10), "warmup": "1e30"}),
	}
	everyOneServed("odd timestamps", counts(s.new(), odd))

	// Bad hash parameters and timeouts: ignored or replaced, never fatal.
	hashy := []base.Invoker{
		Provider(20000, map[string]string{"hash.arguments": "x,-1,99", "hash.nodes": "abc", "timeout": "forever", "actives": "-3",
			// Bad outlier parameters (read from the first provider).
			"outlier.rules": "sometimes", "outlier.consecutive-failures": "-1", "outlier.base-ejection-time": "-5s",
			"outlier.max-ejection-percent": "1e9", "methods.Say.outlier.panic-threshold": "NaN"}),
		Provider(20001, map[string]string{"hash.arguments": "", "hash.nodes": "-4", "timeout": "0"}),
		Provider(20002, map[string]string{"hash.nodes": "99999999999999999999", "methods.Say.timeout": "1e3"}),
	}
	lb := s.new()
	counts(lb, hashy)
	for _, inv := range []base.Invocation{Call("Say"), Call("Say", nil), Call("Say", nil, nil, nil), Call("")} {
		if got := lb.Select(slices.Clone(hashy), inv); !slices.Contains(hashy, got) {
			t.Errorf("Select(%v) = %v, not in the list", inv.Arguments(), got)
		}
	}

	outlierLines := 0
	for _, line := range logs() {
		if strings.Contains(line, "outlier ejection, service") && strings.Contains(line, "method Say:") {
			outlierLines++
			for _, want := range []string{`outlier.rules "sometimes"`, `outlier.consecutive-failures "-1"`,
				`outlier.base-ejection-time "-5s"`, `outlier.max-ejection-percent "1e9"`, `outlier.panic-threshold "NaN"`} {
				if !strings.Contains(line, want) {
					t.Errorf("the outlier line does not name %s: %q", want, line)
				}
			}
		}
	}
	if outlierLines != 1 {
		t.Errorf("%d WARN lines about the bad outlier parameters of method Say, want 1", outlierLines)
	}
	for _, line := range logs() {
		if !strings.HasPrefix(line, lblog.Prefix) || strings.ContainsAny(line, "\r\n") || strings.Contains(line, "goroutine ") {
			t.Errorf("log line is not one prefixed line: %q", line)
		}
	}
}

// warmupRamp checks that a provider up 60 s of a 600 s warmup gets about
// 10 % of a warm peer's traffic, half way about 50 %, and once warm as
// much, on the wall clock the test sets.
func warmupRamp(t *testing.T, s Subject) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := NewClock(start.Add(60 * time.Second))
	lb := s.New(lbenv.Env{Wall: clock.Now, Rand: algo.Seeded(2).Uint64})
	list := []base.Invoker{
		Started(20000, start.Add(-time.Hour), 600*time.Second),
		Started(20001, start, 600*time.Second),
	}
	for _, c := range []struct {
		advance   time.Duration
		want, tol float64
	}{{0, 0.1, 0.015}, {240 * time.Second, 0.5, 0.04}, {time.Hour, 1, 0.06}} {
		clock.Advance(c.advance)
		n := Counts(lb, list, s.call(0), 30_000)
		if r := float64(n[1]) / float64(n[0]); r < c.want-c.tol || r > c.want+c.tol {
			t.Errorf("at %v: the warming provider got %.3f of a warm peer's traffic, want %.2f ± %.3f",
				clock.Now().Sub(start), r, c.want, c.tol)
		}
	}
}

// sharesFollowWeights checks the shares of static weights, including
// Dubbo's bug of deciding "weighted or not" from the first invokers.
func sharesFollowWeights(t *testing.T, s Subject) {
	const picks = 20_000
	lb := s.new()
	for _, c := range []struct {
		weights []string
		want    []float64
	}{
		{[]string{"1", "9"}, []float64{10, 90}},
		{[]string{"1", "1", "2"}, []float64{25, 25, 50}},
		{[]string{"100", "100", "100", "100"}, []float64{25, 25, 25, 25}},
	} {
		got := Shares(lb, Weighted(c.weights...), s.call(0), picks)
		for i := range got {
			tol := Tol(c.want[i]/100, picks)
			if s.ExactShares {
				tol = 0.01
			}
			if d := got[i] - c.want[i]; d > tol || d < -tol {
				t.Errorf("weights %v: shares %v, want %v ± %.2f (provider %d)", c.weights, got, c.want, tol, i)
				break
			}
		}
	}
}

// ejection checks outlier ejection through the balancer: a provider that
// fails five times in a row gets no pick (a keyed balancer sends its keys
// to others and no other key moves) until its ejection time is over, then
// gets its picks (its keys) back; one WARN line for each; no allocation
// while it is ejected; and below the panic threshold every provider serves.
func ejection(t *testing.T, s Subject) {
	logs := CaptureLogs(t)
	const picks = 2000
	lb := s.new()
	list := N(5)
	// owners returns the provider of each of picks calls (keys for a keyed
	// balancer).
	owners := func(lb loadbalance.LoadBalance, list []base.Invoker) []int {
		out := make([]int, picks)
		for i := range out {
			out[i] = slices.Index(list, lb.Select(slices.Clone(list), s.call(i)))
			if out[i] < 0 {
				t.Fatalf("a pick outside the list")
			}
		}
		return out
	}
	count := func(o []int, k int) (n int) {
		for _, p := range o {
			if p == k {
				n++
			}
		}
		return n
	}
	before := owners(lb, list)
	if count(before, 2) == 0 {
		t.Fatalf("provider 2 got none of %d picks before it failed", picks)
	}

	now := rpcstatus.Nanotime()
	ejectedLines := func() (n int) {
		for _, l := range logs() {
			n += strings.Count(l, "127.0.0.1:20002 ejected for 30s")
		}
		return n
	}
	OutlierFail(list[2], now, 4)
	owners(lb, list)
	if ejectedLines() != 0 {
		t.Errorf("provider 2 ejected after 4 failures")
	}
	OutlierFail(list[2], now, 1)
	during := owners(lb, list)
	if got := count(during, 2); got != 0 {
		t.Errorf("provider 2 got %d of %d picks while ejected", got, picks)
	}
	for k := range list {
		if k != 2 && count(during, k) == 0 {
			t.Errorf("provider %d got no pick while provider 2 was ejected", k)
		}
	}
	if s.Keyed {
		for i := range during {
			if before[i] != 2 && during[i] != before[i] {
				t.Fatalf("key %d moved from provider %d to %d although its provider serves", i, before[i], during[i])
			}
		}
	}
	// A call whose key belonged to the ejected provider, for a keyed one.
	inv := s.call(slices.Index(before, 2))
	i := 0
	copies := [2][]base.Invoker{slices.Clone(list), slices.Clone(list)}
	if a := testing.AllocsPerRun(1000, func() { lb.Select(copies[i&1], inv); i++ }); a != 0 {
		t.Errorf("%v allocations per Select while a provider is ejected, want 0", a)
	}

	OutlierSucceed(list[0], now+int64(29*time.Second))
	if got := count(owners(lb, list), 2); got != 0 {
		t.Errorf("provider 2 got %d picks before its 30 s of ejection were over", got)
	}
	OutlierSucceed(list[0], now+int64(31*time.Second)) // the first call after: the detector wakes
	after := owners(lb, list)
	if got := count(after, 2); got == 0 {
		t.Errorf("provider 2 got no pick after its ejection")
	}
	if s.Keyed && !slices.Equal(before, after) {
		t.Errorf("the keys did not all come back to their providers")
	}
	returned := 0
	for _, l := range logs() {
		returned += strings.Count(l, "127.0.0.1:20002 returns after")
	}
	if ejected := ejectedLines(); ejected != 1 || returned != 1 {
		t.Errorf("%d lines for the ejection and %d for the return, want 1 each: %q", ejected, returned, logs())
	}

	// Three of four failing with every provider ejectable: ejecting them
	// would leave 25 % usable, under the 50 % panic threshold, so every
	// provider serves. (The failures are older than any balancer's own
	// memory of failures, fewestactive's 10 s: what is seen is ejection.)
	panicky := Ports(20100, 4)
	SetConsumer("outlier.max-ejection-percent", "100", panicky...)
	lb = s.new()
	owners(lb, panicky)
	for k := range 3 {
		OutlierFail(panicky[k], now-int64(11*time.Second), 5)
	}
	got := owners(lb, panicky)
	for k := range panicky {
		if count(got, k) == 0 && !s.Keyed {
			t.Errorf("below the panic threshold provider %d got no pick: %s", k, tally(got, len(panicky)))
		}
	}
	if s.Keyed && count(got, 3) == picks {
		t.Errorf("below the panic threshold every key went to the one provider left")
	}
}

// tally writes how many of owners are each of n providers.
func tally(owners []int, n int) string {
	c := make([]string, n)
	for k := range c {
		m := 0
		for _, o := range owners {
			if o == k {
				m++
			}
		}
		c[k] = strconv.Itoa(m)
	}
	return strings.Join(c, "/")
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

// hostileList returns, in the order perm, a provider that registers
// HostileParams (index 0 before the permutation) and three honest ones,
// two in zone a and one in zone b, all with the consumer's params
// consumer, on ports from port.
func hostileList(port int, perm []int, consumer map[string]string) (list []base.Invoker, evil base.Invoker) {
	all := append([]base.Invoker{Hostile(port, HostileParams, consumer)}, Zoned(port+1, []string{"a", "b"}, []int{2, 1}, consumer)...)
	for _, k := range perm {
		list = append(list, all[k])
	}
	return list, all[0]
}

// picksOf returns how many of n calls lb sends to p among list.
func picksOf(lb loadbalance.LoadBalance, s Subject, list []base.Invoker, p base.Invoker, n int) int {
	got := 0
	for i := range n {
		if lb.Select(slices.Clone(list), s.call(i)) == p {
			got++
		}
	}
	return got
}

// hostileZone checks that a provider registering HostileParams steers
// nothing, in every position of the list (every permutation of four
// providers): the consumer in zone a, with zones counted from two
// providers, sends every call to zone a's two providers, none to the
// hostile one. The negative control, a consumer that itself names the
// hostile zone, sends it calls: the check sees steering.
func hostileZone(t *testing.T, s Subject) {
	CaptureLogs(t)
	const picks = 200
	consumer := map[string]string{zone.LocalKey: "a", zone.MinClusterSizeKey: "2"}
	for k, perm := range permutations(4) {
		list, evil := hostileList(26000+10*k, perm, consumer)
		if got := picksOf(s.new(), s, list, evil, picks); got != 0 {
			t.Errorf("order %v: the hostile provider got %d of %d calls, want 0 (the consumer is in zone a)", perm, got, picks)
		}
	}
	t.Run("negative_control_consumer_in_the_hostile_zone", func(t *testing.T) {
		own := map[string]string{zone.LocalKey: "evil", zone.MinClusterSizeKey: "2"}
		list, evil := hostileList(26500, []int{1, 2, 0, 3}, own)
		if got := picksOf(s.new(), s, list, evil, picks); got == 0 {
			t.Errorf("a consumer in the hostile zone sent it no call: the check proves nothing")
		}
	})
}

// hostileEjection checks that a provider that registers ejection off
// (HostileParams) is ejected all the same after five failures in a row,
// in every position of a list of four, by the consumer's default rules:
// it gets no call, and the ejection is logged. The negative control, a
// consumer that turns ejection off itself, logs no ejection.
func hostileEjection(t *testing.T, s Subject) {
	logs := CaptureLogs(t)
	const picks = 400
	// failing returns the hostile provider's picks after its failures,
	// and whether its ejection was logged.
	failing := func(port int, perm []int, consumer map[string]string) (int, bool) {
		list, evil := hostileList(port, perm, consumer)
		lb := s.new()
		picksOf(lb, s, list, evil, picks)
		OutlierFail(evil, rpcstatus.Nanotime(), 5)
		got := picksOf(lb, s, list, evil, picks)
		line := evil.GetURL().Location + " ejected"
		return got, slices.ContainsFunc(logs(), func(l string) bool { return strings.Contains(l, line) })
	}
	for k, perm := range permutations(4) {
		got, ejected := failing(27000+10*k, perm, nil)
		if got != 0 || !ejected {
			t.Errorf("order %v: the failing provider that registers outlier.rules=none got %d of %d calls (want 0), ejection logged: %v (want true)",
				perm, got, picks, ejected)
		}
	}
	t.Run("negative_control_consumer_turns_ejection_off", func(t *testing.T) {
		if _, ejected := failing(27500, []int{1, 0, 2, 3}, map[string]string{"outlier.rules": "none"}); ejected {
			t.Errorf("a consumer with ejection off ejected the failing provider: the check proves nothing")
		}
	})
}

// checkLocalShare returns an error unless the share of picks calls made
// by call that lb sends to a provider of zone (from list) is want within
// 4.5 binomial standard deviations (exactly want when want is 0 or 1).
func checkLocalShare(lb loadbalance.LoadBalance, list []base.Invoker, call func(i int) base.Invocation, zone string, want float64, picks int) error {
	local := 0
	for i := range picks {
		if p := lb.Select(list, call(i)); p != nil && p.GetURL().GetParam("lb.zone", "") == zone {
			local++
		}
	}
	got := float64(local) / float64(picks)
	if tol := 4.5 * math.Sqrt(want*(1-want)/float64(picks)); math.Abs(got-want) > tol {
		return fmt.Errorf("share of picks in zone %s: %.4f, want %.4f ± %.4f over %d picks", zone, got, want, tol, picks)
	}
	return nil
}

// zones checks zone-aware routing through the balancer: balanced zones
// keep every call local, a zone that cannot carry its callers spills the
// share Envoy's formula gives, a drained zone sends everything away, and
// the same checks fail with zone-aware routing off (negative controls).
func zones(t *testing.T, s Subject) {
	const picks = 4000
	local := map[string]string{"lb.zone.local": "a"}
	t.Run("ZoneBalancedStaysLocal", func(t *testing.T) {
		list := Zoned(21000, []string{"a", "b"}, []int{4, 4}, local)
		if err := checkLocalShare(s.new(), list, s.call, "a", 1, picks); err != nil {
			t.Error(err)
		}
		// Negative control: without the consumer's zone, about half.
		off := Zoned(21100, []string{"a", "b"}, []int{4, 4}, nil)
		if err := checkLocalShare(s.new(), off, s.call, "a", 1, picks); err == nil {
			t.Error("zone-aware routing off kept every call local: the check proves nothing")
		}
	})
	t.Run("ZoneSpillsWhatItCannotCarry", func(t *testing.T) {
		// 2 providers in a, 6 in b, callers half and half: a holds 25 % of
		// the capacity for 50 % of the calls, so it keeps half of them.
		cfg := map[string]string{"lb.zone.local": "a", "lb.zone.callers": "a:1,b:1"}
		list := Zoned(21200, []string{"a", "b"}, []int{2, 6}, cfg)
		if err := checkLocalShare(s.new(), list, s.call, "a", 0.5, picks); err != nil {
			t.Error(err)
		}
		// Negative control: all local (a zone-aware router without
		// spill) fails the same check.
		if err := checkLocalShare(s.new(), Zoned(21300, []string{"a", "b"}, []int{4, 4}, local), s.call, "a", 0.5, picks); err == nil {
			t.Error("balanced zones passed the spill check: it proves nothing")
		}
	})
	t.Run("ZoneDrainedSpillsAll", func(t *testing.T) {
		if !s.WarmShares {
			// Shares that do not follow weights: Dubbo's ring keeps a
			// drained provider's keys, Java's adaptive pair picks it when
			// both candidates are drained.
			return
		}
		list := Zoned(21400, []string{"a", "b"}, []int{3, 5}, local)
		for _, p := range list[:3] {
			p.GetURL().SetParam("weight", "0")
			p.GetURL().SetParam("release", "3.3.6") // a Java provider's 0 drains
		}
		if err := checkLocalShare(s.new(), list, s.call, "a", 0, picks); err != nil {
			t.Error(err)
		}
	})
	t.Run("ZoneZeroAllocs", func(t *testing.T) {
		cfg := map[string]string{"lb.zone.local": "a", "lb.zone.callers": "a:1,b:1"}
		list := Zoned(21500, []string{"a", "b"}, []int{2, 6}, cfg)
		lb := s.new()
		inv := s.call(7)
		for range 100 {
			lb.Select(list, inv)
		}
		if a := testing.AllocsPerRun(1000, func() { lb.Select(list, inv) }); a != 0 {
			t.Errorf("%v allocations per Select with zones, want 0", a)
		}
	})
}

// checkReplacement checks that lb follows a change of membership that
// keeps the length and both ends of the list, which a quick membership
// check (member.Registry.Pick) cannot see: provider 3 of 8 replaced by a new
// one. Every pick is made on a fresh copy of the list, as dubbo-go's router
// chain makes one per call, with the invocation call(i) for the i-th pick.
// It fails t when a pick is not in the list it
// was made from (the provider that left, in particular), or when the
// newcomer gets less than half its even share of 8000 picks.
func checkReplacement(t testing.TB, lb loadbalance.LoadBalance, call func(i int) base.Invocation) {
	t.Helper()
	list := N(8)
	for i := range 1000 {
		lb.Select(slices.Clone(list), call(i))
	}
	changed := slices.Clone(list)
	changed[3] = Provider(20100, nil)
	picks := 0
	for i := range 8000 {
		got := lb.Select(slices.Clone(changed), call(i))
		if !slices.Contains(changed, got) {
			t.Fatalf("Select returned %v, not in the list", got)
		}
		if got == changed[3] {
			picks++
		}
	}
	if picks < 500 {
		t.Errorf("the newcomer got %d of 8000 picks, want at least 500 (its even share is 1000)", picks)
	}
}
