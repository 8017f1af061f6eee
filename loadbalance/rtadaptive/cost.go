package rtadaptive

import (
	"math"
	"time"
)

// minRTT is the least response time a provider is charged, so that no cost
// is ever 0: a cost of 0 wins every comparison whatever the calls in flight,
// which is how Dubbo's ShortestResponse herds onto a provider.
const minRTT = float64(time.Microsecond)

// providerEstimate is what the balancer knows about one provider when it compares
// it with another. It knows nothing of dubbo-go.
type providerEstimate struct {
	// RTT is the provider's response-time estimate now: the peak EWMA of
	// its latencies, faded by the time since its last sample.
	RTT time.Duration
	// Known is false when the provider has no sample at all; RTT is then
	// meaningless and a default takes its place (see pairCosts).
	Known bool
	// Inflight is the number of calls to the provider in flight.
	Inflight int64
	// ErrorRatio is the share of its recent calls that failed, in [0, 1],
	// already faded by the time since its last error.
	ErrorRatio float64
	// ErrorCost is the response time an error is charged at least: the
	// call's timeout, which is what an error costs the caller who waits
	// for it or for a retry.
	ErrorCost time.Duration
}

// charged returns the response time to charge the provider: its RTT with
// each error, in the share ErrorRatio, counted as taking at least
// ErrorCost, that is RTT + ErrorRatio × max(ErrorCost − RTT, 0). A
// provider that fails fast is thus not cheaper than a healthy one (it
// would attract all the traffic, and fail it). Invalid inputs count as 0.
// The result is at least 1 µs.
func (e providerEstimate) charged() float64 {
	return charged(float64(e.RTT), e.ErrorRatio, float64(e.ErrorCost))
}

func charged(rtt, ratio, cost float64) float64 {
	rtt = max(rtt, minRTT)
	if ratio > 0 && ratio <= 1 { // also rejects NaN
		rtt += ratio * max(cost-rtt, 0)
	}
	return rtt
}

// pairCosts returns the costs of two providers, to compare: the charged
// response time times (calls in flight + 1), Finagle's and Linkerd's peak
// EWMA cost. A provider without samples is charged defaultRTT if it is
// positive; otherwise it borrows the plain RTT of the provider it is
// compared with, so that it is neither favoured (Dubbo ShortestResponse's
// bug: unknown costs 0) nor shunned (it would never get the sample that
// makes it known): the calls in flight decide, and it gets about its fair
// share until its first call returns. When neither has samples, only the
// calls in flight count.
func pairCosts(a, b providerEstimate, defaultRTT time.Duration) (ca, cb float64) {
	ra, rb := rtts(a.charged(), float64(a.RTT), a.Known, b.charged(), float64(b.RTT), b.Known, defaultRTT)
	return ra * inflightFactor(a.Inflight), rb * inflightFactor(b.Inflight)
}

// rtts applies the rule of Costs to two providers, each given by its
// charged RTT, its plain RTT and whether it has samples, and returns the
// response times to charge them. The balancer calls it directly, sparing
// the providerEstimate values on its hot path.
func rtts(chargedA, plainA float64, knownA bool, chargedB, plainB float64, knownB bool, defaultRTT time.Duration) (float64, float64) {
	if knownA && knownB {
		return chargedA, chargedB
	}
	var def float64
	switch {
	case defaultRTT > 0:
		def = max(float64(defaultRTT), minRTT)
	case knownA:
		def = max(plainA, minRTT)
	case knownB:
		def = max(plainB, minRTT)
	default:
		def = minRTT
	}
	if !knownA {
		chargedA = def
	}
	if !knownB {
		chargedB = def
	}
	return chargedA, chargedB
}

func inflightFactor(n int64) float64 {
	return float64(max(n, 0)) + 1
}

// fade returns the share of an error estimate left after age ns with the
// time constant decay ns.
func fade(age, decay float64) float64 {
	if age <= 0 {
		return 1
	}
	return math.Exp(-age / decay)
}
