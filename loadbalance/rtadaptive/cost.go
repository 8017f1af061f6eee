package rtadaptive

import (
	"math"
	"time"
)

// minRTT is the least response time a provider is charged: a cost of 0
// would win every comparison whatever the calls in flight, which is how
// Dubbo's ShortestResponse herds onto a provider.
const minRTT = float64(time.Microsecond)

// charged returns the response time to charge a provider of RTT rtt whose
// errors, a share ratio of its recent calls, each count as taking at least
// cost: rtt + ratio × max(cost − rtt, 0), at least minRTT. An invalid ratio
// counts as 0.
func charged(rtt, ratio, cost float64) float64 {
	rtt = max(rtt, minRTT)
	if ratio > 0 && ratio <= 1 { // also rejects NaN
		rtt += ratio * max(cost-rtt, 0)
	}
	return rtt
}

// rtts returns the response times to charge two providers, each given by
// its charged RTT, its plain RTT and whether it has samples. A provider
// without samples is charged defaultRTT if it is positive, else the plain
// RTT of the other, so that it is neither favoured nor shunned and the
// calls in flight decide; minRTT when neither has samples.
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

// inflightFactor is the cost's factor of n calls in flight.
func inflightFactor(n int64) float64 { return float64(max(n, 0)) + 1 }

// fade returns the share of an error charge left after age ns with the
// time constant decay ns.
func fade(age, decay float64) float64 {
	if age <= 0 {
		return 1
	}
	return math.Exp(-age / decay)
}
