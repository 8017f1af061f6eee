package loadaware

import "math"

// Cost names a cost function: the lower cost of a pick's two candidates
// wins. The choice of the default: DESIGN.md.
type Cost string

const (
	// CostCapacity, the default: RTT × (calls in flight + 1) / C, C the
	// provider's concurrency capacity, the capacity it reports
	// (lb.capacity) scaled by util / (util + penalty × eps / qps), or else
	// w × RTT with w CostWRR's weight (Little's law).
	CostCapacity Cost = "capacity"
	// CostWRR is gRPC weighted_round_robin's weight in P2C: (calls in
	// flight + 1) / w, w = qps / (utilization + penalty × eps / qps).
	CostWRR Cost = "wrr"
	// CostJava is Dubbo Java's adaptive cost (AdaptiveMetrics.getLoad):
	// load × (√(RTT in ms) + 1) × (calls in flight + 1) / (success ratio ×
	// weight + 1), load the reported load in percent.
	CostJava Cost = "java"
)

// wrrWeight returns gRPC WRR's weight qps / (util + penalty × eps / qps);
// ok is false when the report gives none (no traffic, no utilization,
// values not finite), as gRPC ignores such reports.
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

// concurrencyCapacity returns CostCapacity's C: capacity when reported
// (> 0), times util / (util + penalty × eps / qps) when those are known,
// else wrrWeight × rtt (ns); ok is false when neither is positive.
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
