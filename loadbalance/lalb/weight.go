package lalb

import (
	"math"
	"time"
)

// Defaults of Tuning. A zero Tuning means all of them.
const (
	// defaultP is the latency exponent. brpc's code uses 1, its doc says 2.
	// We keep 1. In TestCompareP (simulated through the filter, 50
	// callers), P = 2 moves traffic to a new fastest server about 30%
	// sooner after a step change (90% share after 120 ms instead of
	// 170 ms), but with servers whose latency grows with load, P = 1 serves
	// about 7% more calls at a lower mean latency (4.33 ms against 4.62)
	// and its shares oscillate less (std-dev 0.029 against 0.053): squaring
	// amplifies latency noise, so P = 2 over-reacts.
	// Squaring also widens the range of weights beyond what an int64 tree
	// holds with useful resolution for fast, busy services. P = 1 is what
	// brpc runs in production.
	defaultP = 1.0
	// defaultScale makes weights integers with enough resolution: a provider
	// serving 1000 calls/s at 1 ms gets 1e9, one at the 1 call/s minimum and
	// 60 s latency still gets 16, and 1e5 calls/s at 10 µs stays below
	// maxLeafWeight (with P = 1).
	defaultScale = 1e6
	// defaultPunishErrorRatio is brpc's punish_error_ratio.
	defaultPunishErrorRatio = 1.2
	// defaultPunishInflightRatio is brpc's punish_inflight_ratio.
	defaultPunishInflightRatio = 1.5
	// defaultMinShare keeps 1% of traffic on a provider however bad it looks,
	// so that its recovery is noticed (see Tuning.MinShare).
	defaultMinShare = 0.01
	// defaultMinSamples is the number of completions below which a window is
	// too small to estimate a rate (its relative error is about 1/sqrt(n)).
	defaultMinSamples = 16
)

// minQPS is the throughput assumed when the window cannot tell (fewer than
// two completions or a zero span) and the least one ever assumed, as brpc's
// DEFAULT_QPS: a provider that gets little traffic is not pushed further
// down just because it got little traffic.
const minQPS = 1.0

// minLatency stands in for a measured latency of 0 (coarse clocks) so that
// weights stay finite.
const minLatency = float64(time.Microsecond)

// Tuning tunes the weight function. The zero value means the defaults;
// invalid fields (NaN, infinite, zero, negative or out of range) are replaced
// by their defaults.
type Tuning struct {
	// P is the latency exponent in QPS × Scale / latency^P, in (0, 4].
	// Larger values move traffic to the fastest provider more aggressively.
	P float64
	// Scale multiplies every weight, latency being counted in milliseconds.
	// Only ratios between weights matter; Scale sets the integer resolution.
	Scale float64
	// PunishErrorRatio (>= 1) multiplies the latency charged for an error.
	PunishErrorRatio float64
	// PunishInflightRatio (>= 1): when the mean age of the calls in flight
	// exceeds this many average latencies, the weight is scaled down in
	// proportion, so a provider that stopped answering loses traffic long
	// before its calls time out.
	PunishInflightRatio float64
	// MinShare, in (0, 0.5], is the smallest share of the traffic one
	// provider keeps, so that every provider is still probed and a recovered
	// one is noticed. With n providers the share used is
	// min(MinShare, 0.5/n), so that all floors together never take more than
	// half of the traffic (with a fixed MinShare and many providers the
	// floors alone would exceed 100%).
	MinShare float64
	// MinSamples (>= 1) is the number of completions a provider needs before
	// its own weight is computed; before that it counts as new (providerWeight
	// returns ok == false) unless most of its calls failed.
	MinSamples int64
}

// withDefaults returns o with every invalid field replaced by its default.
func (o Tuning) withDefaults() Tuning {
	if !positive(o.P) || o.P > 4 {
		o.P = defaultP
	}
	if !positive(o.Scale) {
		o.Scale = defaultScale
	}
	if !finite(o.PunishErrorRatio) || o.PunishErrorRatio < 1 {
		o.PunishErrorRatio = defaultPunishErrorRatio
	}
	if !finite(o.PunishInflightRatio) || o.PunishInflightRatio < 1 {
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

func finite(f float64) bool   { return !math.IsNaN(f) && !math.IsInf(f, 0) }
func positive(f float64) bool { return finite(f) && f > 0 }

// callStats is what providerWeight needs to know about one provider: a summary of its
// window of recent completions and its calls in flight. Times are in
// nanoseconds on one clock chosen by the caller (monotonic is best).
type callStats struct {
	// Samples is the number of completions in the window, successes and
	// errors.
	Samples int64
	// Errors is how many of Samples failed.
	Errors int64
	// Span is the time between the oldest and the newest completion in the
	// window; (Samples-1)/Span is the provider's throughput.
	Span time.Duration
	// SuccessLatency is the mean latency of the successes in the window.
	SuccessLatency time.Duration
	// ErrorLatency is the mean latency of the errors in the window.
	ErrorLatency time.Duration
	// Timeout is the call timeout if known, else 0. When set, an error is
	// charged at least the timeout: the caller waited for it, or will pay
	// for a retry. brpc charges the timeout when no retry is left.
	Timeout time.Duration
	// Inflight is the number of calls started and not yet completed.
	Inflight int64
	// InflightStartSum is the sum of the start times of the calls in
	// flight, in nanoseconds. It may wrap around: the mean age is computed
	// modulo 2^64, which is exact as long as the true sum of ages fits in
	// an int64 (292 years). A sum kept in a coarser unit can be multiplied
	// up for the same reason.
	InflightStartSum int64
}

// providerWeight returns the LALB weight of one provider at now (ns, the clock of
// callStats), or ok == false when the provider has too few completions to judge
// (fewer than MinSamples, most of them successes): the caller then gives it
// newProviderWeight, scaled by its warmup factor.
//
// The weight is brpc's base weight, useful throughput over latency:
//
//	QPS × Scale / latency^P, latency in ms
//
// where QPS counts successes only ((Samples-1)/Span × successes/Samples, at
// least 1 call/s scaled by the success ratio) and latency is the mean
// success latency plus the cost of the errors spread over the successes. An
// error costs PunishErrorRatio × max(its latency, the success latency), or
// the Timeout if that is larger: so errors cut both terms, as in brpc, and a
// provider that only fails gets 0 (treeWeight then lifts it to its floor).
//
// If calls are in flight and their mean age exceeds PunishInflightRatio ×
// latency, the weight is multiplied by PunishInflightRatio × latency / age:
// a provider whose calls hang loses traffic in proportion to how late they
// are, without waiting for timeouts.
//
// The result is finite and >= 0; it is not floored: see treeWeight.
func providerWeight(s callStats, now int64, o Tuning) (w float64, ok bool) {
	o = o.withDefaults()
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

	qps := minQPS
	if n >= 2 && s.Span > 0 {
		qps = max(float64(n-1)/s.Span.Seconds(), minQPS)
	}
	qps *= float64(succ) / float64(n)

	lat := max(float64(s.SuccessLatency), minLatency)
	if errs > 0 {
		cost := o.PunishErrorRatio * max(float64(s.ErrorLatency), lat)
		cost = max(cost, float64(s.Timeout))
		lat += float64(errs) * cost / float64(succ)
	}

	w = qps * o.Scale / pow(lat/float64(time.Millisecond), o.P)

	if s.Inflight > 0 {
		age := float64(meanAge(now, s.Inflight, s.InflightStartSum))
		if limit := o.PunishInflightRatio * lat; age > limit {
			w *= limit / age
		}
	}
	if !finite(w) || w < 0 {
		return 0, true
	}
	return w, true
}

// meanAge returns the mean age at now of count calls whose start times sum
// to sum, in wrapping arithmetic (see callStats.InflightStartSum); a negative
// age (clock skew between callers) counts as 0.
func meanAge(now, count, sum int64) int64 {
	total := int64(uint64(now)*uint64(count) - uint64(sum))
	if total <= 0 {
		return 0
	}
	return total / count
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

// newProviderWeight returns the weight of a provider without enough samples
// of its own: the average of the n providers whose weights sum to sum (the
// caller decides which ones: those with samples of their own is best), or
// Scale (1 call/s at 1 ms) when there are none. The caller multiplies it by
// the provider's warmup factor in [0, 1].
//
// brpc gives a new server the average too, but recomputes its weight from
// the first completion, when its throughput is still unknown and defaults to
// 1 call/s, so the weight collapses; here the average holds until
// MinSamples completions give a real estimate.
func newProviderWeight(sum int64, n int, o Tuning) float64 {
	o = o.withDefaults()
	if n <= 0 || sum <= 0 {
		return o.Scale
	}
	return float64(sum) / float64(n)
}

// floorWeight returns the least tree weight a provider may have when n providers
// share a tree whose weights sum to total: min(MinShare, 0.5/n) × total,
// and at least 1. A provider held at its floor receives that share of the
// traffic (the total includes the floors themselves, so the share is exact
// at the fixed point).
func floorWeight(total int64, n int, o Tuning) int64 {
	o = o.withDefaults()
	if n <= 0 || total <= 0 {
		return 1
	}
	share := min(o.MinShare, 0.5/float64(n))
	return max(int64(share*float64(total)), 1)
}

// treeWeight turns a weight from providerWeight (or newProviderWeight × warmup) into
// the integer to Set in the Tree: rounded, raised to floorWeight(total, n) and
// capped at maxLeafWeight. Every provider thus keeps a positive weight;
// only the caller removes one, by building a tree without it or setting 0.
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
