package lbtest_test

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"

	"github.com/dubbogo-lb/lb/loadbalance/adaptive"
	"github.com/dubbogo-lb/lb/loadbalance/fewestactive"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lalb"
	"github.com/dubbogo-lb/lb/loadbalance/loadaware"
	"github.com/dubbogo-lb/lb/loadbalance/ringhash"
	"github.com/dubbogo-lb/lb/loadbalance/rtadaptive"
	"github.com/dubbogo-lb/lb/loadbalance/shortestresponse"
	"github.com/dubbogo-lb/lb/loadbalance/swrr"
	"github.com/dubbogo-lb/lb/loadbalance/warmrandom"
	"github.com/dubbogo-lb/lb/warmup"
)

// TestConformance runs the suite on every balancer of the module, in each
// of its modes, imported under the names they register. A new balancer adds
// its row here.
func TestConformance(t *testing.T) {
	type lb = loadbalance.LoadBalance
	for _, c := range []struct {
		name string
		lbtest.Subject
	}{
		{warmrandom.Name, lbtest.Subject{WarmShares: true,
			New: func(w warmup.Options, r func() uint64) lb {
				return warmrandom.New(warmrandom.Options{Warmup: w, Rand: r})
			}}},
		{swrr.Name, lbtest.Subject{WarmShares: true, ExactShares: true,
			New: func(w warmup.Options, r func() uint64) lb { return swrr.New(swrr.Options{Warmup: w, Rand: r}) }}},
		{fewestactive.Name, lbtest.Subject{WarmShares: true,
			New: func(w warmup.Options, r func() uint64) lb {
				return fewestactive.New(fewestactive.Options{Warmup: w, Rand: r})
			}}},
		{fewestactive.Name + "-p2c", lbtest.Subject{WarmShares: true,
			New: func(w warmup.Options, r func() uint64) lb {
				return fewestactive.New(fewestactive.Options{Choices: 2, Warmup: w, Rand: r})
			}}},
		{rtadaptive.Name, lbtest.Subject{WarmShares: true,
			New: func(w warmup.Options, r func() uint64) lb {
				return rtadaptive.New(rtadaptive.Options{Warmup: w, Rand: r})
			}}},
		{loadaware.Name, lbtest.Subject{WarmShares: true,
			New: func(w warmup.Options, r func() uint64) lb {
				return loadaware.New(loadaware.Options{Warmup: w, Rand: r})
			}}},
		{loadaware.Name + "-java", lbtest.Subject{WarmShares: true,
			New: func(w warmup.Options, r func() uint64) lb {
				return loadaware.New(loadaware.Options{Cost: loadaware.CostJava, Warmup: w, Rand: r})
			}}},
		{shortestresponse.Name, lbtest.Subject{WarmShares: true,
			New: func(w warmup.Options, r func() uint64) lb {
				return shortestresponse.New(shortestresponse.Options{Warmup: w, Rand: r})
			}}},
		// Java's adaptive draws its two candidates uniformly: weights
		// weigh in its cost and its ties, its shares do not follow them.
		{adaptive.Name, lbtest.Subject{
			New: func(w warmup.Options, r func() uint64) lb {
				return adaptive.New(adaptive.Options{Warmup: w, Rand: r})
			}}},
		{lalb.Name, lbtest.Subject{
			New: func(w warmup.Options, r func() uint64) lb { return lalb.New(lalb.Options{Warmup: w, Rand: r}) }}},
		{ringhash.Name, lbtest.Subject{Keyed: true, IgnoresWeights: true,
			New: func(w warmup.Options, _ func() uint64) lb { return ringhash.New(ringhash.Options{Warmup: w}) }}},
		{ringhash.Name + "-bounded", lbtest.Subject{Keyed: true, IgnoresWeights: true,
			New: func(w warmup.Options, _ func() uint64) lb {
				return ringhash.New(ringhash.Options{BalanceFactor: 1.25, Warmup: w})
			}}},
	} {
		t.Run(c.name, func(t *testing.T) { lbtest.Conformance(t, c.Subject) })
	}
}
