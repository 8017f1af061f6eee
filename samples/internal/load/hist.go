package load

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// subBits is the number of mantissa bits kept per power of two: 32
// sub-buckets, so a recorded value is off by at most ~3 %.
const subBits = 5

const nBuckets = (64 + 1) << subBits

// Hist is a lock-free log-linear histogram of durations.
type Hist struct {
	counts [nBuckets]atomic.Int64
}

// bucket returns the bucket of v >= 0.
func bucket(v uint64) int {
	if v < 1<<subBits {
		return int(v) // exact for tiny values
	}
	e := bits.Len64(v) - subBits // >= 1
	return e<<subBits + int(v>>(e-1))&(1<<subBits-1)
}

// lowest returns the smallest value of bucket i.
func lowest(i int) uint64 {
	if i < 1<<subBits {
		return uint64(i)
	}
	e := i >> subBits
	return (1<<subBits | uint64(i)&(1<<subBits-1)) << (e - 1)
}

// Record adds one sample.
func (h *Hist) Record(d time.Duration) {
	h.counts[bucket(uint64(max(d, 0)))].Add(1)
}

// Snapshot is a copy of a histogram's counts.
type Snapshot struct {
	counts [nBuckets]int64
	n      int64
}

// Snapshot copies the current counts.
func (h *Hist) Snapshot() *Snapshot {
	s := new(Snapshot)
	for i := range h.counts {
		c := h.counts[i].Load()
		s.counts[i] = c
		s.n += c
	}
	return s
}

// Sub returns s minus an earlier snapshot of the same histogram.
func (s *Snapshot) Sub(earlier *Snapshot) *Snapshot {
	out := new(Snapshot)
	for i := range s.counts {
		out.counts[i] = s.counts[i] - earlier.counts[i]
		out.n += out.counts[i]
	}
	return out
}

// Count returns the number of samples.
func (s *Snapshot) Count() int64 { return s.n }

// Quantile returns the q-quantile (0 < q <= 1), the midpoint of its
// bucket; 0 with no samples.
func (s *Snapshot) Quantile(q float64) time.Duration {
	if s.n == 0 {
		return 0
	}
	rank := int64(q*float64(s.n) + 0.5)
	rank = min(max(rank, 1), s.n)
	var seen int64
	for i, c := range s.counts {
		if seen += c; seen >= rank {
			lo := lowest(i)
			hi := lo + 1
			if i+1 < nBuckets {
				hi = lowest(i + 1)
			}
			return time.Duration(lo + (hi-lo)/2)
		}
	}
	return 0
}
