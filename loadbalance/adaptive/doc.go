// Package adaptive is Dubbo Java's AdaptiveLoadBalance (3.3.6) under its
// name, "adaptive", so that a Java provider that names it works in a Go
// consumer: each pick draws two distinct providers uniformly and sends the
// call to the one with the lower Java load (algo.JavaCost),
//
//	load × (√RTT in ms + 1) × (calls in flight + 1) / (success ratio × weight + 1)
//
// ties drawn in proportion to warm weight; a provider not picked for twice
// its timeout costs 0, so that it is tried again (Java's "mandatory
// selection"). load is what the provider reports in Dubbo's lb_adaptive
// exchange (Java providers answer it; Go providers with the lbload filter
// too): the lbactive filter asks for it on every call of a method whose
// balancer is adaptive, and stores it (rpcstatus.Load).
//
// RTT is not Java's: Java folds the RT the provider reports into an
// average that a penalty overwrites after every response and that decays
// to 0 by shifts (apache/dubbo#15810), so a slow provider looks fastest.
// Here RTT is this consumer's own peak EWMA of the provider's latency
// (rpcstatus.PeakEWMA, fed by the lbactive filter: an upward sample counts
// at once, and it decays over 10 s without samples). DESIGN.md beside this
// file lists every departure. Select allocates nothing and takes no lock.
package adaptive
