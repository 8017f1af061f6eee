package rpcstatus

import (
	"sync/atomic"
	"time"
)

// WindowSize is the number of recent completions a Window keeps, as brpc's
// locality-aware balancer does.
const WindowSize = 128

// Window is a fixed ring of the most recent completions of one provider (or
// method). Writers never block each other: a slot is claimed with an atomic
// increment and the running sums are adjusted by the difference between the
// new sample and the one it replaces, so a summary costs O(1).
//
// A reader racing with writers may see a sample that is half recorded; the
// error is one sample out of 128 and heals on the next write, which is fine
// for load balancing. Samples are capped at one hour.
type Window struct {
	head atomic.Uint64
	// lat holds latency+1 in ns, negated for a failed call; 0 is an empty slot.
	lat [WindowSize]atomic.Int64
	end [WindowSize]atomic.Int64

	// ok and failed pack the latency sum and the count of the samples of
	// each kind in one word, sum<<countBits | count, so that a sample
	// enters or leaves a sum with one atomic add.
	ok, failed atomic.Int64
}

const (
	countBits = 8 // WindowSize < 1<<countBits
	countMask = 1<<countBits - 1
	// maxSample caps a sample so that WindowSize of them fit the sum.
	maxSample = int64(time.Hour)
)

func unpackSum(v int64) (sum, count int64) {
	return max(v>>countBits, 0), v & countMask
}

// WindowSummary describes the completions currently in a Window.
type WindowSummary struct {
	// Samples is the number of completions in the window (at most WindowSize).
	Samples int64
	// Errors is how many of them failed.
	Errors int64
	// SuccessLatency is the mean latency of the successful ones.
	SuccessLatency time.Duration
	// ErrorLatency is the mean latency of the failed ones.
	ErrorLatency time.Duration
	// Span is the time between the oldest and the newest completion.
	Span time.Duration
	// Last is the time (ns, same clock as Add) of the newest completion.
	Last int64
}

// QPS returns completions per second over the window, or 0 when the window
// is too short to tell.
func (s WindowSummary) QPS() float64 {
	if s.Samples < 2 || s.Span <= 0 {
		return 0
	}
	return float64(s.Samples-1) / s.Span.Seconds()
}

// Add records a completion at now (ns) that took latency ns.
func (w *Window) Add(now, latency int64, failed bool) {
	latency = min(max(latency, 0), maxSample)
	v := latency + 1
	if failed {
		v = -v
	}
	i := (w.head.Add(1) - 1) % WindowSize
	old := w.lat[i].Swap(v)
	w.end[i].Store(now)
	add := latency<<countBits | 1
	switch {
	case old > 0 && !failed:
		w.ok.Add(add - ((old-1)<<countBits | 1))
	case old > 0:
		w.failed.Add(add)
		w.ok.Add(-((old-1)<<countBits | 1))
	case old < 0 && failed:
		w.failed.Add(add - ((-old-1)<<countBits | 1))
	case old < 0:
		w.ok.Add(add)
		w.failed.Add(-((-old-1)<<countBits | 1))
	case failed:
		w.failed.Add(add)
	default:
		w.ok.Add(add)
	}
}

// Summary returns the current figures of the window.
func (w *Window) Summary() WindowSummary {
	head := w.head.Load()
	if head == 0 {
		return WindowSummary{}
	}
	oldest := uint64(0)
	if head > WindowSize {
		oldest = head % WindowSize
	}
	okSum, okN := unpackSum(w.ok.Load())
	errSum, errN := unpackSum(w.failed.Load())
	s := WindowSummary{Samples: okN + errN, Errors: errN, Last: w.end[(head-1)%WindowSize].Load()}
	if okN > 0 {
		s.SuccessLatency = time.Duration(okSum / okN)
	}
	if errN > 0 {
		s.ErrorLatency = time.Duration(errSum / errN)
	}
	s.Span = time.Duration(max(s.Last-w.end[oldest].Load(), 0))
	return s
}

// Recent returns the figures of the newest completions of the window: those
// that completed at or after since (ns, same clock as Add), and at least the
// newest atLeast of them whatever their age. It reads the ring, O(WindowSize),
// without allocating; racing writers skew it as they skew Summary.
func (w *Window) Recent(since int64, atLeast int64) WindowSummary {
	head := w.head.Load()
	if head == 0 {
		return WindowSummary{}
	}
	n := min(head, WindowSize)
	var s WindowSummary
	var okSum, errSum int64
	oldest := int64(0)
	for k := uint64(0); k < n; k++ {
		i := (head - 1 - k) % WindowSize
		v, end := w.lat[i].Load(), w.end[i].Load()
		if v == 0 {
			continue
		}
		if s.Samples >= atLeast && end < since {
			break
		}
		if k == 0 {
			s.Last = end
		}
		oldest = end
		s.Samples++
		if v > 0 {
			okSum += v - 1
		} else {
			errSum += -v - 1
			s.Errors++
		}
	}
	if ok := s.Samples - s.Errors; ok > 0 {
		s.SuccessLatency = time.Duration(okSum / ok)
	}
	if s.Errors > 0 {
		s.ErrorLatency = time.Duration(errSum / s.Errors)
	}
	s.Span = time.Duration(max(s.Last-oldest, 0))
	return s
}
