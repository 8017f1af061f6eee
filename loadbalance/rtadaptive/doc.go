// Package rtadaptive is a response-time adaptive balancer: power of two
// choices over a peak-EWMA cost, as in Finagle and Linkerd. Each pick draws
// two candidates, in proportion to warm weight, and sends the call to the
// cheaper, whose cost is
//
//	charged RTT × (calls in flight + 1)
//
// The RTT is the peak EWMA of package rpcstatus; errors are charged at
// least the method's timeout and fade; a provider without samples is
// neither preferred nor starved (DESIGN.md). The pick is O(1) with no lock and
// no allocation. It needs the lbactive filter and says so in one WARN line
// per service and method when it is missing. Reasoning, comparison with
// Dubbo's ShortestResponse and Adaptive, and figures: DESIGN.md beside this
// file.
package rtadaptive
