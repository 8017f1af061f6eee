package sim

import (
	"testing"
	"time"
)

// BenchmarkSimulatedCall measures the real cost of one simulated call
// (Select, the lbactive filter, the fake provider, two hand-overs between
// goroutines and the bookkeeping): 50 callers, three 1 ms providers, run
// for as much virtual time as b.N calls take. dubbo-go's random and this
// module's warmrandom do the same job.
func BenchmarkSimulatedCall(b *testing.B) {
	for _, name := range []string{"random", "warmrandom", "fewestactive"} {
		b.Run(name, func(b *testing.B) {
			sc := Scenario{Name: "bench", Callers: 50, Providers: []Provider{
				{Latency: ms}, {Latency: ms}, {Latency: ms}}}
			// 50 callers on 1 ms providers complete 50 calls per ms.
			sc.Duration = time.Duration(max(b.N, 50)) * ms / 50
			b.ReportAllocs()
			b.ResetTimer()
			res, err := Run(sc, name, Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(res.Total.Calls), "calls")
		})
	}
}
