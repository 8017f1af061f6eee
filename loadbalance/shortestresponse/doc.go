// Package shortestresponse is Dubbo Java's ShortestResponseLoadBalance
// (3.3.6) under its name, "shortestresponse", so that a Java provider that
// names it works in a Go consumer: each pick goes to the provider with the
// shortest estimated response, the mean elapsed time of its successful
// calls times its calls in flight + 1, ties drawn in proportion to warm
// weight. The lbactive filter counts the calls, as Java's RpcStatus; the
// slide window is shortestresponse.slidePeriod long (default 30 s).
//
// It departs from Java where Java misleads (DESIGN.md): the mean is of the
// provider's newest completions when 16 of them succeeded, of the window
// otherwise; a provider without a success in the window is estimated with
// the smallest mean known (or its own previous one), so that it is probed,
// never flooded; each failure of a recent run counts as a call in flight;
// means are in nanoseconds, read at most every Options.Refresh. Select
// allocates nothing and takes no lock.
package shortestresponse
