package providerload

import (
	"context"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/common/constant"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	_ "dubbo.apache.org/dubbo-go/v3/filter/adaptivesvc"
	_ "dubbo.apache.org/dubbo-go/v3/filter/echo"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"

	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// BenchmarkProviderFilter compares, per call on a provider, this filter
// (asked for a report and not) with dubbo-go's echo filter, the emptiest
// provider filter it has, with one that only passes the call on, and with
// dubbo-go's adaptivesvc provider filter, the one that feeds its p2c
// balancer (off: the consumer did not enable it, as in every call here).
func BenchmarkProviderFilter(b *testing.B) {
	u := newInvoker(b, "").BaseInvoker
	ours := New(Options{})
	defer ours.Stop()
	type invokeFunc func(ctx context.Context, invoker base.Invoker, inv base.Invocation) result.Result
	for _, tc := range []struct {
		name   string
		invoke invokeFunc
		ask    bool
	}{
		{"pass-through", func(ctx context.Context, i base.Invoker, inv base.Invocation) result.Result {
			return i.Invoke(ctx, inv)
		}, false},
		{"dubbo-go echo", mustFilter(constant.EchoFilterKey).Invoke, false},
		{"dubbo-go adaptivesvc off", mustFilter(constant.AdaptiveServiceProviderFilterKey).Invoke, false},
		{"lbload not asked", ours.Invoke, false},
		{"lbload asked", ours.Invoke, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				// One invocation per goroutine, with the attachments as
				// dubbo-go's triple server makes them, and its result as
				// dubbo-go's proxy invoker answers (the invocation's
				// attachments are the result's), reused so that only the
				// filter is measured.
				att := map[string]any{"interface": []string{"org.example.Greeter"}}
				if tc.ask {
					att[loadreport.AskKey] = []string{loadreport.AskValue}
				}
				inv := invocation.NewRPCInvocation("Hello", nil, att)
				next := &fixed{BaseInvoker: u, res: &result.RPCResult{Rest: "ok", Attrs: att}}
				for pb.Next() {
					tc.invoke(context.Background(), next, inv)
				}
			})
		})
	}
}

func mustFilter(name string) interface {
	Invoke(context.Context, base.Invoker, base.Invocation) result.Result
} {
	f, ok := dgext.GetFilter(name)
	if !ok {
		panic(name)
	}
	return f
}
