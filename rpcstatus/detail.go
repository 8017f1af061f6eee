package rpcstatus

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// detailOff turns off the figures that only observability reads (see
// SetDetailed); the zero value means on.
var detailOff atomic.Bool

// SetDetailed turns on or off, for the whole process, the figures that
// only observability reads: the picks of the balancers (Stats.Picked) and
// the latency histogram (Stats.Histogram). They are on by default and cost
// an atomic add each per call; off, they keep their values and stop
// counting. Every other figure is always kept: the balancers need them.
func SetDetailed(on bool) { detailOff.Store(!on) }

// Detailed reports whether the figures of SetDetailed are counted.
func Detailed() bool { return !detailOff.Load() }

// HistogramBuckets is the number of finite buckets of the latency
// histogram; bucket i counts calls that took at most HistogramBound(i),
// and one more bucket, index HistogramBuckets, counts the slower ones.
const HistogramBuckets = 18

// HistogramBound returns the upper bound of bucket i of the latency
// histogram: 64 µs × 2^i, from 64 µs to 8.4 s.
func HistogramBound(i int) time.Duration { return time.Duration(64<<i) * time.Microsecond }

// bucketOf returns the histogram bucket of a latency of ns nanoseconds:
// the first whose bound is at least the latency in whole microseconds
// (rounded up), found with one bit count instead of a search.
func bucketOf(ns int64) int {
	us := max((ns+999)/1000, 1)
	return min(bits.Len64(uint64(us-1)>>6), HistogramBuckets)
}

// Picked records that a balancer picked the provider for the method, if
// detailed figures are on (SetDetailed). One atomic add, no allocation.
func (s *Stats) Picked() {
	if !detailOff.Load() {
		s.picks.Add(1)
	}
}

// Picks returns how many times a balancer picked the provider for the
// method (see Picked).
func (s *Stats) Picks() int64 { return s.picks.Load() }

// Histogram returns the latency histogram of the finished calls: counts
// per bucket (not cumulative; see HistogramBound) and their number. Calls
// that ended while detailed figures were off are not in it.
func (s *Stats) Histogram() (buckets [HistogramBuckets + 1]int64, count int64) {
	for i := range s.hist {
		buckets[i] = s.hist[i].Load()
		count += buckets[i]
	}
	return buckets, count
}
