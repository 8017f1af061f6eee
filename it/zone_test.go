package it

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// Zone-aware routing end to end (loadbalance/internal/zone): six
// providers at application level, five dubbo-go ones registered in two
// Nacos clusters, az-a and az-b (the sample's -zone), and a Dubbo Java one
// in az-b that names its zone by the service parameter lb.zone; a
// consumer in each zone that says the two zones send as many calls
// (-zone-callers), and a consumer that names no zone as the negative
// control.
//
//   - Balanced zones: every call of a zone's consumer stays in its zone
//     (at least 99 %); the consumer without a zone spreads over both, and
//     fails the same check.
//   - Zone az-a shrinks to one provider of 100 against az-b's 300 (the
//     minimum number of providers lowered to 2, from Envoy's 6): by
//     Envoy's formula az-a holds 100/400 = 25 % of the capacity for 50 %
//     of the calls, so it keeps 25/50 = 50 % of its consumer's calls and
//     spills the rest to az-b; az-b's consumer stays at home.
//   - Zone az-a goes down whole: its consumer's calls all go to az-b, and
//     no call fails; when az-a comes back, its calls come back too.
func TestZoneAwareRoutingStaysLocalSpillsAndFailsOver(t *testing.T) {
	parallelJVM(t) // shares by zone; a Java provider: schedule_test.go
	e := setup(t)
	lv := applicationLevel
	needJava(t)
	zoneA, zoneB := []string{"a1", "a2", "a3"}, []string{"b1", "b2", "b3"}
	var specs []providerSpec
	for _, n := range zoneA {
		specs = append(specs, providerSpec{name: n, args: []string{"-zone", "az-a", "-registry-type", lv.typ}})
	}
	for _, n := range zoneB[:2] {
		specs = append(specs, providerSpec{name: n, args: []string{"-zone", "az-b", "-registry-type", lv.typ}})
	}
	specs = append(specs, providerSpec{name: "b3", java: true, args: []string{"-zone", "az-b"}})
	var ps []*provider
	for _, s := range specs {
		ps = append(ps, e.startProvider(t, s))
		e.waitAppRegistered(t, ps...)
	}
	insts := e.waitAppRegistered(t, ps...)
	for i, in := range insts[:5] { // the dubbo-go providers: their Nacos cluster is their zone
		if want := map[bool]string{true: "az-a", false: "az-b"}[i < 3]; in.ClusterName != want {
			t.Fatalf("instance %s:%d of %s in Nacos cluster %q, want %q", in.IP, in.Port, ps[i].spec.name, in.ClusterName, want)
		}
	}

	zoneArgs := func(zone string) []string {
		// Envoy's minimum of 6 providers would turn zones off once az-a
		// shrinks to one provider of four: the test lowers it.
		return []string{"-registry-type", lv.typ, "-zone", zone, "-zone-callers", "az-a:1,az-b:1", "-param", "lb.zone.min-cluster-size=2"}
	}
	cs := e.startConsumers(t, 3,
		consumerSpec{balancer: "warmrandom", name: "consumer in az-a", args: zoneArgs("az-a")},
		consumerSpec{balancer: "swrr", name: "consumer in az-b", args: zoneArgs("az-b")})
	ca, cb := cs[0], cs[1]
	control := e.startConsumers(t, 6, consumerSpec{balancer: "warmrandom", name: "consumer without a zone",
		args: []string{"-registry-type", lv.typ}})[0]

	// Balanced: at home.
	ca.until(t, reactDeadline, "reaching az-a", func(r report) bool { return all(r, zoneA...) })
	cb.until(t, reactDeadline, "reaching az-b", func(r report) bool { return all(r, zoneB...) })
	for _, c := range []struct {
		c    *consumer
		home []string
	}{{ca, zoneA}, {cb, zoneB}} {
		r := c.c.collectCalls(t, shareCalls)
		if err := atHome(r, c.home, 99); err != nil {
			t.Errorf("%s, zones balanced: %v", c.c.name, err)
		} else {
			t.Logf("%s, zones balanced: %.2f %% at home (%v)", c.c.name, zoneShare(r, c.home), r)
		}
	}
	// Negative control: without a zone about half the calls are in az-a.
	control.until(t, reactDeadline, "reaching every provider", func(r report) bool { return all(r, append(zoneA, zoneB...)...) })
	if r := control.collectCalls(t, shareCalls); atHome(r, zoneA, 99) == nil {
		t.Errorf("%s passed the at-home check (%v): the check proves nothing", control.name, r)
	}
	// Its part is done: flat out to the end, it made a third of the test's
	// calls, and the machine's CPU is what every test waits for.
	noErrors(t, control, control.finish(t))

	// az-a shrinks to a1: it keeps half of its consumer's calls.
	ps[1].stop()
	ps[2].stop()
	// The dubbo-go application's instances: a1, b1, b2 (b3 is Java's).
	e.waitInstancesOf(t, lv.service, reactDeadline, "az-a down to a1", func(list []instance) bool { return len(list) == 3 })
	shrunk := time.Now()
	for _, c := range []*consumer{ca, cb} {
		c.until(t, reactDeadline, "past the shrink", func(r report) bool {
			return r.start().After(shrunk.Add(3*time.Second)) && r.By["a2"]+r.By["a3"] == 0
		})
	}
	const wantLocal = 100 * (100.0 / 400) / (1.0 / 2) // Envoy: upstream share / caller share of az-a
	r := ca.collectCalls(t, shareCalls)
	within(t, fmt.Sprintf("%s, az-a shrunk to one provider: share kept in az-a (%d calls)", ca.name, successes(r)),
		zoneShare(r, zoneA), wantLocal, shareTol(wantLocal, successes(r), edgeAllowance))
	if r := cb.collectCalls(t, shareCalls); atHome(r, zoneB, 99) != nil {
		t.Errorf("%s, az-a shrunk: %v; want every call at home", cb.name, r)
	}

	// az-a down: everything to az-b, no failed call.
	ps[0].stop()
	e.waitInstancesOf(t, lv.service, reactDeadline, "az-a down", func(list []instance) bool { return len(list) == 2 })
	down := time.Now()
	ca.until(t, reactDeadline, "past az-a going down", func(r report) bool { return r.start().After(down.Add(3 * time.Second)) })
	if r := ca.collectCalls(t, shareCalls/3); r.By["a1"]+r.By["a2"]+r.By["a3"] != 0 {
		t.Errorf("%s, az-a down: %v; want every call in az-b", ca.name, r)
	}

	// az-a back: its calls come home.
	var back []*provider
	for _, p := range ps[:3] {
		back = append(back, e.restart(t, p))
	}
	e.waitAppRegistered(t, append(back, ps[3:]...)...)
	for _, p := range back {
		ca.finds(t, p)
	}
	ca.until(t, reactDeadline, "at home again", func(r report) bool { return atHome(r, zoneA, 99) == nil && successes(r) > 0 })
	if r := ca.collectCalls(t, shareCalls); atHome(r, zoneA, 99) != nil {
		t.Errorf("%s, az-a back: %v; want at least 99 %% at home", ca.name, r)
	}
	for _, c := range []*consumer{ca, cb} {
		noErrors(t, c, c.finish(t))
	}
}

// zoneShare returns the share, in percent, of r's successful calls that
// went to the providers named.
func zoneShare(r report, names []string) float64 {
	s := 0.0
	for _, n := range names {
		s += r.share(n)
	}
	return s
}

// atHome returns an error unless at least min percent of r's successful
// calls went to the providers of home.
func atHome(r report, home []string, min float64) error {
	if got := zoneShare(r, home); !(got >= min) || successes(r) == 0 {
		return fmt.Errorf("%.2f %% of %d calls at home, want at least %.0f %%", got, successes(r), min)
	}
	return nil
}

// Zones with no callers configured, end to end: four providers in az-a and
// two in az-b at interface level, a consumer in az-a that names no
// callers. Balanced, every call stays home. Then a3 and a4 stop and
// deregister: the consumer remembers that az-a was provisioned with four
// providers (lb.zone.memory, 10 min by default), so its callers are 4/6 of
// the calls for 2/4 of the capacity, and az-a keeps Envoy's
// (2/4) / (4/6) = 75 % of its calls, spilling a quarter. Negative control:
// a consumer with lb.zone.memory=0 takes the callers from the providers
// listed now (2 and 2), and keeps every call home.
func TestZoneSpillsWhenHalfItsProvidersLeaveWithoutCallers(t *testing.T) {
	parallel(t) // schedule_test.go
	e := setup(t)
	zoneA, zoneB := []string{"la1", "la2", "la3", "la4"}, []string{"lb1", "lb2"}
	var specs []providerSpec
	for _, n := range zoneA {
		specs = append(specs, providerSpec{name: n, args: []string{"-zone", "az-a"}})
	}
	for _, n := range zoneB {
		specs = append(specs, providerSpec{name: n, args: []string{"-zone", "az-b"}})
	}
	ps := e.startRegistered(t, specs...)
	args := []string{"-zone", "az-a", "-param", "lb.zone.min-cluster-size=2"}
	cs := e.startConsumers(t, 4,
		consumerSpec{balancer: "warmrandom", name: "consumer in az-a, callers learned", args: args},
		consumerSpec{balancer: "warmrandom", name: "consumer in az-a, no memory", args: append(args, "-param", "lb.zone.memory=0")})
	learned, control := cs[0], cs[1]
	for _, c := range cs {
		c.until(t, reactDeadline, "reaching az-a", func(r report) bool { return all(r, zoneA...) })
		if r := c.collectCalls(t, shareCalls/2); atHome(r, zoneA, 99) != nil {
			t.Errorf("%s, zones balanced: %v; want every call at home", c.name, r)
		}
	}

	ps[2].stop()
	ps[3].stop()
	e.waitInstances(t, reactDeadline, "az-a down to two", func(list []instance) bool {
		n := 0
		for _, in := range list {
			for _, p := range ps[:4] {
				if in.Port == p.spec.port {
					n++
				}
			}
		}
		return n == 2
	})
	shrunk := time.Now()
	for _, c := range cs {
		c.until(t, reactDeadline, "past the shrink", func(r report) bool {
			return r.start().After(shrunk.Add(3*time.Second)) && r.By["la3"]+r.By["la4"] == 0
		})
	}
	const wantLocal = 100 * (2.0 / 4) / (4.0 / 6)
	r := learned.collectCalls(t, shareCalls)
	within(t, fmt.Sprintf("%s, az-a down to half: share kept in az-a (%d calls)", learned.name, successes(r)),
		zoneShare(r, zoneA), wantLocal, shareTol(wantLocal, successes(r), edgeAllowance))
	t.Run("negative_control_no_memory", func(t *testing.T) {
		r := control.collectCalls(t, shareCalls)
		if got := zoneShare(r, zoneA); math.Abs(got-wantLocal) <= shareTol(wantLocal, successes(r), edgeAllowance) {
			t.Errorf("%s kept %.1f %% at home, within the learned share's tolerance: the check proves nothing", control.name, got)
		}
	})
	for _, c := range cs {
		noErrors(t, c, c.finish(t))
	}
}
