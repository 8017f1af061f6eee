package chash

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

func TestConformance(t *testing.T) {
	for _, factor := range []float64{0, 1.25} {
		lbtest.Conformance(t, lbtest.Subject{
			New:   func() loadbalance.LoadBalance { return New(Options{BalanceFactor: factor}) },
			Keyed: true, IgnoresWeights: true,
		})
	}
}
