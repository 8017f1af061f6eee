// Package leastactive sends each call to the provider with the fewest calls
// in flight, as Dubbo's LeastActiveLoadBalance does: a slow or stuck
// provider accumulates calls in flight and stops receiving new ones.
//
// # The filter is required
//
// The calls in flight are counted by the module's consumer filter,
// "lbactive" (package filter), into package rpcstatus. Without it every
// count stays 0 and the balancer can only break ties, so it degrades to
// weighted random. Dubbo and dubbo-go degrade silently in that case; this
// balancer notices it instead: when, after a number of picks of one
// (service, method), no provider has ever had a call counted, it logs once,
// at error level, the configuration to add:
//
//	dubbo:
//	  consumer:
//	    filter: lbactive
//
// or, for one reference only:
//
//	dubbo:
//	  consumer:
//	    references:
//	      GreeterClientImpl:
//	        filter: lbactive
//
// dubbo-go's own "active" filter does not feed this balancer.
// Balancer.FilterMissing reports the same finding to code (a health check,
// a start-up probe).
//
// # Ties and weights
//
// Providers tied on the fewest calls in flight share the call in
// proportion to their warm weights (package warmup), drawn in [0, total):
// dubbo-go draws in [1, total], which with weights 1:1:2 gives 8/33/58 %
// instead of 25/25/50 %. Equal weights give a uniform draw. A provider whose
// warm weight is 0 (drained) gets no call unless every provider has weight
// 0, in which case they all count as equal.
//
// # Cost
//
// By default every pick scans all providers: O(N) atomic loads and no
// allocation, well under a microsecond at 100 providers. For very large
// provider lists Options.Choices enables the power-of-d-choices variant of
// Envoy's and gRPC's least_request: d providers are drawn at random in
// proportion to their warm weight and the one with the fewest calls in
// flight wins, O(d) per pick.
//
// A failover retry, which offers a subset of the providers, is answered
// from that subset with the same rule.
package leastactive
