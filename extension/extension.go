// Package extension is the one import a dubbo-go application adds to use
// this module:
//
//	import _ "github.com/dubbogo-lb/lb/extension"
//
// Importing it registers, with dubbo-go's own extension registry, the
// active-count filter and every balancer of the module under the names
// below, none of which collides with a dubbo-go built-in (random,
// roundrobin, leastactive, consistenthashing, p2c, aliasmethod,
// interleavedweightedroundrobin). Pick a balancer per reference or per
// method with loadbalance: NAME in the dubbo-go configuration, and enable the
// filter with filter: lbactive.
package extension

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	dgfilter "dubbo.apache.org/dubbo-go/v3/filter"

	"github.com/dubbogo-lb/lb/filter"
	"github.com/dubbogo-lb/lb/loadbalance/chash"
	"github.com/dubbogo-lb/lb/loadbalance/lalb"
	"github.com/dubbogo-lb/lb/loadbalance/leastactive"
	"github.com/dubbogo-lb/lb/loadbalance/random"
	"github.com/dubbogo-lb/lb/loadbalance/rtadaptive"
	"github.com/dubbogo-lb/lb/loadbalance/swrr"
)

// FilterName is the name of the active-count filter.
const FilterName = filter.Name

// balancers lists the names this package registers.
var balancers []string

func init() {
	active := filter.New(filter.Options{})
	dgext.SetFilter(FilterName, func() dgfilter.Filter { return active })

	// One singleton per balancer: dubbo-go calls the factory on every
	// invocation, and each balancer keeps its state per (service, method).
	register(random.Name, random.New(random.Options{}))
	register(chash.Name, chash.New(chash.Options{}))
	register(leastactive.Name, leastactive.New(leastactive.Options{}))
	register(swrr.Name, swrr.New(swrr.Options{}))
	register(lalb.Name, lalb.New(lalb.BalancerOptions{}))
	register(rtadaptive.Name, rtadaptive.New(rtadaptive.Options{}))
}

func register(name string, lb loadbalance.LoadBalance) {
	balancers = append(balancers, name)
	dgext.SetLoadbalance(name, func() loadbalance.LoadBalance { return lb })
}

// Balancers returns the names of the balancers this package registered.
func Balancers() []string {
	out := append([]string(nil), balancers...)
	sort.Strings(out)
	return out
}

// CheckBalancer returns an error naming the registered balancers when name
// is not one of them, nor a balancer registered by anyone else with
// dubbo-go. An empty name is dubbo-go's default (random) and is valid.
// Call it at start-up on configured names: dubbo-go itself only notices an
// unknown name on the first call, with a panic.
func CheckBalancer(name string) error {
	if name == "" || slices.Contains(dgext.GetAllLoadbalanceNames(), name) {
		return nil
	}
	others := dgext.GetAllLoadbalanceNames()
	sort.Strings(others)
	return fmt.Errorf("unknown load balancer %q; registered: %s", name, strings.Join(others, ", "))
}
