package it

import (
	"strconv"
	"testing"
	"time"
)

// TestProviderLoadMovesTrafficFromCPUStarvedProvider runs three sample
// providers with the lbload filter, one of them starved of CPU by two
// goroutines that burn it (-burn-cpu 2), and three consumer processes with
// the loadaware balancer. It checks that each consumer receives the
// providers' load reports (a round trip through dubbo-go's triple
// trailers between real processes), that the starved provider reports the
// highest utilization, that it gets a share of the calls well below a
// blind balancer's third, and that no call fails.
func TestProviderLoadMovesTrafficFromCPUStarvedProvider(t *testing.T) {
	e := setup(t)
	ps := e.startRegistered(t,
		providerSpec{name: "calm1", latency: "5ms"},
		providerSpec{name: "calm2", latency: "5ms"},
		providerSpec{name: "starved", latency: "5ms", args: []string{"-burn-cpu", "2"}},
	)
	addr := func(p *provider) string { return "127.0.0.1:" + strconv.Itoa(p.spec.port) }
	starved := addr(ps[2])
	cs := e.startConsumers(t, 3,
		consumerSpec{balancer: "loadaware", name: "consumer 1"},
		consumerSpec{balancer: "loadaware", name: "consumer 2"},
		consumerSpec{balancer: "loadaware", name: "consumer 3"},
	)
	// Every consumer gets every provider's report, and the starved one
	// reports the most: generous deadlines, the reports come with calls.
	for _, c := range cs {
		r := c.until(t, 3*time.Minute, "receiving the load of every provider, the starved one the highest", func(r report) bool {
			if len(r.Load) < len(ps) {
				return false
			}
			for _, p := range ps[:2] {
				if r.Load[addr(p)] >= r.Load[starved] {
					return false
				}
			}
			return true
		})
		t.Logf("%s: reported utilization %v", c.name, r.Load)
	}
	// Past the blackout (3 s) and some adaptation, measure the shares of
	// all consumers together.
	var rs []report
	for _, c := range cs {
		c.collectCalls(t, 500)
	}
	for _, c := range cs {
		rs = append(rs, c.collectCalls(t, shareCalls/3))
	}
	m := merge(rs)
	n := successes(m)
	blind := 100.0 / 3
	bound := blind - shareTol(blind, n, edgeAllowance)
	got := m.share(ps[2].spec.name)
	if got > bound {
		t.Errorf("the CPU-starved provider got %.1f%% of %d calls, want below %.1f%% (a blind balancer's third less the noise of %d calls); %v", got, n, bound, n, m)
	} else {
		t.Logf("the CPU-starved provider got %.1f%% of %d calls (a blind balancer: %.1f%%, bound %.1f%%); %v", got, n, blind, bound, m)
	}
	for _, c := range cs {
		noErrors(t, c, c.finish(t))
	}
}
