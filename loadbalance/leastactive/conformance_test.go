package leastactive

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

func TestConformance(t *testing.T) {
	for _, choices := range []int{0, 2} {
		lbtest.Conformance(t, lbtest.Subject{New: func() loadbalance.LoadBalance { return New(Options{Choices: choices}) }})
	}
}
