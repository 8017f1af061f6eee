package it

import (
	"strconv"
	"strings"
	"testing"
)

// A provider registered in the real Nacos with every consumer-only key it
// can set (its zone as the consumer's, zones at any size, every caller in
// its zone, ejection off, a fallback and a hash key of its choosing) and
// huge ring parameters, beside four honest providers, two in az-a and two
// in az-b, one of which lies in its load reports (cpu 1e-99, eps 1e12);
// the hostile one fails every call. The consumers keep their own policy
// (urlparam.Whose), with retries off so that every call the hostile
// provider gets is a failed call:
//
//   - consumers in az-a send no call to it, so none fails;
//   - consumers with no zone eject it after its first failures, so almost
//     none fails;
//   - each logs one WARN naming the keys it ignored, and its /metrics and
//     lb.json answer 200 throughout; loadaware's page shows the liar's
//     report clamped.
//
// Negative control: dubbo-go's random, in az-a by the same flags, neither
// routes by zone nor ejects, and fails about a quarter of its calls.
func TestHostileProviderSteersNothing(t *testing.T) {
	parallel(t) // schedule_test.go
	e := setup(t)
	hostile := []string{"-zone", "evil", "-fail-at", "0s",
		"-param", "lb.zone.local=evil", "-param", "lb.zone.min-cluster-size=0", "-param", "lb.zone.callers=evil:1",
		"-param", "outlier.rules=none", "-param", "methods.Hello.outlier.rules=none",
		"-param", "loadbalance.fallback=roundrobin", "-param", "hash.attachment=x",
		"-param", "hash.nodes=100000000", "-param", "hash.arguments=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"}
	e.startRegistered(t,
		providerSpec{name: "a1", args: []string{"-zone", "az-a"}},
		providerSpec{name: "a2", args: []string{"-zone", "az-a"}},
		providerSpec{name: "b1", args: []string{"-zone", "az-b"}},
		providerSpec{name: "liar", args: []string{"-zone", "az-b", "-hostile-load-report", "cpu:1e-99,cap:1e-99,qps:1e-99,eps:1e12"}},
		providerSpec{name: "evil", args: hostile})
	conf := editConsumerYAML(t, "        retries: 2\n", "        retries: 0\n", "consumer-hostile.yaml")
	zoned := []string{"-conf", conf, "-zone", "az-a", "-param", "lb.zone.min-cluster-size=2"}
	type watched struct {
		c                *consumer
		metrics, pageURL string
	}
	start := func(n int, balancer, name string, args []string) watched {
		m, d := strconv.Itoa(freePort(t)), "127.0.0.1:"+strconv.Itoa(freePort(t))
		c := e.startConsumers(t, n, consumerSpec{balancer: balancer, name: name,
			args: append(append([]string(nil), args...), "-metrics", m, "-debug", d)})[0]
		return watched{c, m, "http://" + d + "/lb.json"}
	}
	var inZone, noZone []watched
	for _, b := range balancers(t, "warmrandom", "swrr", "ringhash", "lalb", "shortestresponse", "fewestactive") {
		inZone = append(inZone, start(2, b, b+" in az-a", zoned))
	}
	for _, b := range balancers(t, "warmrandom", "swrr", "ringhash", "loadaware") {
		noZone = append(noZone, start(3, b, b+" without a zone", []string{"-conf", conf}))
	}
	control := start(3, "random", "random in az-a (control)", zoned)

	const calls = 600
	views := func(w watched) {
		scrape(t, w.metrics) // fails t unless it parses
		if body := get(t, w.pageURL); !strings.Contains(body, `"`) {
			t.Errorf("%s: lb.json %q", w.c.name, body)
		}
	}
	for _, w := range inZone {
		r := w.c.collectCalls(t, calls)
		views(w)
		if r.Errors != 0 || r.By["b1"]+r.By["liar"] != 0 {
			t.Errorf("%s: %v; want every call in az-a and none failed (no call to the hostile provider)", w.c.name, r)
		} else {
			t.Logf("%s: %v", w.c.name, r)
		}
	}
	for _, w := range noZone {
		w.c.collectCalls(t, calls/3) // the hostile provider's first failures, and its ejection
		r := w.c.collectCalls(t, calls)
		views(w)
		if max := r.Calls/100 + ejectionAllowance; r.Errors > max {
			t.Errorf("%s: %d of %d calls failed, want at most %d: the hostile provider was not ejected (%s)", w.c.name, r.Errors, r.Calls, max, r.LastError)
		} else {
			t.Logf("%s: %d of %d calls failed after the first %d", w.c.name, r.Errors, r.Calls, calls/3)
		}
	}
	t.Run("negative_control_random", func(t *testing.T) {
		r := control.c.collectCalls(t, calls)
		views(control)
		if r.Errors == 0 {
			t.Errorf("%s: %v; no call failed: the checks prove nothing", control.c.name, r)
		} else {
			t.Logf("%s: %d of %d calls failed", control.c.name, r.Errors, r.Calls)
		}
	})
	// The liar's report, clamped (eps 1e12 to 1e9), on the page of the
	// balancer that asks for reports.
	if la := noZone[len(noZone)-1]; la.c.balancer == "loadaware" {
		if body := get(t, la.pageURL); !strings.Contains(body, `"eps": 1000000000`) {
			t.Errorf("%s: lb.json shows no clamped report of the liar:\n%s", la.c.name, tail(body, 40))
		}
	}
	for _, w := range append(inZone, noZone...) {
		views(w)
		if !strings.Contains(w.c.log.String(), "registers ") || !strings.Contains(w.c.log.String(), "which only the consumer sets; ignored") {
			t.Errorf("%s: no WARN line about the hostile provider's keys; log:\n%s", w.c.name, tail(w.c.log.String(), 20))
		}
		w.c.stop()
	}
	control.c.stop()
}
