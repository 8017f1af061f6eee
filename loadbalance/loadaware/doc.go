// Package loadaware is a balancer that weighs providers by the load they
// report (package loadreport: Go providers with the lbload filter, and
// every Dubbo Java provider, which answers Dubbo's lb_adaptive request).
// The lbactive filter asks each provider for its report on every call of a
// method whose balancer is loadaware and stores it (rpcstatus.Load).
//
// Each pick draws two candidates (in proportion to warm weight, as
// rtadaptive does) and sends the call to the cheaper. The default cost is
// rtadaptive's divided by the provider's concurrency capacity C:
//
//	cost = RTT × (this consumer's calls in flight + 1) / C
//
// C is the capacity the provider reports (its lb.capacity), or else, by
// Little's law, w × RTT with gRPC weighted_round_robin's weight
//
//	w = qps / (utilization + ErrorPenalty × eps / qps)
//
// from its report (utilization: the larger of its CPU utilization and its
// calls in flight over its configured capacity). The cost (CostWRR's too)
// decays with the time since the provider's last call, as rtadaptive's
// does, so that a provider that gets no call (and so no new report) is
// probed again; a provider with no call in flight that has gone
// ProbeAfter longer than the other candidate without a call is probed
// whatever its cost. A Dubbo Java provider reports only its machine's load,
// which is no utilization of its own: it gets the mean of the others, as
// a provider without a report. Capacities are computed every UpdatePeriod
// by one caller, off the other callers' path; a provider whose reports began less than Blackout ago,
// or whose last report is older than Expiration, gets the mean weight of
// the others, as in gRPC; when no provider has a weight the balancer falls
// back to rtadaptive's cost (peak-EWMA RTT × (calls in flight + 1)). Dubbo
// Java's adaptive cost is available as Options.Cost = CostJava for
// comparison. Select allocates nothing and takes no lock. Reasoning and
// the simulations: DESIGN.md beside this file.
package loadaware
