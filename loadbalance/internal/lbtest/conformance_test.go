package lbtest_test

import (
	"maps"
	"slices"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"

	"github.com/dubbogo-lb/lb/internal/assembly/balancers"
	"github.com/dubbogo-lb/lb/loadbalance/fewestactive"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/loadbalance/loadaware"
	"github.com/dubbogo-lb/lb/loadbalance/ringhash"
)

// TestConformance runs the suite on every balancer of the module
// (balancers.All, under the names they register) and on the variants
// below. Each balancer needs its row of traits in traits: a new one
// fails here until it has it.
func TestConformance(t *testing.T) {
	type lb = loadbalance.LoadBalance
	traits := map[string]lbtest.Subject{
		"warmrandom":       {WarmShares: true},
		"swrr":             {WarmShares: true, ExactShares: true},
		"fewestactive":     {WarmShares: true},
		"rtadaptive":       {WarmShares: true},
		"loadaware":        {WarmShares: true},
		"shortestresponse": {WarmShares: true},
		// Java's adaptive draws its two candidates uniformly: weights
		// weigh in its cost and its ties, its shares do not follow them.
		"adaptive": {},
		"lalb":     {},
		"ringhash": {Keyed: true, IgnoresWeights: true},
	}
	subjects := map[string]lbtest.Subject{
		fewestactive.Name + "-p2c": {WarmShares: true, New: func(e lbenv.Env) lb {
			return fewestactive.New(fewestactive.Options{Choices: 2, Env: e})
		}},
		loadaware.Name + "-java": {WarmShares: true, New: func(e lbenv.Env) lb {
			return loadaware.New(loadaware.Options{Cost: loadaware.CostJava, Env: e})
		}},
		ringhash.Name + "-bounded": {Keyed: true, IgnoresWeights: true, New: func(e lbenv.Env) lb {
			return ringhash.New(ringhash.Options{BalanceFactor: 1.25, Env: e})
		}},
	}
	for _, b := range balancers.All {
		s, ok := traits[b.Name]
		if !ok {
			t.Errorf("%s: no row in traits", b.Name)
			continue
		}
		s.New = func(e lbenv.Env) lb { return b.New(e) }
		subjects[b.Name] = s
	}
	for _, name := range slices.Sorted(maps.Keys(subjects)) {
		t.Run(name, func(t *testing.T) { lbtest.Conformance(t, subjects[name]) })
	}
}
