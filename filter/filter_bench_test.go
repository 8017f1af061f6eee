package filter

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/common/extension"
	dgfilter "dubbo.apache.org/dubbo-go/v3/filter"
	_ "dubbo.apache.org/dubbo-go/v3/filter/active"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"
	"dubbo.apache.org/dubbo-go/v3/protocol/triple/triple_protocol"

	"github.com/dubbogo-lb/lb/internal/statuscode"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// BenchmarkFilter measures Invoke+OnResponse around a provider that answers
// at once, ours beside dubbo-go's own "active" filter, in the same run.
// One provider: every goroutine hits the same counters. The provider's
// statistics are linked to an outlier board, as a balancer's snapshot
// links them in production, so that outlier detection's part is measured.
func BenchmarkFilter(b *testing.B) {
	benchFilters(b, []*fakeInvoker{newInvoker(b, nil, nil)})
}

// BenchmarkFilterFailing is BenchmarkFilter with every call failing with
// a status that outlier detection counts: the run of failures grows on
// every call (the alarm is raised once, at the threshold).
func BenchmarkFilterFailing(b *testing.B) {
	fail := &result.RPCResult{Err: triple_protocol.NewError(triple_protocol.CodeUnavailable, errors.New("down"))}
	benchFilters(b, []*fakeInvoker{newInvoker(b, map[string]string{"failing": "1"}, func() result.Result { return fail })})
}

// BenchmarkFilterSpread is BenchmarkFilter with the calls spread over 16
// providers, as a consumer's are: parallel goroutines share no counter, so
// the cost stays flat with more cores (no global lock).
func BenchmarkFilterSpread(b *testing.B) {
	ivks := make([]*fakeInvoker, 16)
	for i := range ivks {
		ivks[i] = newInvoker(b, map[string]string{"i": strconv.Itoa(i)}, nil)
	}
	benchFilters(b, ivks)
}

// benchFilters runs ours and dubbo-go's filter in parallel goroutines, each
// calling one of ivks, in turn.
func benchFilters(b *testing.B, ivks []*fakeInvoker) {
	theirs, _ := extension.GetFilter("active")
	var board rpcstatus.Board
	board.Configure(5, statuscode.DefaultCounted) // outlier ejection's defaults
	for _, ivk := range ivks {
		rpcstatus.Of(ivk.GetURL()).Method("Say").Link(&board)
	}
	for _, c := range []struct {
		name string
		f    dgfilter.Filter
	}{{"lbactive", New(Options{})}, {"dubbo-go-active", theirs}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ivk := ivks[next.Add(1)%int64(len(ivks))]
				inv := invocation.NewRPCInvocation("Say", nil, nil)
				for pb.Next() {
					c.f.OnResponse(ctx, c.f.Invoke(ctx, ivk, inv), ivk, inv)
				}
			})
		})
	}
}

// BenchmarkFilterLoadReport is BenchmarkFilter for a method whose calls ask
// for the provider's load (its balancer is loadaware): the filter adds the
// request, lends a trailer header, parses the report the provider answered
// with (both formats, Dubbo Java's and ours, in the result's attachments,
// prepared once) and stores it. Beside it, the same filter on a call that
// does not ask, in the same run.
func BenchmarkFilterLoadReport(b *testing.B) {
	own := loadreport.AppendOwn(nil, &loadreport.Report{
		CPU: 0.42, Inflight: 12.5, Capacity: 200, QPS: 1500, EPS: 1.5,
		Has: loadreport.HasCPU | loadreport.HasInflight | loadreport.HasCapacity | loadreport.HasQPS | loadreport.HasEPS,
	})
	answer := &result.RPCResult{Attrs: map[string]any{
		loadreport.JavaKey: "curTime:1796099112867,load:34.52",
		loadreport.OwnKey:  string(own),
	}}
	for _, c := range []struct {
		name   string
		params map[string]string
	}{
		{"asks", map[string]string{"loadbalance": "loadaware"}},
		{"does-not-ask", map[string]string{"loadbalance": "rtadaptive"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ivk := newInvoker(b, c.params, func() result.Result { return answer })
			f := New(Options{})
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				inv := invocation.NewRPCInvocation("Say", nil, nil)
				for pb.Next() {
					f.OnResponse(ctx, f.Invoke(ctx, ivk, inv), ivk, inv)
				}
			})
			if got := rpcstatus.Of(ivk.GetURL()).Load().Reports(); (got > 0) != (c.name == "asks") {
				b.Fatalf("%d reports stored", got)
			}
		})
	}
}
