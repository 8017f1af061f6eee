package lbtest

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
)

// Churn races 8 goroutines, each calling pick(g, list) in a loop, against
// one that keeps replacing list with another window of pool (at least 4
// providers) for d, calling change(i), when not nil, after each
// replacement. It fails t when a pick is not in the list it was made from,
// or when no pick was made, and returns the number of picks.
func Churn(t testing.TB, pool []base.Invoker, d time.Duration, pick func(g int, list []base.Invoker) base.Invoker, change func(i int)) int64 {
	t.Helper()
	var list atomic.Pointer[[]base.Invoker]
	first := pool[:len(pool)/2]
	list.Store(&first)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var picks, strays atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				l := *list.Load()
				if !slices.Contains(l, pick(g, l)) {
					strays.Add(1)
				}
				picks.Add(1)
			}
		}()
	}
	half := len(pool) / 2
	deadline := time.Now().Add(d)
	for i := 0; time.Now().Before(deadline); i++ {
		lo := i % half
		l := slices.Clone(pool[lo:min(lo+2+i%(half+1), len(pool))])
		list.Store(&l)
		if change != nil {
			change(i)
		}
	}
	close(stop)
	wg.Wait()
	if strays.Load() != 0 {
		t.Errorf("%d of %d picks were not in the list they were made from", strays.Load(), picks.Load())
	}
	if picks.Load() == 0 {
		t.Error("no pick was made")
	}
	return picks.Load()
}
