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
	"github.com/dubbogo-lb/lb/internal/balancers"
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
