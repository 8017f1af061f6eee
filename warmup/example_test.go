package warmup_test

import (
	"fmt"
	"strconv"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/warmup"
)

// A provider that started 2 minutes ago with weight 200 and a 10-minute
// warmup (dubbo-go writes both in seconds; Dubbo Java in milliseconds)
// gets a fifth of its weight on Dubbo's linear ramp, more with Envoy's
// aggression, and its full weight once warm.
func ExampleOptions_Weight() {
	now := time.Unix(1_800_000_000, 0)
	start := now.Add(-2 * time.Minute)
	u, err := common.NewURL("dubbo://10.0.0.7:20000/org.example.Greeter?weight=200&warmup=600&timestamp=" +
		strconv.FormatInt(start.Unix(), 10))
	if err != nil {
		panic(err)
	}
	m := warmup.Parse(u, "Say", now)
	fmt.Println("full weight:", m.Weight, "warm at:", m.WarmAt().Sub(now))
	fmt.Println("linear:", warmup.Options{}.Weight(m, now))
	fmt.Println("Aggression: 2:", warmup.Options{Aggression: 2}.Weight(m, now))
	fmt.Println("later:", warmup.Options{}.Weight(m, now.Add(time.Hour)))
	// Output:
	// full weight: 200 warm at: 8m0s
	// linear: 40
	// Aggression: 2: 89.44271909999159
	// later: 200
}

// A malformed weight never starves or floods a provider: it is replaced
// by the default, and the reason is kept.
func ExampleParse_malformedWeight() {
	u, _ := common.NewURL("dubbo://10.0.0.8:20000/org.example.Greeter?weight=-5")
	m := warmup.Parse(u, "Say", time.Now())
	fmt.Println(m.Weight)
	fmt.Println(m.Problem)
	// Output:
	// 100
	// weight "-5" is negative; using 100
}
