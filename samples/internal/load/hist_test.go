package load

import (
	"math"
	"testing"
	"time"
)

func TestBucketRoundTrip(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 31, 32, 33, 63, 64, 65, 1000, 1 << 20, 123456789, math.MaxInt64} {
		i := bucket(v)
		if i < prev {
			t.Fatalf("bucket(%d) = %d, below the bucket of a smaller value (%d)", v, i, prev)
		}
		prev = i
		lo := lowest(i)
		if lo > v {
			t.Fatalf("lowest(bucket(%d)) = %d > value", v, lo)
		}
		if i+1 < nBuckets && lowest(i+1) <= v {
			t.Fatalf("value %d beyond its bucket %d (next starts at %d)", v, i, lowest(i+1))
		}
		if v >= 32 && float64(v-lo)/float64(v) > 1.0/32 {
			t.Fatalf("value %d in bucket starting %d: error above 1/32", v, lo)
		}
	}
}

func TestQuantiles(t *testing.T) {
	var h Hist
	if q := h.Snapshot().Quantile(0.5); q != 0 {
		t.Fatalf("quantile of no samples = %v, want 0", q)
	}
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	h.Record(-time.Second) // counted as 0, never a panic
	s := h.Snapshot()
	if s.Count() != 1001 {
		t.Fatalf("Count = %d, want 1001", s.Count())
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.9, 900 * time.Microsecond}, {0.99, 990 * time.Microsecond}} {
		got := s.Quantile(c.q)
		if math.Abs(float64(got-c.want))/float64(c.want) > 0.04 {
			t.Errorf("Quantile(%v) = %v, want %v within 4%%", c.q, got, c.want)
		}
	}
	// An interval is the difference of two snapshots.
	for range 10 {
		h.Record(time.Second)
	}
	d := h.Snapshot().Sub(s)
	if d.Count() != 10 || math.Abs(float64(d.Quantile(0.5)-time.Second))/float64(time.Second) > 0.04 {
		t.Fatalf("interval: %d samples, median %v; want 10 around 1s", d.Count(), d.Quantile(0.5))
	}
}
