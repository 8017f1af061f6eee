package lalb_test

import (
	"fmt"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"

	"github.com/dubbogo-lb/lb/loadbalance/lalb"
)

// A balancer with options of its own is registered under a name of its
// own, as one singleton (dubbo-go calls the factory on every call), and
// picked with loadbalance: lalb-p2 in the consumer's configuration.
func ExampleNew() {
	lb := lalb.New(lalb.Options{Tuning: lalb.Tuning{P: 2}})
	dgext.SetLoadbalance("lalb-p2", func() loadbalance.LoadBalance { return lb })
	fmt.Println(dgext.GetLoadbalance("lalb-p2") == lb)
	// Output: true
}
