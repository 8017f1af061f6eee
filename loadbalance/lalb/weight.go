package lalb

import (
	"math"
	"time"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
)

// Defaults of Tuning (DESIGN.md, "Choices").
const (
	defaultP                   = 1.0
	defaultScale               = 1e6
	defaultPunishErrorRatio    = 1.2 // brpc's punish_error_ratio
	defaultPunishInflightRatio = 1.5 // brpc's punish_inflight_ratio
	defaultMinShare            = 0.01
	defaultMinSamples          = 16
)

// minQPS is the throughput assumed when the window cannot tell, and the
// least ever assumed (brpc's DEFAULT_QPS).
const minQPS = 1.0

// minLatency stands in for a measured latency of 0 (coarse clocks).
const minLatency = float64(time.Microsecond)

// Tuning tunes the weight function. The zero value means the defaults;
// invalid fields (NaN, infinite, out of range) get their defaults.
type Tuning struct {
	P                float64 // the latency exponent in QPS × Scale / latency^P, in (0, 4]; default 1
	Scale            float64 // multiplies every weight (latency in ms); default 1e6
	PunishErrorRatio float64 // (>= 1) multiplies the latency charged for an error; default 1.2
	// PunishInflightRatio (>= 1): once the mean age of the calls in flight
	// exceeds this many mean latencies, the weight falls in proportion, so
	// a hanging provider loses traffic before its calls time out. Default 1.5.
	PunishInflightRatio float64
	// MinShare, in (0, 0.5], is the least share of the traffic a provider
	// keeps, min(MinShare, 0.5/n) of n providers, so that a recovery is
	// seen. Default 0.01.
	MinShare   float64
	MinSamples int64 // (>= 1) completions for a weight of its own; default 16
}

// withDefaults returns o with every invalid field replaced by its default.
func (o Tuning) withDefaults() Tuning {
	if !positive(o.P) || o.P > 4 {
		o.P = defaultP
	}
	if !positive(o.Scale) {
		o.Scale = defaultScale
	}
	if !algo.Finite(o.PunishErrorRatio) || o.PunishErrorRatio < 1 {
		o.PunishErrorRatio = defaultPunishErrorRatio
	}
	if !algo.Finite(o.PunishInflightRatio) || o.PunishInflightRatio < 1 {
		o.PunishInflightRatio = defaultPunishInflightRatio
	}
	if !positive(o.MinShare) || o.MinShare > 0.5 {
		o.MinShare = defaultMinShare
	}
	if o.MinSamples < 1 {
		o.MinSamples = defaultMinSamples
	}
	return o
}

func positive(f float64) bool { return algo.Finite(f) && f > 0 }

// callStats is what providerWeight reads of one provider.
type callStats struct {
	Samples, Errors              int64         // completions in the window, and the failed ones
	Span                         time.Duration // from the oldest completion to the newest
	SuccessLatency, ErrorLatency time.Duration // mean latencies
	Timeout                      time.Duration // what an error is charged at least; 0: unknown
	Delay                        time.Duration // the mean age of the calls in flight; 0: none
}

// rate is the throughput (calls/s) of n completions over span, at least
// minQPS.
func rate(n int64, span time.Duration) float64 {
	if n < 2 || span <= 0 {
		return minQPS
	}
	return max(float64(n-1)/span.Seconds(), minQPS)
}

// providerWeight returns brpc's weight of one provider, QPS × Scale /
// latency^P (ms), with o valid (withDefaults): successes over the mean
// success latency plus the errors' cost spread over the successes, lowered
// by the in-flight penalty ("Weights" in DESIGN.md). ok is false for a
// newcomer: fewer than MinSamples completions, most of them successes. The
// weight is finite and >= 0, not floored (treeWeight).
func providerWeight(s callStats, o Tuning) (w float64, ok bool) {
	n := s.Samples
	if n <= 0 {
		return 0, false
	}
	errs := min(max(s.Errors, 0), n)
	succ := n - errs
	if n < o.MinSamples && 2*errs <= n {
		return 0, false
	}
	if succ == 0 {
		return 0, true
	}
	qps := rate(n, s.Span) * float64(succ) / float64(n)
	lat := max(float64(s.SuccessLatency), minLatency)
	if errs > 0 {
		cost := max(o.PunishErrorRatio*max(float64(s.ErrorLatency), lat), float64(s.Timeout))
		lat += float64(errs) * cost / float64(succ)
	}
	w = penalize(qps*o.Scale/pow(lat/float64(time.Millisecond), o.P), lat, s.Delay, o)
	if !algo.Finite(w) || w < 0 {
		return 0, true
	}
	return w, true
}

// penalize scales w by PunishInflightRatio × lat / delay when the calls in
// flight are older on average (delay) than PunishInflightRatio × lat (ns).
func penalize(w, lat float64, delay time.Duration, o Tuning) float64 {
	if limit := o.PunishInflightRatio * lat; float64(delay) > limit {
		return w * limit / float64(delay)
	}
	return w
}

func pow(x, p float64) float64 {
	switch p {
	case 1:
		return x
	case 2:
		return x * x
	}
	return math.Pow(x, p)
}

// newProviderWeight returns the weight of a provider without samples of
// its own: the mean of n weights summing to sum, or Scale when there are
// none. The caller scales it by the provider's warm fraction.
func newProviderWeight(sum int64, n int, o Tuning) float64 {
	if n <= 0 || sum <= 0 {
		return o.Scale
	}
	return float64(sum) / float64(n)
}

// floorWeight returns the least tree weight of one of n providers in a
// tree of total weight total: min(MinShare, 0.5/n) × total, at least 1.
func floorWeight(total int64, n int, o Tuning) int64 {
	if n <= 0 || total <= 0 {
		return 1
	}
	share := min(o.MinShare, 0.5/float64(n))
	return max(int64(share*float64(total)), 1)
}

// treeWeight turns a weight into a tree leaf: rounded, at least
// floorWeight(total, n) and at most maxLeafWeight.
func treeWeight(w float64, total int64, n int, o Tuning) int64 {
	q := int64(0)
	switch {
	case !(w > 0): // also NaN
	case w >= float64(maxLeafWeight):
		q = maxLeafWeight
	default:
		q = int64(w + 0.5)
	}
	return min(max(q, floorWeight(total, n, o)), maxLeafWeight)
}
