package loadaware

import "math"

// Cost names a cost function of the balancer.
type Cost string

// The cost functions. Both rank the two candidates of a pick; the lower
// cost wins. Reasoning and the simulations that chose the default:
// DESIGN.md beside this file.
const (
	// CostWRR is gRPC weighted_round_robin's weight, from the provider's
	// report: w = qps / (utilization + penalty × eps / qps), an estimate of
	// the calls per second the provider serves at full utilization; the
	// cost of a pick is (this consumer's calls in flight + 1) / w.
	CostWRR Cost = "wrr"
	// CostJava is Dubbo Java's adaptive cost (AdaptiveMetrics.getLoad):
	// load × (√(RTT in ms) + 1) × (calls in flight + 1) / (success ratio ×
	// weight + 1), load the provider's reported load in percent.
	CostJava Cost = "java"
)

// Weight returns gRPC WRR's weight of a provider that serves qps calls and
// eps failures per second at utilization util in [0, 1], with the error
// penalty penalty: qps / (util + penalty × eps / qps). ok is false when
// the report cannot give a weight (no traffic, no utilization, or values
// that are not finite), as gRPC ignores such reports.
func Weight(qps, eps, util, penalty float64) (w float64, ok bool) {
	if !(qps > 0) || !(util > 0) || math.IsInf(qps, 0) || math.IsInf(util, 0) {
		return 0, false
	}
	d := util
	if eps > 0 && penalty > 0 {
		d += penalty * eps / qps
	}
	w = qps / d
	if !(w > 0) || math.IsInf(w, 0) {
		return 0, false
	}
	return w, true
}

// WRRCost is the cost of a pick by CostWRR: (inflight + 1) / w, w > 0.
func WRRCost(inflight int64, w float64) float64 { return float64(max(inflight, 0)+1) / w }

// JavaCost is Dubbo Java's adaptive cost of a provider with the reported
// load (percent), RTT rttMs (ms), calls in flight, success ratio in [0, 1]
// and weight. A load of 0 (an idle provider, or none reported yet, which
// Java starts from) counts as minLoad so that the calls in flight still
// order providers (Java's cost is then 0 for all, and its tie-break
// random).
func JavaCost(load, rttMs float64, inflight int64, success, weight float64) float64 {
	return max(load, minLoad) * (math.Sqrt(max(rttMs, 0)) + 1) * float64(max(inflight, 0)+1) / (success*max(weight, 0) + 1)
}

// minLoad is the least load JavaCost charges, in percent.
const minLoad = 0.01
