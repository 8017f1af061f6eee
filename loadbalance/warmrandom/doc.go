// Package warmrandom is the warmrandom balancer: weighted random selection
// over warm weights, each provider picked with a probability proportional
// to its weight, reduced while it warms up (package warmup). The pick is
// O(1) from an alias table rebuilt only when the providers or their warm
// weights change.
//
// The name stays apart from dubbo-go's own "random". Design notes:
// DESIGN.md beside this file.
package warmrandom
