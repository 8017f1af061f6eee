// Package lalb is the locality-aware balancer of brpc ("la"): each provider
// is picked in proportion to a weight, its throughput over its latency,
// computed from the window of recent completions the lbactive
// filter records, lowered while its calls in flight age (a hanging
// provider loses its traffic before the first timeout), with errors
// charged and a minimum share so that every provider is still probed.
// Picks are O(log N) from a tree of weights refreshed on the pick side;
// new providers start at the average weight and follow
// their warmup.
//
// Options configure the balancer; its Tuning field, of type Tuning, tunes
// the weight function. It
// needs the lbactive filter and says so in one WARN line per service and
// method when it is missing. Reasoning, brpc's experiment and measured
// figures: DESIGN.md beside this file.
package lalb
