package lalb

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

const benchN = 1024

func benchTree() *weightTree {
	rng := rand.New(rand.NewPCG(1, 1))
	w := make([]int64, benchN)
	for i := range w {
		w[i] = 1e6 + rng.Int64N(1e9)
	}
	return newWeightTree(w)
}

// xorshift is a tiny per-goroutine random source, so the benchmarks measure
// the tree and not the generator.
type xorshift uint64

func (x *xorshift) next() uint64 {
	v := uint64(*x)
	v ^= v << 13
	v ^= v >> 7
	v ^= v << 17
	*x = xorshift(v)
	return v
}

func BenchmarkPick(b *testing.B) {
	t := benchTree()
	r := xorshift(88172645463325252)
	b.ReportAllocs()
	for b.Loop() {
		t.choose(r.next())
	}
}

func BenchmarkPickParallel(b *testing.B) {
	t := benchTree()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := xorshift(rand.Uint64() | 1)
		for pb.Next() {
			t.choose(r.next())
		}
	})
}

func BenchmarkSet(b *testing.B) {
	t := benchTree()
	r := xorshift(88172645463325252)
	b.ReportAllocs()
	for b.Loop() {
		v := r.next()
		t.Set(int(v%benchN), int64(v>>34))
	}
}

func BenchmarkSetParallel(b *testing.B) {
	t := benchTree()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := xorshift(rand.Uint64() | 1)
		for pb.Next() {
			v := r.next()
			t.Set(int(v%benchN), int64(v>>34))
		}
	})
}

// BenchmarkFeedback is the whole feedback path of one completion: compute
// the weight from a window summary, floor it, and Set it.
func BenchmarkFeedback(b *testing.B) {
	t, f := benchTree(), newFeeder(88172645463325252)
	b.ReportAllocs()
	for b.Loop() {
		f.feed(t)
	}
}

func BenchmarkFeedbackParallel(b *testing.B) {
	t := benchTree()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		f := newFeeder(rand.Uint64() | 1)
		for pb.Next() {
			f.feed(t)
		}
	})
}

// feeder makes the completions of the feedback benchmarks.
type feeder struct {
	r   xorshift
	s   callStats
	o   Tuning
	now int64
}

func newFeeder(seed uint64) *feeder {
	return &feeder{r: xorshift(seed), o: Tuning{}.withDefaults(), now: int64(time.Second + time.Millisecond),
		s: callStats{Samples: 128, Errors: 2, Span: 127 * time.Millisecond,
			SuccessLatency: time.Millisecond, ErrorLatency: 3 * time.Millisecond,
			Delay: time.Millisecond}}
}

// feed computes one provider's weight from a fresh latency and sets it.
func (f *feeder) feed(t *weightTree) {
	v := f.r.next()
	f.s.SuccessLatency = time.Duration(v>>44) + time.Millisecond
	w, _ := providerWeight(f.s, f.o)
	t.Set(int(v%benchN), treeWeight(w, t.Total(), benchN, f.o))
}

// BenchmarkPickWithFeedback runs picks while other goroutines feed back, the
// contended case: half the goroutines pick, half Set.
func BenchmarkPickWithFeedback(b *testing.B) {
	t := benchTree()
	var id atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := xorshift(rand.Uint64() | 1)
		setter := id.Add(1)%2 == 0
		for pb.Next() {
			v := r.next()
			if setter {
				t.Set(int(v%benchN), int64(v>>34))
			} else {
				t.choose(v)
			}
		}
	})
}
