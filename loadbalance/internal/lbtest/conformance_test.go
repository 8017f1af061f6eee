package lbtest_test

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"

	"github.com/dubbogo-lb/lb/loadbalance/adaptive"
	"github.com/dubbogo-lb/lb/loadbalance/fewestactive"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lalb"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/loadbalance/loadaware"
	"github.com/dubbogo-lb/lb/loadbalance/ringhash"
	"github.com/dubbogo-lb/lb/loadbalance/rtadaptive"
	"github.com/dubbogo-lb/lb/loadbalance/shortestresponse"
	"github.com/dubbogo-lb/lb/loadbalance/swrr"
	"github.com/dubbogo-lb/lb/loadbalance/warmrandom"
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
			New: func(e lbenv.Env) lb {
				return warmrandom.New(warmrandom.Options{Env: e})
			}}},
		{swrr.Name, lbtest.Subject{WarmShares: true, ExactShares: true,
			New: func(e lbenv.Env) lb { return swrr.New(swrr.Options{Env: e}) }}},
		{fewestactive.Name, lbtest.Subject{WarmShares: true,
			New: func(e lbenv.Env) lb {
				return fewestactive.New(fewestactive.Options{Env: e})
			}}},
		{fewestactive.Name + "-p2c", lbtest.Subject{WarmShares: true,
			New: func(e lbenv.Env) lb {
				return fewestactive.New(fewestactive.Options{Choices: 2, Env: e})
			}}},
		{rtadaptive.Name, lbtest.Subject{WarmShares: true,
			New: func(e lbenv.Env) lb {
				return rtadaptive.New(rtadaptive.Options{Env: e})
			}}},
		{loadaware.Name, lbtest.Subject{WarmShares: true,
			New: func(e lbenv.Env) lb {
				return loadaware.New(loadaware.Options{Env: e})
			}}},
		{loadaware.Name + "-java", lbtest.Subject{WarmShares: true,
			New: func(e lbenv.Env) lb {
				return loadaware.New(loadaware.Options{Cost: loadaware.CostJava, Env: e})
			}}},
		{shortestresponse.Name, lbtest.Subject{WarmShares: true,
			New: func(e lbenv.Env) lb {
				return shortestresponse.New(shortestresponse.Options{Env: e})
			}}},
		// Java's adaptive draws its two candidates uniformly: weights
		// weigh in its cost and its ties, its shares do not follow them.
		{adaptive.Name, lbtest.Subject{
			New: func(e lbenv.Env) lb {
				return adaptive.New(adaptive.Options{Env: e})
			}}},
		{lalb.Name, lbtest.Subject{
			New: func(e lbenv.Env) lb { return lalb.New(lalb.Options{Env: e}) }}},
		{ringhash.Name, lbtest.Subject{Keyed: true, IgnoresWeights: true,
			New: func(e lbenv.Env) lb { return ringhash.New(ringhash.Options{Env: e}) }}},
		{ringhash.Name + "-bounded", lbtest.Subject{Keyed: true, IgnoresWeights: true,
			New: func(e lbenv.Env) lb {
				return ringhash.New(ringhash.Options{BalanceFactor: 1.25, Env: e})
			}}},
	} {
		t.Run(c.name, func(t *testing.T) { lbtest.Conformance(t, c.Subject) })
	}
}
