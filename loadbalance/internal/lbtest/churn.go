package lbtest

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
)

// ChurnPaced races 4 goroutines, each calling pick(g, i, list), against
// 300 membership changes of pool (16 providers or more): the whole pool,
// every other provider (half removed at once), a window of 8. It waits for
// 20 picks on each list before the next change, by the selectors' progress
// rather than the clock, and fails t when a pick is not in the list it was
// made from. It returns the last list.
func ChurnPaced(t testing.TB, pool []base.Invoker, pick func(g, i int, list []base.Invoker) base.Invoker) []base.Invoker {
	t.Helper()
	var evens []base.Invoker
	for i := 0; i < len(pool); i += 2 {
		evens = append(evens, pool[i])
	}
	var list atomic.Pointer[[]base.Invoker]
	first := slices.Clone(pool)
	list.Store(&first)
	var wg sync.WaitGroup
	var stop atomic.Bool
	var picks, strays atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				l := *list.Load()
				if !slices.Contains(l, pick(g, i, l)) {
					strays.Add(1)
					return
				}
				picks.Add(1)
				if i%64 == 0 {
					runtime.Gosched() // let the membership changer in
				}
			}
		})
	}
	const changes = 300
	for c := range changes {
		var l []base.Invoker
		switch c % 3 {
		case 0:
			l = pool
		case 1:
			l = evens
		default:
			l = pool[c%8 : c%8+8]
		}
		l = slices.Clone(l)
		list.Store(&l)
		for target := picks.Load() + 20; picks.Load() < target && strays.Load() == 0; {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	if strays.Load() != 0 {
		t.Errorf("a pick was not in the list it was made from")
	} else if picks.Load() < 20*changes {
		t.Errorf("%d picks in %d membership changes: the selectors did not run", picks.Load(), changes)
	}
	return *list.Load()
}

// RetryShare alternates 4000 times a pick on list (a first try, which
// keeps list the membership) and a pick on sub, a failover retry's subset
// of it, and returns the share of the retries that went to sub[0]. It
// fails t when a retry leaves sub or, for a balancer that counts its
// rebuilds (describe.Source), when the retries rebuild the membership.
func RetryShare(t testing.TB, lb loadbalance.LoadBalance, list, sub []base.Invoker) float64 {
	t.Helper()
	inv := Call("Say")
	lb.Select(list, inv)
	src, _ := lb.(describe.Source)
	rebuilds := func() int64 {
		if src == nil {
			return 0
		}
		return src.Rebuilds().Membership
	}
	before := rebuilds()
	n := 0
	for range 4000 {
		got := lb.Select(sub, inv)
		if !slices.Contains(sub, got) {
			t.Fatalf("retry pick %v is not in the subset", got)
		}
		if got == sub[0] {
			n++
		}
		lb.Select(list, inv)
	}
	if after := rebuilds(); after != before {
		t.Errorf("the retries rebuilt the membership %d times", after-before)
	}
	return float64(n) / 4000
}
