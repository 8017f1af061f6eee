// Package rtadaptive is a response-time adaptive balancer: power of two
// choices over a peak-EWMA cost, as in Finagle and Linkerd. Each pick draws
// two candidates in proportion to warm weight and sends the call to the
// cheaper, whose cost is
//
//	charged RTT × (calls in flight + 1)
//
// The RTT is the peak EWMA of package rpcstatus; errors are charged at
// least the method's timeout, fading; a provider without samples is neither
// preferred nor starved. The pick is O(1), without lock or allocation. It
// needs the lbactive filter and says so in one WARN line when it is
// missing. Design notes: DESIGN.md.
package rtadaptive
