package rpcstatus_test

import (
	"fmt"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/rpcstatus"
)

// What the lbactive filter does around each call, and what a balancer or
// a dashboard reads back: calls in flight, totals, failures and latency,
// of all of a provider's calls and of each method.
func ExampleProvider_Begin() {
	u, err := common.NewURL("dubbo://10.0.0.9:20000/org.example.Greeter")
	if err != nil {
		panic(err)
	}
	p := rpcstatus.Of(u)
	say := p.Method("Say")

	t0 := rpcstatus.Nanotime()
	ok := p.Begin(say, t0)
	bad := p.Begin(say, t0)
	fmt.Println("in flight:", say.Active(), p.All().Active())

	ok.End(t0+int64(4*time.Millisecond), false)
	bad.End(t0+int64(9*time.Millisecond), true)
	fmt.Println("in flight:", say.Active())
	fmt.Println("total:", say.Total(), "failed:", say.Failed())
	fmt.Println("mean of successes:", say.SucceededAverage())
	fmt.Println("slowest:", say.MaxElapsed())
	// Output:
	// in flight: 2 2
	// in flight: 0
	// total: 2 failed: 1
	// mean of successes: 4ms
	// slowest: 9ms
}
