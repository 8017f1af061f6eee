package subset

import (
	"fmt"
	"testing"
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

func BenchmarkSelect10000(b *testing.B) {
	ps := providers(10000)
	for _, bc := range []struct {
		name string
		c    Consumer
	}{{"aperture", Consumer{ID: "c", Index: 4321, Count: 10000}}, {"rendezvous", Consumer{ID: "c"}}} {
		b.Run(bc.name, func(b *testing.B) {
			dst := make([]int, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				dst = Select(dst, ps, bc.c, Options{Size: 20}, nil)
			}
		})
	}
}
