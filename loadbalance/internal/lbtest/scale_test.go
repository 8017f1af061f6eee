package lbtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/builds"
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

// BenchChange benchmarks a change of membership at each size of sizes: two
// copies of list(n) that differ in their last provider alternate, so that
// every Select sees a new membership (a change of an end is seen by the
// quick check of member.Registry.Pick too). After each call the benchmark
// waits until its snapshot is published (WaitBuilds, where the balancer
// has one): "seen" times only the call, what the change costs the call
// that sees it; "built" times the wait too, which adds the cost of the
// build, off the call's path in production. One call is counted first,
// as the lbactive filter would, so that the missing-filter watch (a scan
// of every provider until a call is seen) is settled. "seen" runs on one P
// (GOMAXPROCS 1), so that the build the call starts runs after it and
// takes no CPU from it. Both report the median and 99th percentile of the
// call alone, and the median of the CPU time its thread spent on it (on
// Linux: the call's own cost, however busy the machine). Run ours and dubbo-go's built-in in one call so that they
// are measured in the same run.
func BenchChange(b *testing.B, sizes []int, lbs []Named, list func(n int) []base.Invoker, inv base.Invocation) {
	for _, n := range sizes {
		lists := changing(list(n))
		Feed(lists[0][0], rpcstatus.Nanotime(), 1, time.Millisecond, false) // settles the missing-filter watch
		for _, lb := range lbs {
			wait := func() { WaitBuilds(lb.LB) }
			for _, mode := range []string{"seen", "built"} {
				b.Run(fmt.Sprintf("%s/N=%d/%s", lb.Name, n, mode), func(b *testing.B) {
					if mode == "seen" {
						// One P: the build a call starts runs when the call
						// is over (the call does not yield), so the call is
						// timed alone, as on a machine with a core to spare.
						defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
					}
					lb.LB.Select(lists[1], inv)
					wait()
					lat := make([]int64, 0, b.N)
					cpu := make([]int64, 0, b.N)
					runtime.LockOSThread() // the thread's CPU clock times the call
					defer runtime.UnlockOSThread()
					b.ReportAllocs()
					b.ResetTimer()
					for i := range b.N {
						t0, c0 := time.Now(), threadCPU()
						sinkInvoker = lb.LB.Select(lists[i&1], inv)
						c1 := threadCPU()
						lat = append(lat, int64(time.Since(t0)))
						cpu = append(cpu, c1-c0)
						if mode == "seen" {
							b.StopTimer()
						}
						wait()
						b.StartTimer()
					}
					b.StopTimer()
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2]), "call-p50-ns")
					b.ReportMetric(float64(lat[len(lat)*99/100]), "call-p99-ns")
					if c0 := threadCPU(); c0 >= 0 {
						slices.Sort(cpu)
						b.ReportMetric(float64(cpu[len(cpu)/2]), "call-cpu-p50-ns")
					}
				})
			}
		}
	}
}

// BenchBuild benchmarks the build of a snapshot at each size of sizes, on
// the calling goroutine (SetInlineUpTo(math.MaxInt)), for the balancers of
// lbs that build one: "one" alternates the two lists of BenchChange, which
// differ in one provider and keep the order of the others, as dubbo-go's
// registry directory does (see the member design note), so each build
// reuses the state of the others ("one" changes the last provider,
// "one-apart" takes one out halfway and puts another at the end);
// "shuffled" is "one" with the changed
// list in another order; "full" alternates list(n) with n other providers,
// so each build starts from nothing; "one-4methods" is "one" seen by four
// methods of the service in turn. B/op and allocs/op are those of one
// build and its call, of four for "one-4methods".
func BenchBuild(b *testing.B, sizes []int, lbs []Named, list func(n int) []base.Invoker, inv base.Invocation) {
	built := 0
	for _, n := range sizes {
		l := list(n)
		others := make([]base.Invoker, n)
		for i, p := range l {
			others[i] = base.NewBaseInvoker(p.GetURL().Clone())
			others[i].GetURL().Port = strconv.Itoa(50000 + i)
		}
		Feed(l[0], rpcstatus.Nanotime(), 1, time.Millisecond, false) // settles the missing-filter watch
		one := changing(l)
		shuffled := append([]base.Invoker(nil), one[1]...)
		rand.New(rand.NewPCG(uint64(n), 1)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		cases := map[string][2][]base.Invoker{"one": one, "one-apart": {l, changingApart(l)}, "shuffled": {l, shuffled}, "full": {l, others}}
		for _, lb := range lbs {
			in, ok := builds.Of(lb.LB)
			if !ok {
				continue // dubbo-go's own keep no snapshot
			}
			built++
			in.SetInlineUpTo(math.MaxInt)
			for _, c := range []string{"one", "one-apart", "shuffled", "full"} {
				lists := cases[c]
				b.Run(fmt.Sprintf("%s/N=%d/%s", lb.Name, n, c), func(b *testing.B) {
					lb.LB.Select(lists[1], inv)
					b.ReportAllocs()
					for i := 0; b.Loop(); i++ {
						sinkInvoker = lb.LB.Select(lists[i&1], inv)
					}
				})
			}
			b.Run(fmt.Sprintf("%s/N=%d/one-4methods", lb.Name, n), func(b *testing.B) {
				invs := make([]base.Invocation, 4)
				for m := range invs {
					invs[m] = Call(inv.MethodName()+strconv.Itoa(m), inv.Arguments()...)
					lb.LB.Select(one[1], invs[m])
				}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					for _, inv := range invs {
						sinkInvoker = lb.LB.Select(one[i&1], inv)
					}
				}
			})
		}
	}
	if built == 0 {
		b.Fatal("no balancer of lbs builds snapshots")
	}
}

// changingApart returns a copy of l in which the provider halfway in left
// and another came at the end: a change of one provider that touches two
// places of the list (the others keep their order, as dubbo-go hands
// them). Its last provider differs, so that every Select sees the change.
func changingApart(l []base.Invoker) []base.Invoker {
	c := slices.Delete(slices.Clone(l), len(l)/2, len(l)/2+1)
	return append(c, Provider(40001, map[string]string{"weight": "100"}))
}

// changing returns l and a copy of it with its last provider replaced.
func changing(l []base.Invoker) [2][]base.Invoker {
	c := append([]base.Invoker(nil), l...)
	c[len(c)-1] = Provider(40000, map[string]string{"weight": "100"})
	return [2][]base.Invoker{l, c}
}

// BenchChangeLatency measures the latency of calls concurrent with changes
// of membership at each size of sizes: 8 goroutines call Select while one
// alternates the two lists of BenchChange, waiting after each change for
// 64 calls on the new list (progress, not time). It reports the 50th and
// 99th percentiles and the maximum of the calls' latencies (ns) and the
// changes per second.
func BenchChangeLatency(b *testing.B, sizes []int, lbs []Named, list func(n int) []base.Invoker, inv base.Invocation) {
	const callers = 8
	for _, n := range sizes {
		lists := changing(list(n))
		Feed(lists[0][0], rpcstatus.Nanotime(), 1, time.Millisecond, false)
		for _, lb := range lbs {
			b.Run(fmt.Sprintf("%s/N=%d", lb.Name, n), func(b *testing.B) {
				var cur atomic.Pointer[[]base.Invoker]
				cur.Store(&lists[0])
				lb.LB.Select(lists[0], inv)
				var calls atomic.Int64
				var stop atomic.Bool
				lat := make([][]int64, callers)
				var wg sync.WaitGroup
				b.ResetTimer()
				for g := range callers {
					wg.Go(func() {
						for i := 0; i < b.N/callers+1 || !stop.Load() && i < 100*b.N; i++ {
							l := *cur.Load()
							t0 := time.Now()
							sinkInvokers[g] = lb.LB.Select(l, inv)
							lat[g] = append(lat[g], int64(time.Since(t0)))
							calls.Add(1)
						}
					})
				}
				changes := 0
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
			loop:
				for ; ; changes++ {
					select {
					case <-done:
						break loop
					default:
					}
					cur.Store(&lists[(changes+1)&1])
					for target := calls.Load() + 64; calls.Load() < target; {
						select {
						case <-done:
							break loop
						default:
							runtime.Gosched()
						}
					}
					if changes > 0 && calls.Load() >= int64(b.N) {
						stop.Store(true)
					}
				}
				elapsed := b.Elapsed()
				b.StopTimer()
				WaitBuilds(lb.LB)
				all := slices.Concat(lat...)
				slices.Sort(all)
				b.ReportMetric(float64(all[len(all)/2]), "p50-ns")
				b.ReportMetric(float64(all[len(all)*99/100]), "p99-ns")
				b.ReportMetric(float64(all[len(all)-1]), "max-ns")
				b.ReportMetric(float64(changes)/elapsed.Seconds(), "changes/s")
			})
		}
	}
}

var sinkInvokers [8]base.Invoker
