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

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/consistenthashing" // registers dubbo-go's own
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/leastactive"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/p2c"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/random"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/roundrobin"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/builds"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Sizes are the provider counts every balancer benchmark runs at.
var Sizes = []int{10, 100, 1000}

// BenchSelect benchmarks Select of each balancer in lbs (name → balancer)
// on the lists that list(n) makes, for every n in Sizes, sequentially and
// with b.RunParallel. Calls alternate between two copies of the list, as
// dubbo-go's router chain hands out a fresh slice per call, so no balancer
// can recognise the list by its address. Run ours and dubbo-go's built-in
// in one call so that they are measured in the same run.
func BenchSelect(b *testing.B, lbs []Named, list func(n int) []base.Invoker, inv base.Invocation) {
	BenchSelectSizes(b, Sizes, lbs, list, inv)
}

// BenchSelectSizes is BenchSelect at the provider counts sizes.
func BenchSelectSizes(b *testing.B, sizes []int, lbs []Named, list func(n int) []base.Invoker, inv base.Invocation) {
	for _, n := range sizes {
		l := list(n)
		copies := [2][]base.Invoker{append([]base.Invoker(nil), l...), append([]base.Invoker(nil), l...)}
		for _, lb := range lbs {
			// The snapshot is built before the clock starts (in the
			// background above member.DefaultInlineUpTo providers).
			lb.LB.Select(copies[0], inv)
			WaitBuilds(lb.LB)
			b.Run(fmt.Sprintf("%s/N=%d/seq", lb.Name, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					sinkInvoker = lb.LB.Select(copies[i&1], inv)
				}
			})
			b.Run(fmt.Sprintf("%s/N=%d/par", lb.Name, n), func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					var got base.Invoker
					for i := 0; pb.Next(); i++ {
						got = lb.LB.Select(copies[i&1], inv)
					}
					_ = got
				})
			})
		}
	}
}

// Named is a balancer and the name its benchmarks carry.
type Named struct {
	Name string
	LB   loadbalance.LoadBalance
}

var sinkInvoker base.Invoker

// Mixed returns n providers whose weights cycle through 100, 200 and 50:
// the weighted lists of the benchmarks.
func Mixed(n int) []base.Invoker {
	w := make([]string, n)
	for i := range w {
		w[i] = []string{"100", "200", "50"}[i%3]
	}
	return Weighted(w...)
}

// DubboGo returns dubbo-go's own balancers of the given names, as its
// cluster finds them, to benchmark beside ours; each is named
// "dubbo-go-<name>".
func DubboGo(names ...string) []Named {
	out := make([]Named, len(names))
	for i, n := range names {
		out[i] = Named{Name: "dubbo-go-" + n, LB: dgext.GetLoadbalance(n)}
	}
	return out
}

// With returns ours followed by others.
func With(ours Named, others ...Named) []Named { return append([]Named{ours}, others...) }

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

// WaitBuilds waits until lb, a balancer of the module, builds no snapshot
// off a call's path; it returns at once for any other balancer.
func WaitBuilds(lb any) {
	if c, ok := builds.Of(lb); ok {
		c.WaitBuilds()
	}
}
