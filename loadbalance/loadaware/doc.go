// Package loadaware is a balancer that weighs providers by the load they
// report (package loadreport: Go providers with the lbload filter, and
// Dubbo Java providers, which answer Dubbo's lb_adaptive request). The
// lbactive filter asks for the report on every call of a method whose
// balancer is loadaware and stores it (rpcstatus.Load).
//
// Each pick draws two candidates in proportion to warm weight and sends
// the call to the cheaper by Options.Cost (default CostCapacity). Values
// are computed from the reports every UpdatePeriod by one caller; a
// provider without a usable report (none, in its Blackout, older than
// Expiration, or a Java provider's, which gives only its machine's load)
// borrows the mean value of the others, and with none usable anywhere the
// cost is rtadaptive's, RTT × (calls in flight + 1). A provider's cost
// fades with the time since its last call, and a provider with no call
// in flight that has gone ProbeAfter longer than the other candidate
// without one wins the pick. Select allocates nothing and takes no lock.
// Reasoning and simulations: DESIGN.md.
package loadaware
