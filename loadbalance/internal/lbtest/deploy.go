package lbtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Deploy is the workload of BenchDeploy: a rolling deploy seen by one
// consumer.
type Deploy struct {
	// Batch is how many providers each push replaces: as many of the old
	// version leave (at random) and as many new ones come, each at a
	// random place of the list (dubbo-go keeps the order of those that
	// stay: see the member design note).
	Batch int
	// Warm gives the new providers a start timestamp at their push, so
	// that they warm up for the default period (10 min), as providers
	// that register a timestamp do: their weights then move at every
	// warmup refresh. Otherwise they are warm at once.
	Warm bool
}

const (
	// deployStep is the warmup refresh step (the default): the injected
	// wall clock moves by it three times a push.
	deployStep = 100 * time.Millisecond
	// deployCalls is the consumer's traffic in a push's 300 ms: 2 000
	// Selects (6 700 calls a second), a third after each step.
	deployCalls = 2000
	// deployMethods and deployCallers: the service's methods, called in
	// turn, and the goroutines that call.
	deployMethods, deployCallers = 4, 4
)

// BenchDeploy benchmarks a rolling deploy at each size of sizes, for each
// balancer that lbs(env) returns (made anew for each run, on the injected
// clocks env). An op is one push of the registry, 300 ms of the injected
// wall clock: the list changes by d.Batch providers, and the clock moves
// three times by the warmup refresh step; after the push and after each
// step, 4 goroutines make a third of deployCalls Selects over 4 methods
// (those after the push meet the builds the change starts, off the call's
// path), then the benchmark waits for the builds (WaitBuilds), as they end
// well within a step. It reports the process's CPU a push (cpu-ns/op:
// every build and Select, garbage collection included, whatever else the
// machine runs), the Selects' 50th and 99th percentile latencies (ns), and
// allocations a push.
func BenchDeploy(b *testing.B, sizes []int, lbs func(env lbenv.Env) []Named, d Deploy) {
	for _, n := range sizes {
		for k := range lbs(lbenv.Env{}) {
			clock := NewClock(time.Unix(1_700_000_000, 0))
			lb := lbs(lbenv.Env{Wall: clock.Now})[k]
			b.Run(fmt.Sprintf("%s/N=%d", lb.Name, n), func(b *testing.B) { runDeploy(b, n, lb, clock, d) })
		}
	}
}

// runDeploy runs b.N pushes of d on lb, n providers.
func runDeploy(b *testing.B, n int, lb Named, clock *Clock, d Deploy) {
	invs := make([]base.Invocation, deployMethods)
	list := Mixed(n)
	for m := range invs {
		invs[m] = Call("Deploy" + strconv.Itoa(m))
		// Counted once, as the lbactive filter would: settles the
		// missing-filter watch of each method.
		pr := rpcstatus.Of(list[0].GetURL())
		pr.Begin(pr.Method(invs[m].MethodName()), rpcstatus.Nanotime()).End(rpcstatus.Nanotime(), false)
		lb.LB.Select(list, invs[m])
	}
	WaitBuilds(lb.LB)
	lists := deployLists(list, b.N, clock.Now(), d)
	lat := make([][]int64, deployCallers)
	for g := range lat {
		lat[g] = make([]int64, 0, b.N*deployCalls/deployCallers+deployCalls)
	}
	calls := func(list []base.Invoker) {
		var wg sync.WaitGroup
		for g := range deployCallers {
			wg.Go(func() {
				for i := range deployCalls / 3 / deployCallers {
					t0 := time.Now()
					sinkInvokers[g] = lb.LB.Select(list, invs[(g+i)%deployMethods])
					lat[g] = append(lat[g], int64(time.Since(t0)))
				}
			})
		}
		wg.Wait()
		WaitBuilds(lb.LB)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for _, l := range lists {
		calls(l)
		for range 2 {
			clock.Advance(deployStep)
			calls(l)
		}
		clock.Advance(deployStep)
	}
	b.StopTimer()
	if cpu0 >= 0 {
		b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2]), "select-p50-ns")
	b.ReportMetric(float64(all[len(all)*99/100]), "select-p99-ns")
}

// deployLists returns the lists of pushes pushes of d from list, the
// first at start, one every 3 warmup steps.
func deployLists(list []base.Invoker, pushes int, start time.Time, d Deploy) [][]base.Invoker {
	rnd := rand.New(rand.NewPCG(uint64(len(list)), uint64(pushes)))
	old := make(map[base.Invoker]bool, len(list))
	for _, p := range list {
		old[p] = true
	}
	out := make([][]base.Invoker, pushes)
	made := 0
	for k := range out {
		list = slices.Clone(list)
		for range d.Batch {
			i := rnd.IntN(len(list))
			for t := 0; !old[list[i]] && t < len(list); t++ { // the next one of the old version
				i = (i + 1) % len(list)
			}
			if !old[list[i]] { // all new: the next deploy begins
				for _, p := range list {
					old[p] = true
				}
			}
			delete(old, list[i])
			list = slices.Delete(list, i, i+1)
		}
		at := start.Add(time.Duration(k) * 3 * deployStep)
		for range d.Batch {
			params := map[string]string{"weight": []string{"100", "200", "50"}[made%3]}
			if d.Warm {
				params["timestamp"] = strconv.FormatInt(at.UnixMilli(), 10)
			}
			// Ports past Mixed's; one comes back after 30 000 providers,
			// as another invoker.
			p := Provider(32000+made%30000, params)
			made++
			list = slices.Insert(list, rnd.IntN(len(list)+1), p)
		}
		out[k] = list
	}
	return out
}
