package lbtest

import (
	"fmt"
	"math"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
)

// Zoned returns providers of weight 100 on ports from, from+1, …: n[k] of
// them in zone zones[k] (the lb.zone parameter), each URL carrying the
// consumer's params (as dubbo-go merges a reference's params into every
// provider URL).
func Zoned(from int, zones []string, n []int, consumer map[string]string) []base.Invoker {
	var out []base.Invoker
	for k, z := range zones {
		for range n[k] {
			params := map[string]string{"lb.zone": z}
			for key, v := range consumer {
				params[key] = v
			}
			out = append(out, Provider(from, params))
			from++
		}
	}
	return out
}

// LocalShare returns the share of picks lb makes from list that land in
// zone, over picks calls made by call.
func LocalShare(lb loadbalance.LoadBalance, list []base.Invoker, call func(i int) base.Invocation, zone string, picks int) float64 {
	local := 0
	for i := range picks {
		if p := lb.Select(list, call(i)); p != nil && p.GetURL().GetParam("lb.zone", "") == zone {
			local++
		}
	}
	return float64(local) / float64(picks)
}

// CheckLocalShare returns an error unless the share of picks in zone is
// want within 4.5 binomial standard deviations of the picks measured
// (exactly want when want is 0 or 1).
func CheckLocalShare(lb loadbalance.LoadBalance, list []base.Invoker, call func(i int) base.Invocation, zone string, want float64, picks int) error {
	got := LocalShare(lb, list, call, zone, picks)
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
		if err := CheckLocalShare(s.new(), list, s.call, "a", 1, picks); err != nil {
			t.Error(err)
		}
		// Negative control: without the consumer's zone, about half.
		off := Zoned(21100, []string{"a", "b"}, []int{4, 4}, nil)
		if err := CheckLocalShare(s.new(), off, s.call, "a", 1, picks); err == nil {
			t.Error("zone-aware routing off kept every call local: the check proves nothing")
		}
	})
	t.Run("ZoneSpillsWhatItCannotCarry", func(t *testing.T) {
		// 2 providers in a, 6 in b, callers half and half: a holds 25 % of
		// the capacity for 50 % of the calls, so it keeps half of them.
		cfg := map[string]string{"lb.zone.local": "a", "lb.zone.callers": "a:1,b:1"}
		list := Zoned(21200, []string{"a", "b"}, []int{2, 6}, cfg)
		if err := CheckLocalShare(s.new(), list, s.call, "a", 0.5, picks); err != nil {
			t.Error(err)
		}
		// Negative control: all local (a zone-aware router without
		// spill) fails the same check.
		if err := CheckLocalShare(s.new(), Zoned(21300, []string{"a", "b"}, []int{4, 4}, local), s.call, "a", 0.5, picks); err == nil {
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
		if err := CheckLocalShare(s.new(), list, s.call, "a", 0, picks); err != nil {
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
