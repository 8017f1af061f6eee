// Package fewestactive is the fewestactive balancer (Dubbo's least-active
// algorithm): each call goes to the
// provider with the fewest calls in flight for its method, ties broken in
// proportion to warm weight with an unbiased draw (dubbo-go's is biased);
// a provider of weight 0 gets no call unless all have weight 0. Above
// Options.ScanUpTo providers (256) a pick takes the fewer in flight of two
// providers drawn by warm weight (power of two choices, Envoy's
// least_request), as no exact pick is cheap there; Options.Choices turns
// that variant on at every size.
//
// A call that fails fast is charged as if it still ran: each failure of a
// provider's current run (the failures that count for outlier ejection)
// adds one to its calls in flight until it succeeds again or
// Options.FailureWindow (10 s) passes, so a provider that fails fast never
// looks less busy than while its calls ran.
//
// The calls in flight are counted by the lbactive filter (package filter):
// without it the balancer degrades to weighted random, and says so in one
// WARN line per service and method.
//
// The name stays apart from dubbo-go's own "leastactive". Reasoning and
// figures: DESIGN.md beside this file.
package fewestactive
