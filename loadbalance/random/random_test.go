package random

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// Dubbo decides "weighted or not" from the first invoker alone; equal first
// weights must not make us uniform.
func TestWeightedEvenWhenTheFirstTwoAreEqual(t *testing.T) {
	got := lbtest.Shares(New(Options{}), lbtest.Weighted("1", "1", "2"), lbtest.Call("Say"), 100_000)
	assert.InDelta(t, 50, got[2], 1.5)
}
