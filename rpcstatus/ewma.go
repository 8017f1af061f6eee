package rpcstatus

import (
	"math"
	"sync/atomic"
	"time"
)

// EWMADecay is the time constant of PeakEWMA, the 10 s that Finagle and
// Linkerd use: old samples weigh e^-1 after 10 s.
const EWMADecay = 10 * time.Second

// PeakEWMA is a peak-sensitive, time-decayed moving average of latency
// (Finagle's and Linkerd's "peak EWMA"): a sample above the average replaces
// it at once, so a provider that turns slow is noticed on its first slow
// call; a sample below it is blended in with weight 1-e^(-dt/EWMADecay),
// and at least 1/EWMASamples, so that the average forgets a provider's old
// latency within EWMADecay or EWMASamples samples, whichever comes first:
// a consumer that sees a provider's calls often learns that it turned
// faster within a few hundred samples, however busy the provider.
// Reading decays the value by the time since the last sample, so a provider
// that stopped receiving traffic drifts back towards zero and gets probed
// again instead of staying punished forever. Samples are compared with and
// blended into that decayed value (see observe), as the references do
// when they decay the value on every read.
//
// State is one 64-bit word (a float32 of nanoseconds and a 32-bit stamp in
// units of 2^20 ns ≈ 1 ms), updated with compare-and-swap.
type PeakEWMA struct {
	state atomic.Uint64
}

// EWMASamples is the number of samples within which a PeakEWMA forgets
// at the latest: a sample below the average weighs at least 1/EWMASamples.
// A consumer that sees a sixteenth of a provider's calls thus learns that
// it turned faster in as many samples as one that sees them all; with the
// 10 s decay alone, the average takes seconds to come down from a latency
// two or three times the new one, whatever the consumer sees.
const EWMASamples = 64

const stampShift = 20 // ns to stamp units (≈1.05 ms); wraps after ≈52 days

func pack(v float64, now int64) uint64 {
	return uint64(math.Float32bits(float32(v)))<<32 | uint64(uint32(now>>stampShift))
}

func unpack(s uint64, now int64) (v, dt float64) {
	v = float64(math.Float32frombits(uint32(s >> 32)))
	ds := uint32(now>>stampShift) - uint32(s) // wrap-safe difference
	if int32(ds) < 0 {
		ds = 0 // a sample stamped slightly ahead of now by a racing writer
	}
	return v, float64(int64(ds) << stampShift)
}

// observe blends a latency sample (ns) taken at now (ns) into the average.
// Both rules start from the average as Value reads it at now, faded since
// the last sample: a sample above it replaces it; a sample below it moves
// it towards the sample by max(1-w, 1/EWMASamples), w the fade
// (e^(-dt/EWMADecay)). So a sample never moves the average away from
// itself, and the first sample after a long silence, when the old value
// has faded, counts for nearly everything.
func (e *PeakEWMA) observe(now, latency int64) {
	x := float64(max(latency, 0))
	for {
		old := e.state.Load()
		nv := x
		if old != 0 {
			v, dt := unpack(old, now)
			w := decay(dt)
			if faded := v * w; x < faded {
				b := min(w, 1-1.0/EWMASamples)
				nv = faded*b + x*(1-b)
			}
		}
		if e.state.CompareAndSwap(old, pack(nv, now)) {
			return
		}
	}
}

// Value returns the average at now (ns), decayed by the time since the last
// sample, and whether any sample was seen at all.
func (e *PeakEWMA) Value(now int64) (time.Duration, bool) {
	s := e.state.Load()
	if s == 0 {
		return 0, false
	}
	v, dt := unpack(s, now)
	v *= decay(dt)
	if !finite(v) {
		return 0, true
	}
	return time.Duration(v), true
}

// Last returns the average as of the last sample, not decayed, and
// whether any sample was seen: the latency the provider showed while it
// served, where Value is what a pick should believe of it now.
func (e *PeakEWMA) Last() (time.Duration, bool) {
	s := e.state.Load()
	if s == 0 {
		return 0, false
	}
	v := float64(math.Float32frombits(uint32(s >> 32)))
	if !finite(v) {
		return 0, true
	}
	return time.Duration(v), true
}

// Pair returns the averages of a and b, the older decayed to the time of
// the later's last sample, and whether each has a sample. Decaying both on
// to any later time scales them by one common factor, so Pair orders two
// providers as their Values at any time after both samples do, without
// reading a clock.
func Pair(a, b *PeakEWMA) (va, vb float64, oka, okb bool) {
	sa, sb := a.state.Load(), b.state.Load()
	oka, okb = sa != 0, sb != 0
	va = float64(math.Float32frombits(uint32(sa >> 32)))
	vb = float64(math.Float32frombits(uint32(sb >> 32)))
	if oka && okb {
		// Stamps are 32-bit, wrap-safe within half their range (26 days).
		switch ds := int64(int32(uint32(sa) - uint32(sb))); {
		case ds > 0:
			vb *= decay(float64(ds << stampShift))
		case ds < 0:
			va *= decay(float64(-ds << stampShift))
		}
	}
	if !finite(va) {
		va = 0
	}
	if !finite(vb) {
		vb = 0
	}
	return va, vb, oka, okb
}

// SilentLonger returns how much longer a has gone without a sample than b
// (ns; negative when b is the more silent), from the stamps of their last
// samples, without reading a clock; 0 when either has none.
func SilentLonger(a, b *PeakEWMA) int64 {
	sa, sb := a.state.Load(), b.state.Load()
	if sa == 0 || sb == 0 {
		return 0
	}
	// Stamps are 32-bit, wrap-safe within half their range (26 days).
	return int64(int32(uint32(sb)-uint32(sa))) << stampShift
}

// decay returns e^(-dt/EWMADecay). Samples of a provider with traffic are
// at most a few hundred milliseconds apart (x < 1/16), where five terms of
// the series, x^6/720 < 1e-10 from the exact value, cost a few
// multiplications instead of a call to math.Exp (the main cost of a read).
func decay(dt float64) float64 {
	x := dt / float64(EWMADecay)
	if x < 1.0/16 {
		return 1 - x*(1-x/2*(1-x/3*(1-x/4*(1-x/5))))
	}
	return math.Exp(-x)
}
