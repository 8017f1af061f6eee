package sim

import (
	"fmt"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	// dubbo-go's built-in balancers, for comparison.
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/aliasmethod"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/iwrr"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/leastactive"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/random"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/roundrobin"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"

	"github.com/dubbogo-lb/lb/extension"
	"github.com/dubbogo-lb/lb/internal/assembly/balancers"
	"github.com/dubbogo-lb/lb/loadbalance/fewestactive"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/loadbalance/loadaware"
)

// Factory builds a fresh balancer on env: the simulation's virtual clocks
// and a source seeded for the run.
type Factory func(env lbenv.Env) loadbalance.LoadBalance

// factories build this module's balancers on the virtual clocks and the
// run's seeded source, by the name they are registered under
// (balancers.All), and the variants below. A balancer registered with
// dubbo-go but missing here still runs (the registered singleton), on its
// own clock. The filter and the balancers must share the monotonic clock:
// they read call ages, windows, averages and failures that the filter
// stamped. ringhash hashes the key each call carries (Scenario.Keys).
var factories = func() map[string]Factory {
	m := map[string]Factory{
		// fewestactive scanning every provider at every size: the exact pick
		// that fewestactive gives up above ScanUpTo providers.
		FewestactiveScan: func(env lbenv.Env) loadbalance.LoadBalance {
			return fewestactive.New(fewestactive.Options{ScanUpTo: -1, Env: env})
		},
		// gRPC WRR's and Dubbo Java's adaptive cost on the same reports, for
		// comparison.
		LoadawareWRR: func(env lbenv.Env) loadbalance.LoadBalance {
			return loadaware.New(loadaware.Options{Cost: loadaware.CostWRR, Env: env})
		},
		LoadawareJava: func(env lbenv.Env) loadbalance.LoadBalance {
			return loadaware.New(loadaware.Options{Cost: loadaware.CostJava, Env: env})
		},
	}
	for _, b := range balancers.All {
		m[b.Name] = func(env lbenv.Env) loadbalance.LoadBalance { return b.New(env) }
	}
	return m
}()

// LoadawareWRR and LoadawareJava name loadaware with gRPC WRR's and Dubbo
// Java's adaptive cost in the simulator (not registered with dubbo-go),
// FewestactiveScan fewestactive with an exact scan at every size.
const (
	LoadawareWRR     = "loadaware-wrr"
	LoadawareJava    = "loadaware-java"
	FewestactiveScan = "fewestactive-scan"
)

// Ours reports whether name is one of this module's balancers, which
// outlier ejection serves.
func Ours(name string) bool {
	_, ok := factories[name]
	return ok
}

// dubboBuiltins are dubbo-go's balancers the simulator knows: they read the
// wall clock only for warmup, which dubbo-go v3.3 never applies to
// registry-discovered providers, so virtual time does not matter to them.
// (dubbo-go's p2c is left out: it reads the adaptive-service filter's
// metrics, which nothing here feeds, and would only pick at random.)
var dubboBuiltins = map[string]string{
	"random":                        "",
	"roundrobin":                    "",
	"aliasmethod":                   "",
	"interleavedweightedroundrobin": "",
	"leastactive":                   "dubbo-go's active counts fed as if its active filter were configured",
}

// DefaultBalancers are the balancers a scenario compares unless told
// otherwise, those that are registered: dubbo-go's random and leastactive
// as the baseline, then this module's.
var DefaultBalancers = []string{"random", "leastactive", "warmrandom", "fewestactive", "swrr", "ringhash", "lalb", "rtadaptive", "loadaware", LoadawareWRR, LoadawareJava, "shortestresponse", "adaptive"}

// Available returns the names of DefaultBalancers that are registered with
// dubbo-go, and those that are not.
func Available() (have, missing []string) {
	for _, name := range DefaultBalancers {
		if _, ok := factories[name]; ok || extension.CheckBalancer(name) == nil {
			have = append(have, name)
		} else {
			missing = append(missing, name)
		}
	}
	return have, missing
}

// balancer is a balancer ready for one run.
type balancer struct {
	lb loadbalance.LoadBalance
	// dubboActive feeds dubbo-go's own active counters.
	dubboActive bool
	// note says how the balancer runs, when that matters to its figures.
	note string
}

// newBalancer builds the balancer called name for one run.
func newBalancer(name string, env lbenv.Env) (balancer, error) {
	if f, ok := factories[name]; ok {
		return balancer{lb: f(env)}, nil
	}
	if name == "" {
		return balancer{}, fmt.Errorf("no balancer name")
	}
	if err := extension.CheckBalancer(name); err != nil {
		return balancer{}, err
	}
	lb := dgext.GetLoadbalance(name)
	if note, ok := dubboBuiltins[name]; ok {
		return balancer{lb: lb, dubboActive: name == "leastactive", note: note}, nil
	}
	return balancer{lb: lb, note: "runs on its own clock, not the virtual one: time-based figures are unreliable"}, nil
}
