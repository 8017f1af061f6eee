package algo

import "math"

// JavaCost is Dubbo Java's adaptive cost (AdaptiveMetrics.getLoad, 3.3.6)
// of a provider with the reported load (percent, at least JavaMinLoad),
// RTT rttMs (ms), calls in flight, success ratio (JavaSuccess) and weight:
//
//	load × (√rttMs + 1) × (inflight + 1) / (success × weight + 1)
func JavaCost(load, rttMs float64, inflight int64, success, weight float64) float64 {
	return max(load, JavaMinLoad) * (math.Sqrt(max(rttMs, 0)) + 1) * float64(max(inflight, 0)+1) / (success*max(weight, 0) + 1)
}

// JavaMinLoad is the least load JavaCost charges, in percent.
const JavaMinLoad = 0.01

// JavaSuccess is Dubbo Java's success ratio: calls that succeeded over
// calls made + 1, calls in flight counted as made.
func JavaSuccess(total, failed, active int64) float64 {
	return float64(max(total-failed, 0)) / float64(max(total, 0)+max(active, 0)+1)
}
