package lbtest_test

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"

	"github.com/dubbogo-lb/lb/loadbalance/chash"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lalb"
	"github.com/dubbogo-lb/lb/loadbalance/leastactive"
	"github.com/dubbogo-lb/lb/loadbalance/random"
	"github.com/dubbogo-lb/lb/loadbalance/rtadaptive"
	"github.com/dubbogo-lb/lb/loadbalance/swrr"
	"github.com/dubbogo-lb/lb/warmup"
)

// TestConformance runs the suite on every balancer of the module, in each
// of its modes. A new balancer adds its row here.
func TestConformance(t *testing.T) {
	type lb = loadbalance.LoadBalance
	for _, c := range []struct {
		name string
		lbtest.Subject
	}{
		{random.Name, lbtest.Subject{WarmShares: true,
			New: func(w warmup.Options) lb { return random.New(random.Options{Warmup: w}) }}},
		{swrr.Name, lbtest.Subject{WarmShares: true, ExactShares: true,
			New: func(w warmup.Options) lb { return swrr.New(swrr.Options{Warmup: w}) }}},
		{leastactive.Name, lbtest.Subject{WarmShares: true,
			New: func(w warmup.Options) lb { return leastactive.New(leastactive.Options{Warmup: w}) }}},
		{leastactive.Name + "-p2c", lbtest.Subject{WarmShares: true,
			New: func(w warmup.Options) lb { return leastactive.New(leastactive.Options{Choices: 2, Warmup: w}) }}},
		{rtadaptive.Name, lbtest.Subject{WarmShares: true,
			New: func(w warmup.Options) lb { return rtadaptive.New(rtadaptive.Options{Warmup: w}) }}},
		{lalb.Name, lbtest.Subject{
			New: func(w warmup.Options) lb { return lalb.New(lalb.Options{Warmup: w}) }}},
		{chash.Name, lbtest.Subject{Keyed: true, IgnoresWeights: true,
			New: func(w warmup.Options) lb { return chash.New(chash.Options{Warmup: w}) }}},
		{chash.Name + "-bounded", lbtest.Subject{Keyed: true, IgnoresWeights: true,
			New: func(w warmup.Options) lb { return chash.New(chash.Options{BalanceFactor: 1.25, Warmup: w}) }}},
	} {
		t.Run(c.name, func(t *testing.T) { lbtest.Conformance(t, c.Subject) })
	}
}
