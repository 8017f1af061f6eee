package extension_test

import (
	"context"
	"fmt"
	"strings"

	"dubbo.apache.org/dubbo-go/v3/global"

	"github.com/dubbogo-lb/lb/extension"
)

// A consumer checks its configured balancer names at start-up, where
// dubbo-go would panic on the first call of a reference with a typo.
func ExampleCheckReferences() {
	refs := map[string]*global.ReferenceConfig{
		"GreeterClient": {Loadbalance: "lalb", Params: map[string]string{"methods.Hello.loadbalance": "swrr"}},
		"Typo":          {Loadbalance: "lalbb"},
	}
	err := extension.CheckReferences(refs)
	first, _, _ := strings.Cut(err.Error(), ";") // then the list of registered names
	fmt.Println(first)
	// Output: reference Typo: unknown load balancer "lalbb"
}

// A per-method balancer written in a reference's methods section reaches
// dubbo-go's cluster as the reference param methods.<method>.loadbalance.
func ExampleMethodBalancersToParams() {
	refs := map[string]*global.ReferenceConfig{
		"GreeterClient": {
			Loadbalance:   "warmrandom",
			MethodsConfig: []*global.MethodConfig{{Name: "Hello", LoadBalance: "lalb"}},
		},
	}
	extension.MethodBalancersToParams(refs)
	fmt.Println(refs["GreeterClient"].Params)
	// Output: map[methods.Hello.loadbalance:lalb]
}

// A provider's main keeps its Nacos registrations for as long as it runs.
func ExampleKeepRegistered() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// ... after the dubbo.Instance has exported its services:
	go func() {
		if err := extension.KeepRegistered(ctx, extension.KeepOptions{}); err != nil {
			fmt.Println("keeper:", err)
		}
	}()
}
