// Package adaptive is Dubbo Java's AdaptiveLoadBalance (3.3.6) under Java's
// name, "adaptive", so that a Java provider that names it works in a Go
// consumer: each pick draws two distinct providers uniformly and sends the
// call to the one with the lower Java load (algo.JavaCost),
//
//	load × (√RTT in ms + 1) × (calls in flight + 1) / (success ratio × weight + 1)
//
// ties drawn in proportion to warm weight; a provider not picked for twice
// its timeout costs 0, so that it is tried again. load is what the provider
// reports in Dubbo's lb_adaptive exchange, which the lbactive filter asks
// for; RTT is this consumer's own peak EWMA of the provider's latency, not
// Java's (DESIGN.md lists every departure). Select allocates nothing and
// takes no lock.
package adaptive
