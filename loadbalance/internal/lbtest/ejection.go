package lbtest

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/assembly/simulate"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// OutlierFail records n failures without a status code (transport errors)
// of method Say on p, ending at now (the filter's clock), for outlier
// detection alone (rpcstatus.Stats.Judge): the statistics that balancers
// read themselves stay as they are, so that a test sees ejection apart
// from a balancer's own response to failures.
func OutlierFail(p base.Invoker, now int64, n int) {
	s := rpcstatus.Of(p.GetURL()).Method("Say")
	for range n {
		s.Judge(now, true, rpcstatus.NoCode)
	}
}

// OutlierSucceed records a success of method Say on p at now for outlier
// detection alone, as OutlierFail does.
func OutlierSucceed(p base.Invoker, now int64) {
	rpcstatus.Of(p.GetURL()).Method("Say").Judge(now, false, 0)
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

// FastFailureShare runs one of five equal providers (2 ms, 20 callers)
// answering every call with an error in 0.1 ms from 1 s on, with outlier
// ejection off, and returns the share of the picks it got from 2 s to 4 s:
// what the balancer's own response to failures makes of a provider that
// fails fast. A balancer that a fast failure makes look better gives it
// more than the fair 20 %. build makes the balancer on the driver's clocks.
func FastFailureShare(t testing.TB, build func(env lbenv.Env) loadbalance.LoadBalance) float64 {
	d := NewDriver(t, 3, 100*time.Millisecond, build)
	healthy := simulate.Model{Latency: simulate.Constant(2 * time.Millisecond)}.Server()
	failing := simulate.Model{
		Latency:   simulate.Steps([]time.Duration{2 * time.Millisecond, 100 * time.Microsecond}, time.Second),
		ErrorRate: simulate.Steps([]float64{0, 1}, time.Second),
	}.Server()
	d.AddN(failing, healthy, healthy, healthy, healthy)
	EjectionOff(d.List...)
	d.Run(20, 4*time.Second)
	return d.Share(0, 2*time.Second, 4*time.Second)
}
