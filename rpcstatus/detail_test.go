package rpcstatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Each bucket holds the latencies up to its bound, inclusive, and above
// the bound before it; the last finite bound is 8.4 s.
func TestHistogramBuckets(t *testing.T) {
	assert.Equal(t, 64*time.Microsecond, HistogramBound(0))
	assert.Equal(t, 8388608*time.Microsecond, HistogramBound(HistogramBuckets-1))
	for i := range HistogramBuckets {
		bound := HistogramBound(i).Nanoseconds()
		assert.Equal(t, i, bucketOf(bound), "at the bound of %d", i)
		assert.Equal(t, i+1, bucketOf(bound+1), "just above the bound of %d", i)
	}
	assert.Equal(t, 0, bucketOf(0))
	assert.Equal(t, 0, bucketOf(-5), "a clock step back counts as 0")
	assert.Equal(t, HistogramBuckets, bucketOf(int64(time.Hour)))
}

func TestPicksAndHistogramFollowSetDetailed(t *testing.T) {
	t.Cleanup(func() { SetDetailed(true) })
	var s Stats
	assert.True(t, Detailed(), "on by default")
	s.Picked()
	s.Picked()
	s.Begin(0)
	s.End(0, int64(3*time.Millisecond), false) // bucket 6: (2.048, 4.096] ms
	s.Begin(0)
	s.End(0, int64(10*time.Second), true) // beyond the last bound

	SetDetailed(false)
	s.Picked()
	s.Begin(0)
	s.End(0, int64(time.Millisecond), false)
	assert.False(t, Detailed())

	assert.EqualValues(t, 2, s.Picks())
	buckets, count := s.Histogram()
	assert.EqualValues(t, 2, count, "the call ended while off is not in it")
	want := [HistogramBuckets + 1]int64{}
	want[6], want[HistogramBuckets] = 1, 1
	assert.Equal(t, want, buckets)
	assert.EqualValues(t, 3, s.Total(), "the other figures are always kept")
}
