package warmrandom

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
)

// Dubbo decides "weighted or not" from the first invoker alone; equal first
// weights must not make us uniform.
func TestWeightedEvenWhenTheFirstTwoAreEqual(t *testing.T) {
	const picks = 10_000
	got := lbtest.Shares(New(Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}}), lbtest.Weighted("1", "1", "2"), lbtest.Call("Say"), picks)
	assert.InDelta(t, 50, got[2], lbtest.Tol(0.5, picks), "uniform would give 33.3 %%: %v", got)
}
