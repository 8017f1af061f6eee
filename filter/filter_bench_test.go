package filter

import (
	"context"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/common/extension"
	dgfilter "dubbo.apache.org/dubbo-go/v3/filter"
	_ "dubbo.apache.org/dubbo-go/v3/filter/active"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"
)

// BenchmarkFilter measures Invoke+OnResponse around a provider that answers
// at once, ours beside dubbo-go's own "active" filter, in the same run.
func BenchmarkFilter(b *testing.B) {
	ivk := newInvoker(b, nil, nil)
	ours := New(Options{})
	theirs, _ := extension.GetFilter("active")
	for _, c := range []struct {
		name string
		f    dgfilter.Filter
	}{{"lbactive", ours}, {"dubbo-go-active", theirs}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				inv := invocation.NewRPCInvocation("Say", nil, nil)
				for pb.Next() {
					c.f.OnResponse(ctx, c.f.Invoke(ctx, ivk, inv), ivk, inv)
				}
			})
		})
	}
}
