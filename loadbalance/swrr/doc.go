// Package swrr is nginx's smooth weighted round robin over warm weights:
// providers are picked in a fixed, evenly interleaved order in which each
// appears in proportion to its weight (weights 5, 1, 1 give the cycle
// A A B A C A A). The cycle is built when the providers or their warm
// weights change; a pick is one atomic increment. The sequence is nginx's
// exactly, at every number of providers. A weight change keeps the order
// smooth (carryCycle), each consumer starts at a random position,
// and state is kept per (service key, method). A provider of weight 0 is
// never picked unless every provider has weight 0; a failover retry is
// answered by a weighted random pick within its subset.
//
// How and why, with measured figures: DESIGN.md beside this file.
package swrr
