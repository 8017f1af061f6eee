// Package fewestactive is the fewestactive balancer (Dubbo's least-active):
// each call goes to the provider with the fewest calls in flight for its
// method, ties drawn in proportion to warm weight without dubbo-go's bias; a
// provider of weight 0 gets no call unless all have weight 0. Above
// Options.ScanUpTo providers (256) a pick takes the fewer in flight of two
// drawn by warm weight (Envoy's least_request). A failure of a provider's
// current run counts as a call in flight for Options.FailureWindow (10 s),
// so that a provider that fails fast never looks less busy. The calls are
// counted by the lbactive filter: without it the balancer is weighted
// random, and says so in one WARN line. Design notes: DESIGN.md.
package fewestactive
