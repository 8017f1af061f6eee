package loadaware

import (
	"math"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
)

// Cost names a cost function of the balancer.
type Cost string

// The cost functions. Both rank the two candidates of a pick; the lower
// cost wins. Reasoning and the simulations that chose the default:
// DESIGN.md beside this file.
const (
	// CostCapacity, the default, is rtadaptive's cost divided by the
	// provider's concurrency capacity C: RTT × (calls in flight + 1) / C,
	// C the capacity the provider reports (lb.capacity), scaled down by
	// gRPC's error penalty, util / (util + penalty × eps / qps); for a
	// provider that reports no capacity, C = w × RTT, w gRPC WRR's weight
	// (see CostWRR): the calls it serves at once at full utilization by
	// Little's law, which makes the cost (calls in flight + 1) / w.
	CostCapacity Cost = "capacity"
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

// wrrWeight returns gRPC WRR's weight of a provider that serves qps calls and
// eps failures per second at utilization util in [0, 1], with the error
// penalty penalty: qps / (util + penalty × eps / qps). ok is false when
// the report cannot give a weight (no traffic, no utilization, or values
// that are not finite), as gRPC ignores such reports.
func wrrWeight(qps, eps, util, penalty float64) (w float64, ok bool) {
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

// wrrCost is the cost of a pick by CostWRR: (inflight + 1) / w, w > 0.
func wrrCost(inflight int64, w float64) float64 { return float64(max(inflight, 0)+1) / w }

// capacityCost is the cost of a pick by CostCapacity: rtt × (inflight + 1)
// / c, rtt at least 1 µs, c > 0 the concurrency capacity.
func capacityCost(rtt float64, inflight int64, c float64) float64 {
	return max(rtt, minRTT) * float64(max(inflight, 0)+1) / c
}

// concurrencyCapacity returns the concurrency capacity CostCapacity weighs: capacity,
// when reported (> 0), times util / (util + penalty × eps / qps) when the
// rates and utilization are known, else w × rtt (ns); ok is false when
// neither gives a positive value.
func concurrencyCapacity(capacity, qps, eps, util, penalty, rtt float64) (c float64, ok bool) {
	if capacity > 0 {
		c = capacity
		if qps > 0 && util > 0 && eps > 0 && penalty > 0 {
			c *= util / (util + penalty*eps/qps)
		}
		return c, c > 0
	}
	w, ok := wrrWeight(qps, eps, util, penalty)
	if !ok || !(rtt > 0) {
		return 0, false
	}
	c = w * rtt / 1e9
	return c, c > 0 && !math.IsInf(c, 0)
}

// javaCost is Dubbo Java's adaptive cost of a provider with the reported
// load (percent), RTT rttMs (ms), calls in flight, success ratio in [0, 1]
// and weight: algo.JavaCost, which the adaptive balancer shares.
func javaCost(load, rttMs float64, inflight int64, success, weight float64) float64 {
	return algo.JavaCost(load, rttMs, inflight, success, weight)
}
