package swrr

import (
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

func TestConformance(t *testing.T) {
	lbtest.Conformance(t, lbtest.Subject{New: func() loadbalance.LoadBalance { return New(Options{}) }})
}
