package describe_test

import (
	"fmt"
	"net/http"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/warmrandom"
)

// What a balancer decided, per (service, method) and provider. With the
// extension package imported, describe.Default already holds every
// balancer of the module; this example registers one of its own.
func ExampleRegistry_Snapshot() {
	lb := warmrandom.New(warmrandom.Options{})
	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)

	var providers []base.Invoker
	for _, addr := range []string{"127.0.0.1:20001", "127.0.0.1:20002"} {
		u, _ := common.NewURL("tri://" + addr + "/org.example.Greeter?interface=org.example.Greeter&weight=100")
		providers = append(providers, base.NewBaseInvoker(u))
	}
	call := invocation.NewRPCInvocation("Hello", nil, nil)
	for range 100 {
		lb.Select(providers, call)
	}

	for _, b := range reg.Snapshot().Balancers {
		for _, m := range b.Methods {
			var picks int64
			for _, p := range m.Providers {
				picks += p.Picks
				fmt.Println(b.Name, m.Service, m.Method, p.Address, p.State, p.Weight)
			}
			fmt.Println("picks:", picks)
		}
	}
	// Output:
	// warmrandom org.example.Greeter Hello 127.0.0.1:20001 ok 100
	// warmrandom org.example.Greeter Hello 127.0.0.1:20002 ok 100
	// picks: 100
}

// The live page and its JSON, on a loopback address of the consumer.
func ExampleRegistry_Handler() {
	mux := http.NewServeMux()
	mux.Handle("/lb/", http.StripPrefix("/lb", describe.Default.Handler()))
	go func() { _ = http.ListenAndServe("127.0.0.1:8080", mux) }()
}
