package rpcstatus

import (
	"math"
	"sync/atomic"
	"time"
)

// epoch anchors Nanotime so that its values are small and monotonic.
var epoch = time.Now()

// Nanotime returns monotonic nanoseconds since the process started. It is the
// default clock of the filter and of the balancers.
func Nanotime() int64 { return int64(time.Since(epoch)) }

// Counters are the call counts and times of a provider or of a method. The
// zero value is ready to use; all methods are safe for concurrent use.
type Counters struct {
	active        atomic.Int64
	total         atomic.Int64
	failed        atomic.Int64
	totalElapsed  atomic.Int64 // ns
	failedElapsed atomic.Int64 // ns
	maxElapsed    atomic.Int64 // ns
}

// Stats holds the figures of one (provider, method): its Counters, a window
// of recent completions and a moving average of latency, which the adaptive
// balancers read. The zero value is ready to use. All methods are safe for
// concurrent use and allocate nothing.
type Stats struct {
	Counters

	// inflightStartSum is the sum of the start times, in microseconds, of
	// the calls in flight; with active it gives their mean age. Microseconds
	// keep the sum far from overflow with millions of calls in flight.
	inflightStartSum atomic.Int64
	// picks and hist are the detailed figures (see SetDetailed): how often
	// a balancer picked the provider (beside the counters that the filter
	// writes next), and the latencies by bucket.
	picks atomic.Int64
	hist  [HistogramBuckets + 1]atomic.Int64

	// used is the coarse time (stampOf) of the last call begun, which
	// Provider.Release reads.
	used atomic.Int64

	window Window
	ewma   PeakEWMA
	// outlierStats are the run of failures and the board of outlier
	// detection (Judge, Link).
	outlierStats
}

// Begin records that a call started at now (ns).
func (s *Counters) Begin(now int64) { s.active.Add(1) }

// Begin records that a call started at now (ns).
func (s *Stats) Begin(now int64) {
	s.active.Add(1)
	s.inflightStartSum.Add(now / 1e3)
	s.stamp(now)
}

// usedShift makes stampOf's unit: 2^30 ns, about a second.
const usedShift = 30

// stampOf returns the coarse time of now (ns) that Stats.used holds.
func stampOf(now int64) int64 { return now >> usedShift }

// stamp records that a call began at now: a load, and a store once a second.
func (s *Stats) stamp(now int64) {
	if t := stampOf(now); s.used.Load() < t {
		s.used.Store(t)
	}
}

// TryBegin records the start of a call only if fewer than limit calls are in
// flight, and reports whether it did. A limit <= 0 means no limit. The check
// and the count are one atomic step on the active counter; the policy built
// on it (the actives parameter, waiting for a slot) is package filter's.
func (s *Stats) TryBegin(now, limit int64) bool {
	if limit <= 0 {
		s.Begin(now)
		return true
	}
	for {
		a := s.active.Load()
		if a >= limit {
			return false
		}
		if s.active.CompareAndSwap(a, a+1) {
			s.inflightStartSum.Add(now / 1e3)
			s.stamp(now)
			return true
		}
	}
}

// End records that a call started at start (ns, the value given to Begin)
// finished at now, successfully or not. Call it exactly once per Begin.
func (s *Stats) End(start, now int64, failed bool) {
	elapsed := s.Counters.End(start, now, failed)
	s.inflightStartSum.Add(-(start / 1e3))
	s.window.Add(now, elapsed, failed)
	s.ewma.observe(now, elapsed)
	if !detailOff.Load() {
		s.hist[bucketOf(elapsed)].Add(1)
	}
}

// End records the end of a call started at start (ns) and returns its
// duration. Call it exactly once per Begin.
func (s *Counters) End(start, now int64, failed bool) (elapsed int64) {
	elapsed = max(now-start, 0)
	s.active.Add(-1)
	s.total.Add(1)
	s.totalElapsed.Add(elapsed)
	if failed {
		s.failed.Add(1)
		s.failedElapsed.Add(elapsed)
	}
	for {
		m := s.maxElapsed.Load()
		if elapsed <= m || s.maxElapsed.CompareAndSwap(m, elapsed) {
			break
		}
	}
	return elapsed
}

// Active returns the number of calls in flight.
func (s *Counters) Active() int64 { return s.active.Load() }

// Total returns the number of finished calls.
func (s *Counters) Total() int64 { return s.total.Load() }

// Failed returns the number of finished calls that failed.
func (s *Counters) Failed() int64 { return s.failed.Load() }

// TotalElapsed returns the summed duration of all finished calls.
func (s *Counters) TotalElapsed() time.Duration { return time.Duration(s.totalElapsed.Load()) }

// FailedElapsed returns the summed duration of the failed calls.
func (s *Counters) FailedElapsed() time.Duration { return time.Duration(s.failedElapsed.Load()) }

// MaxElapsed returns the longest call seen.
func (s *Counters) MaxElapsed() time.Duration { return time.Duration(s.maxElapsed.Load()) }

// SucceededAverage returns the mean duration of the successful calls, or 0
// when there was none.
func (s *Counters) SucceededAverage() time.Duration {
	n := s.total.Load() - s.failed.Load()
	if n <= 0 {
		return 0
	}
	return time.Duration((s.totalElapsed.Load() - s.failedElapsed.Load()) / n)
}

// InflightDelay returns the mean age at now (ns) of the calls in flight, or
// 0 when none is in flight. LALB punishes a provider whose calls hang.
func (s *Stats) InflightDelay(now int64) time.Duration {
	n := s.active.Load()
	if n <= 0 {
		return 0
	}
	age := now/1e3 - s.inflightStartSum.Load()/n
	if age <= 0 {
		return 0
	}
	return time.Duration(age) * time.Microsecond
}

// Window returns the window of recent completions.
func (s *Stats) Window() *Window { return &s.window }

// EWMA returns the peak-sensitive moving average of latency.
func (s *Stats) EWMA() *PeakEWMA { return &s.ewma }

// finite reports whether f is a usable number.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
