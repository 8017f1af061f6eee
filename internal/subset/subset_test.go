package subset

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

func providers(n int) []Provider {
	ps := make([]Provider, n)
	for i := range ps {
		ps[i] = Provider{Key: fmt.Sprintf("10.0.%d.%d:20000", i/256, i%256), Weight: 100}
	}
	return ps
}

func TestOffReturnsEverything(t *testing.T) {
	ps := providers(5)
	got := Select(nil, ps, Consumer{ID: "c"}, Options{}, nil)
	if len(got) != 5 {
		t.Fatalf("off: got %v, want all 5", got)
	}
}

func TestSizeIsHeld(t *testing.T) {
	ps := providers(100)
	for _, c := range []Consumer{{ID: "c"}, {ID: "c", Index: 3, Count: 100}} {
		got := Select(nil, ps, c, Options{Size: 10}, nil)
		if len(got) != 10 {
			t.Errorf("%+v: got %d members %v, want 10", c, len(got), got)
		}
	}
}

// BenchmarkSelect10000 chooses 20 of 10 000 providers. cpu-µs/op is the
// process's CPU time (garbage collection included): on a busy machine ns/op
// is mostly waiting for a core.
func BenchmarkSelect10000(b *testing.B) {
	ps := providers(10000)
	for _, bc := range []struct {
		name string
		c    Consumer
	}{{"aperture", Consumer{ID: "c", Index: 4321, Count: 10000}}, {"rendezvous", Consumer{ID: "c"}}} {
		b.Run(bc.name, func(b *testing.B) {
			dst := make([]int, 0, 64)
			b.ReportAllocs()
			var before, after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			for b.Loop() {
				dst = Select(dst, ps, bc.c, Options{Size: 20}, nil)
			}
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
