package lbtest

import (
	"slices"
	"strings"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/zone"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// HostileParams are the consumer-only keys a hostile provider registers
// to take a consumer's calls and keep them: its zone as the consumer's,
// zones on at any size, all callers in its zone, ejection off, and a
// fallback and hash key of its choosing. Its own zone (lb.zone, a
// provider's fact) is "evil". The outlier keys are spelled out: package
// outlier's tests import this package (and check the spelling).
var HostileParams = map[string]string{
	urlparam.ZoneKey:               "evil",
	zone.LocalKey:                  "evil",
	zone.MinClusterSizeKey:         "0",
	zone.CallersKey:                "evil:1",
	"outlier.rules":                "none",
	"methods.Say.outlier.rules":    "none",
	"Say.outlier.rules":            "none",
	"loadbalance.fallback":         "roundrobin",
	"hash.attachment":              "user",
	"lb.load-report":               "false",
	"outlier.max-ejection-percent": "0",
	"outlier.consecutive-failures": "1000",
	"methods.Say.hash.attachment":  "user",
	"shortestresponse.slidePeriod": "1ms",
	"loadaware.blackout":           "1h",
	zone.OverprovisioningKey:       "1000",
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
	all := []base.Invoker{
		Hostile(port, HostileParams, consumer),
		Provider(port+1, merge(consumer, map[string]string{urlparam.ZoneKey: "a"})),
		Provider(port+2, merge(consumer, map[string]string{urlparam.ZoneKey: "a"})),
		Provider(port+3, merge(consumer, map[string]string{urlparam.ZoneKey: "b"})),
	}
	for _, k := range perm {
		list = append(list, all[k])
	}
	return list, all[0]
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
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
