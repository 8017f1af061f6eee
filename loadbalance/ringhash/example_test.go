package ringhash_test

import (
	"fmt"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"

	"github.com/dubbogo-lb/lb/loadbalance/ringhash"
)

// The first argument of a call is its key (Dubbo's default hash.arguments
// "0"): a key keeps its provider, and when another provider leaves, the
// keys of those that stay do not move.
func ExampleNew() {
	var list []base.Invoker
	for _, host := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"} {
		u, err := common.NewURL("dubbo://" + host + ":20000/org.example.Greeter")
		if err != nil {
			panic(err)
		}
		list = append(list, base.NewBaseInvoker(u))
	}
	lb := ringhash.New(ringhash.Options{})
	call := invocation.NewRPCInvocation("Say", []any{"user-42"}, nil)

	first := lb.Select(list, call)
	fmt.Println(first.GetURL().Location)
	fmt.Println(lb.Select(list, call) == first)

	// 10.0.0.4 leaves: the key stays where it was.
	fmt.Println(lb.Select(list[:3], call).GetURL().Location)
	// Output:
	// 10.0.0.2:20000
	// true
	// 10.0.0.2:20000
}
