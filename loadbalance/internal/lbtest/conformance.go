package lbtest

import (
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
		CheckReplacement(t, s.new(), s.call)
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

// Ports returns n providers of weight 100 on ports from, from+1, …
func Ports(from, n int) []base.Invoker {
	out := make([]base.Invoker, n)
	for i := range out {
		out[i] = Provider(from+i, map[string]string{"weight": "100"})
	}
	return out
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
