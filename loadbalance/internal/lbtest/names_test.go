package lbtest_test

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/filter"
	"github.com/dubbogo-lb/lb/internal/assembly/balancers"
	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
)

// strangers drives names from outside (services that come and go, or
// method names) through every balancer of the module and the lbactive
// filter, one call each, on a wall clock that moves step a name.
type strangers struct {
	wall time.Time
	lbs  []balancers.Balancer
	f    *filter.Filter
	now  int64
}

func newStrangers() *strangers {
	s := &strangers{wall: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	env := lbenv.Env{Wall: func() time.Time { return s.wall }, Now: func() int64 { return s.now }}
	for _, e := range balancers.All {
		s.lbs = append(s.lbs, e.New(env))
	}
	s.f = filter.New(filter.Options{Now: env.Now})
	return s
}

// call selects with every balancer and calls the provider picked through
// the filter.
func (s *strangers) call(list []base.Invoker, method string, step time.Duration) {
	s.wall = s.wall.Add(step)
	s.now += int64(step)
	inv := lbtest.Call(method, "k")
	for _, lb := range s.lbs {
		if p := lb.Select(list, inv); p != nil {
			s.f.Invoke(context.Background(), p, inv)
		}
	}
}

// service returns n providers of a service of its own, named by i.
func service(i, n int) []base.Invoker {
	out := make([]base.Invoker, n)
	for k := range out {
		q := url.Values{"interface": {"org.example.S" + strconv.Itoa(i)}, "weight": {"100"}}
		u, err := common.NewURL(fmt.Sprintf("tri://10.%d.%d.%d:20000/org.example.S%d?%s", i>>16&255, i>>8&255, k, i, q.Encode()))
		if err != nil {
			panic(err)
		}
		out[k] = base.NewBaseInvoker(u)
	}
	return out
}

// heapAfterGC returns the heap in use after collections, once cleanups of
// weakly held entries ran.
func heapAfterGC() uint64 {
	for range 4 {
		runtime.GC()
		runtime.Gosched()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// namesStep is the wall time between two new names: 25 a DefaultIdle. A
// name's state is released 1 to 2 idle times after its call, so at most
// about 50 names' states (of every balancer, about 45 KB each at 10
// providers) are alive at once: the heap is bounded by the rate of new
// names × 2 × idle, whatever their number.
const namesStep = member.DefaultIdle / 25

// servicesComeAndGo calls n services of 10 providers once each and returns
// the heap growth and the time of the last tenth of the names, per name.
func servicesComeAndGo(n int) (grew int64, perName time.Duration) {
	s := newStrangers()
	base := heapAfterGC()
	var start time.Time
	for i := range n {
		if i == n-n/10 {
			start = time.Now()
		}
		s.call(service(i, 10), "Say", namesStep)
	}
	perName = time.Since(start) / time.Duration(n/10)
	runtime.KeepAlive(s)
	return int64(heapAfterGC()) - int64(base), perName
}

// methodsOfOneService calls one service of 10 providers with n distinct
// method names.
func methodsOfOneService(n int) (grew int64, perName time.Duration) {
	s := newStrangers()
	list := service(1<<20, 10)
	base := heapAfterGC()
	var start time.Time
	for i := range n {
		if i == n-n/10 {
			start = time.Now()
		}
		s.call(list, "m"+strconv.Itoa(i), namesStep)
	}
	perName = time.Since(start) / time.Duration(n/10)
	runtime.KeepAlive(s)
	return int64(heapAfterGC()) - int64(base), perName
}

// BenchmarkStrangers reports the heap growth and the time per new name of
// services that come and go and of the method names of one service, at
// 1 000 and 20 000 names (one iteration each: -benchtime=1x).
func BenchmarkStrangers(b *testing.B) {
	defer lblog.Capture(func(string) {})()
	for _, c := range []struct {
		name string
		run  func(int) (int64, time.Duration)
	}{{"services", servicesComeAndGo}, {"methods", methodsOfOneService}} {
		for _, n := range []int{1000, 20000} {
			b.Run(c.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				var grew int64
				var per time.Duration
				for b.Loop() {
					grew, per = c.run(n)
				}
				b.ReportMetric(float64(grew)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(per.Nanoseconds()), "ns/name")
			})
		}
	}
}

// TestMemoryStaysBoundedUnderStrangers drives 500 services of 10
// providers that come and go, then 500 method names of one service,
// through every balancer and the lbactive filter, one call each, a new
// name every namesStep of the injected clocks, and holds the heap after
// collection to what the live set explains.
//
// The bound: a name's state (every balancer's snapshot, the filter's and
// rpcstatus's figures) goes 1 to 2 idle times after its call, once a later
// name's call sweeps; the figures it held go at the next collections. So
// at most 3 idle times of names, 75, are alive at once. What one name
// costs is measured on the first idle time of names (25, none of them
// released yet: their growth, fixed costs of the maps included, over 25),
// and the bound is 4 idle times of names at that cost, 100 names. With
// any release broken the test fails: Registry.expire not releasing (47 MiB
// and 11 MiB against bounds of 9 and 5), the filter not sweeping its
// methods (the methods case, 8 MiB), or the figures of a collected
// provider kept by their cleanup (the services case, 15 MiB).
func TestMemoryStaysBoundedUnderStrangers(t *testing.T) {
	defer lblog.Capture(func(string) {})()
	const names = 500
	const idleNames = int(member.DefaultIdle / namesStep)
	for _, c := range []struct {
		name string
		list func(i int) []base.Invoker
		meth func(i int) string
	}{
		{"services", func(i int) []base.Invoker { return service(i, 10) }, func(int) string { return "Say" }},
		{"methods", func() func(int) []base.Invoker {
			list := service(1<<20, 10)
			return func(int) []base.Invoker { return list }
		}(), func(i int) string { return "m" + strconv.Itoa(i) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStrangers()
			base := heapAfterGC()
			for i := range idleNames {
				s.call(c.list(i), c.meth(i), namesStep)
			}
			perName := max(int64(heapAfterGC())-int64(base), 0) / int64(idleNames)
			bound := 4 * int64(idleNames) * perName
			for i := idleNames; i < names; i++ {
				s.call(c.list(i), c.meth(i), namesStep)
			}
			grew := int64(heapAfterGC()) - int64(base)
			t.Logf("%d names: heap grew %d KiB; a name costs %d KiB, bound %d KiB", names, grew>>10, perName>>10, bound>>10)
			if grew > bound {
				t.Errorf("the heap grew %d KiB, above the bound of %d KiB: it keeps the state of names long gone", grew>>10, bound>>10)
			}
			runtime.KeepAlive(s)
		})
	}
}
